// @ts-check
/**
 * Entry point. TensorBoard's plugin_entry.html loads this file as `./index.js` under
 * `<base href="plugin/kinetoscope/">` and calls `render()`; every other module is served by the
 * plugin's `/static/*` route, hence `./static/...` (see frontend/README.md).
 */
export async function render() {
  // @ts-ignore -- a served path: the plugin's /static/* route maps it onto frontend/ui/app.js
  const { start } = await import('./static/ui/app.js');
  await start(document.body);
}
