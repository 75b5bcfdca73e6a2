// @ts-check
/**
 * Entry point. TensorBoard's plugin_entry.html loads this file as `./index.js` under
 * `<base href="plugin/kinetoscope/">` and calls `render()`; every other module is served by the
 * plugin's `/static/*` route, hence `./static/...` (see frontend/README.md).
 *
 * The app comes as one file, `static/bundle.js`: the plugin joins the modules ui/app.js imports, directly or
 * not, into one module (server/bundle.py), so the browser makes one request instead of 82, one at a time on
 * TensorBoard's server (0.26 s on 127.0.0.1 before the tab could ask for data, more over a network). Should the
 * bundle fail, the modules load one by one.
 */
export async function render() {
  // The listing the app asks for first, asked for now: its answer comes while the app's code loads, one round trip
  // less before the first lanes (null if it fails: the app asks again and says why).
  const runs = fetch('runs').then((r) => (r.ok ? r.json() : null)).catch(() => null);
  /** @type {{start: (root: HTMLElement, early?: {runs?: Promise<any>}) => Promise<void>}} */
  let app;
  try {
    // @ts-ignore -- a served path: the plugin's bundle of ui/app.js and what it imports
    app = await import('./static/bundle.js');
  } catch (err) {
    console.error('Kinetoscope: the bundled frontend did not load; loading its modules one by one.', err);
    // @ts-ignore -- a served path: the plugin's /static/* route maps it onto frontend/ui/app.js
    app = await import('./static/ui/app.js');
  }
  await app.start(document.body, { runs });
}
