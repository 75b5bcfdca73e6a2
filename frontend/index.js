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

// Every module ui/app.js reaches, by folder (`''`: frontend/ itself), asked for at once (`modulepreload`) when
// TensorBoard loads this file: left to the imports, the browser learns of each of the graph's 6 levels only once the
// level above has arrived, a round trip each. On 127.0.0.1, where TensorBoard's server takes the time (82 answers of
// ~18 ms on 6 connections), the 82 modules took 0.28 s and take 0.26 s; over a network it saves 4-5 round trips.
// A preload only fetches and parses; nothing runs until `render` imports ui/app.js.
// tests/test_plugin_routes.py checks the list against the imports.
const MODULES = {
  '': ['api', 'loading'],
  'model': ['args', 'colors', 'compare', 'compare_lanes', 'counters', 'critical_path', 'devices', 'extra_tables',
    'flows', 'format', 'gaps', 'gpu_summary', 'health', 'hit', 'lanes', 'lanes_hit', 'layout', 'lod', 'memory',
    'pan_zoom', 'placement', 'popup', 'ranks', 'runs', 'savings', 'scale', 'steps', 'tables', 'urlstate', 'verdict'],
  'render': ['axis', 'canvas_view', 'compare_lanes', 'counters', 'cpu_lane', 'critical_path', 'flows', 'frame',
    'gaps', 'gpu_lane', 'gutter', 'histogram', 'lanes', 'memory', 'rows', 'steps'],
  'ui': ['app', 'compare_lanes', 'compare_lanes_input', 'compare_panel', 'compare_strip', 'culprits', 'details',
    'dom', 'full_name', 'gap_table', 'gpu_summary', 'header', 'health_note', 'lanes_input', 'lanes_panel',
    'lanes_view', 'launch_panel', 'memory_panel', 'pan_zoom_input', 'ranks_panel', 'run_verdict', 'runs_refresh',
    'selection_drawer', 'share', 'status', 'step_table', 'store', 'tables_panel', 'theme', 'tooltip', 'urlsync',
    'verdict_view', 'whatif_panel', 'windowed'],
};
for (const [folder, names] of Object.entries(MODULES)) {
  for (const name of names) {
    const link = document.createElement('link');
    link.rel = 'modulepreload';
    link.href = new URL(`./static/${folder ? `${folder}/` : ''}${name}.js`, import.meta.url).href;
    document.head.appendChild(link);
  }
}
