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
  /** @type {{start: (root: HTMLElement) => Promise<void>}} */
  let app;
  try {
    // @ts-ignore -- a served path: the plugin's bundle of ui/app.js and what it imports
    app = await import('./static/bundle.js');
  } catch (err) {
    console.error('Kinetoscope: the bundled frontend did not load; loading its modules one by one.', err);
    // @ts-ignore -- a served path: the plugin's /static/* route maps it onto frontend/ui/app.js
    app = await import('./static/ui/app.js');
  }
  await app.start(document.body);
}
