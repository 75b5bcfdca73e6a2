// Time to first lanes: opens TensorBoard at the Kinetoscope tab and times, from the navigation, the
// moment the tab has drawn the lanes of its default span (the canvas publishes its lane layout once
// lanes data arrived and was laid out), and the moment TensorBoard's own page showed the plugin frame.
// Also the moment the lanes carry the analyses' overlays (`analysedMs`: the same as lanesMs when the first
// lanes came with them, later when they were drawn while the server still analysed; a frontend without the
// `data-analysed` marker counts as analysed at once).
// With PICK_RUN, once the default span's lanes are analysed it picks that run in the run menu and times, from the
// pick, the lanes of the new span drawn (`pickLanesMs`) and analysed (`pickAnalysedMs`). With `early` after it, the
// pick comes as soon as the tab shows, while the default span still loads (`statusAtPick` says how far it was).
// Usage: node bench_first_lanes.mjs BASE_URL [PICK_RUN [early]] -> prints one JSON line {pageMs, lanesMs, analysedMs,
// progress[, pickLanesMs, pickAnalysedMs, statusAtPick]}.
import { launch } from './lib.mjs';

const [base, pickRun, when] = process.argv.slice(2);
const early = when === 'early';
const browser = await launch();
try {
  const page = await browser.newPage({ viewport: { width: 1500, height: 1000 } });
  const t0 = Date.now();
  await page.goto(`${base}/#kinetoscope`);
  let pageMs = null;
  let lanesMs = null;
  let frame = null;
  const progress = [];
  for (;;) {
    frame = frame ?? page.frames().find((f) => f.url().includes('plugin_entry.html?name=kinetoscope'));
    if (frame) {
      const state = await frame.evaluate(() => {
        const c = document.querySelector('.ks-lanes-canvas');
        const header = document.querySelector('.ks-header');
        const lanes = c ? JSON.parse(c.dataset.layout || '[]').length : 0;
        return { header: Boolean(header), lanes, analysed: c?.dataset.analysed !== 'false',
          status: document.querySelector('.ks-status')?.textContent ?? '' };
      }).catch(() => null);
      if (state?.header && pageMs === null) pageMs = Date.now() - t0;
      if (state?.status && progress.at(-1)?.[1] !== state.status) progress.push([Date.now() - t0, state.status]);
      if (state && state.lanes > 0 && lanesMs === null) lanesMs = Date.now() - t0;
      if (state && state.lanes > 0 && state.analysed) break;
      // picking early: as soon as the run menu lists the run to pick (the default span is still loading)
      if (early && state?.header && await frame.$(`select[aria-label="run"] option[value="${pickRun}"]`)) break;
    }
    if (Date.now() - t0 > 600000) throw new Error('no lanes within 600 s');
    await new Promise((r) => setTimeout(r, 20));
  }
  const out = { pageMs, lanesMs, analysedMs: Date.now() - t0, progress };
  if (pickRun) {
    const spanOf = () => frame.evaluate(() => {
      const c = document.querySelector('.ks-lanes-canvas');
      return { span: c?.dataset.span ?? '', lanes: c ? JSON.parse(c.dataset.layout || '[]').length : 0,
        analysed: c?.dataset.analysed === 'true' };
    });
    const before = (await spanOf()).span;
    out.statusAtPick = await frame.evaluate(() => document.querySelector('.ks-status')?.textContent ?? '');
    const t1 = Date.now();
    await frame.selectOption('select[aria-label="run"]', pickRun);
    for (;;) {
      const state = await spanOf().catch(() => null);
      if (state && state.span && state.span !== before && state.lanes > 0) {
        out.pickLanesMs = out.pickLanesMs ?? Date.now() - t1;
        if (state.analysed) break;
      }
      if (Date.now() - t1 > 600000) throw new Error('no lanes for the picked span within 600 s');
      await new Promise((r) => setTimeout(r, 20));
    }
    out.pickAnalysedMs = Date.now() - t1;
  }
  console.log(JSON.stringify(out));
} finally {
  await browser.close();
}
