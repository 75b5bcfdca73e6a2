// The Roofline panel in real TensorBoard (tests/test_browser_roofline.py asserts): the chart draws its points, a hover
// over a point shows that op shape's box, a click selects its first kernel on the lanes (the link's `sel`, the
// Selection drawer) and "next" the second, the arrow keys and Enter do the same without a mouse, an area in the link
// asks for that window's ops, and the drawing's own time at the answer's size. The expected point under the pointer is computed in the page by the panel's own
// model (static/model/roofline.js) from the same answer, so the check aims where the chart draws.
// Usage: node roofline.mjs BASE_URL OUT_DIR RUN WIDTH HEIGHT THEME [ANSWER_JSON]; ANSWER_JSON, when given, is served
// for every `tables?by=roofline` request (a fixture of many points, for the drawing time and the readability).
import { mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

import { contrastFaults } from './laptop.mjs';
import { launch, openPlugin, waitReady } from './lib.mjs';

const [base, outDir, run, width, height, theme, answerFile] = process.argv.slice(2);
mkdirSync(outDir, { recursive: true });
const tag = `${answerFile ? 'fixture' : run.replace(/\W+/g, '_')}-${width}x${height}-${theme}`;
const shot = (name) => path.join(outDir, `roofline-${name}-${tag}.png`);

const selOf = (page) => {
  const part = new URL(page.url()).hash.split('&').find((p) => p.startsWith('ks='));
  return new URLSearchParams(part ? decodeURIComponent(part.slice(3)) : '').get('sel');
};

async function until(predicate, timeoutMs, stepMs = 100) {
  const deadline = Date.now() + timeoutMs;
  while (!(await predicate())) {
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, stepMs));
  }
  return true;
}

/** The answer the panel drew (asked again with its parameters) laid out by the panel's model at the canvas's size. */
async function chartInPage(frame) {
  return frame.evaluate(async () => {
    const model = await import(new URL('static/model/roofline.js', document.baseURI).href);
    const canvas = document.querySelector('.ks-roofline-canvas');
    const rect = canvas.getBoundingClientRect();
    const q = new URLSearchParams(decodeURIComponent((top.location.hash.split('&').find((p) => p.startsWith('ks=')) ?? 'ks=').slice(3)));
    const runs = await (await fetch('runs')).json();
    const spans = runs.runs.flatMap((r) => r.workers.flatMap((w) => w.spans.map((s) => ({ ...s, run: r.name }))));
    const span = spans.find((s) => s.id === q.get('span')) ?? spans.find((s) => s.run === q.get('run'));
    const body = await (await fetch(`tables?span=${encodeURIComponent(span.id)}&by=roofline&limit=500`)).json();
    const chart = model.layoutChart(body.rows, body.totals?.roofs, rect.width, rect.height);
    const pick = (k) => {
      const p = chart.placed[k];
      // the point the pointer gets at this centre (a smaller one may lie on top)
      const hit = model.hitPoint(chart, p.xCss, p.yCss);
      const row = body.rows[chart.placed[hit].index];
      const index = chart.placed[hit].index;
      const own = body.rows[p.index];
      return { index, xCss: p.xCss, yCss: p.yCss, name: row.name, dims: row.input_dims, kernelRows: row.kernel_rows, kernels: row.kernels.map((x) => x.name),
        ownName: own.name, ownKernelRows: own.kernel_rows };
    };
    // time of the drawing alone, the panel's own code on a canvas of the same size
    const render = await import(new URL('static/render/roofline.js', document.baseURI).href);
    const off = document.createElement('canvas');
    off.width = rect.width;
    off.height = rect.height;
    const ctx = off.getContext('2d');
    const t0 = performance.now();
    const runsN = 20;
    for (let i = 0; i < runsN; i++) {
      ctx.clearRect(0, 0, rect.width, rect.height);
      render.drawRoofline(ctx, model.layoutChart(body.rows, body.totals?.roofs, rect.width, rect.height), { hover: 0, selected: 1 });
    }
    const drawMs = (performance.now() - t0) / runsN;
    return { left: rect.left, top: rect.top, width: rect.width, height: rect.height, count: chart.placed.length, roofs: chart.roofs, durationUs: span.duration_us,
      largest: chart.placed.length ? pick(0) : null, drawMs, rows: body.rows.length, totals: body.totals,
      note: document.querySelector('.ks-roofline-note')?.textContent ?? '', legend: [...document.querySelectorAll('.ks-roofline-legend [data-category]')].map((e) => e.dataset.category) };
  });
}

/** Pixels of the chart whose colour is saturated: points, not the grey axes, grid and roofs. */
async function saturatedPixels(frame) {
  return frame.evaluate(() => {
    const c = document.querySelector('.ks-roofline-canvas');
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    let n = 0;
    for (let i = 0; i < d.length; i += 4) if (Math.max(d[i], d[i + 1], d[i + 2]) - Math.min(d[i], d[i + 1], d[i + 2]) > 40) n++;
    return n;
  });
}

const tooltip = (frame) => frame.evaluate(() => {
  const t = document.querySelector('.ks-tooltip:not([hidden])');
  if (!t) return null;
  const r = t.getBoundingClientRect();
  return { title: t.querySelector('.ks-tooltip-title')?.textContent ?? '', labels: [...t.querySelectorAll('.ks-tooltip-row span')].map((s) => s.textContent),
    inside: r.left >= 0 && r.top >= 0 && r.right <= innerWidth && r.bottom <= innerHeight };
});

async function main() {
  const browser = await launch();
  const answer = answerFile ? readFileSync(answerFile, 'utf8') : null;
  const setUp = async (page) => {
    if (answer) await page.route(/\/tables\?.*by=roofline/, (route) => route.fulfill({ status: 200, contentType: 'application/json', body: answer }));
  };
  const { page, frame, errors, httpErrors, requests } = await openPlugin(browser, base, `&ks=${encodeURIComponent(new URLSearchParams({ run }).toString())}`,
    { width: Number(width), height: Number(height) }, 1, setUp);
  try {
    await waitReady(frame, 120000);
    if (theme === 'dark') {
      await page.evaluate(() => document.body.classList.add('dark-mode'));
      await until(() => frame.evaluate(() => document.body.classList.contains('ks-dark')), 5000);
    }
    const drawn = await until(() => frame.evaluate(() => Number(document.querySelector('.ks-roofline-canvas')?.dataset.points ?? 0) > 0), 60000);
    const section = await frame.$('.ks-roofline');
    await section.scrollIntoViewIfNeeded();
    await page.waitForTimeout(400);
    await section.screenshot({ path: shot('panel') }); // scrolls the section into view: the geometry is read after it
    await page.screenshot({ path: shot('view') });
    const frameBox = await (await frame.frameElement()).boundingBox();
    const chart = await chartInPage(frame);
    const pixels = await saturatedPixels(frame);
    const result = { errors, httpErrors, drawn, pixels, chart, shot: shot('panel') };
    if (!chart.largest) return result;
    const at = { x: frameBox.x + chart.left + chart.largest.xCss, y: frameBox.y + chart.top + chart.largest.yCss };
    await page.mouse.move(at.x, at.y);
    await until(async () => (await tooltip(frame)) !== null, 3000);
    result.hover = await tooltip(frame);
    result.hoverIndex = await frame.evaluate(() => document.querySelector('.ks-roofline-canvas').dataset.hover);
    await page.screenshot({ path: shot('hover') });
    if (answer) return { ...result, contrast: await contrastFaults(frame) }; // a fixture's kernel rows are no events of the span
    await page.mouse.click(at.x, at.y);
    await until(async () => selOf(page) !== null, 10000);
    result.selAfterClick = selOf(page);
    result.drawerName = await frame.waitForSelector('.ks-details-name', { timeout: 15000 }).then((h) => h.textContent(), () => null);
    result.picked = await frame.evaluate(() => document.querySelector('.ks-roofline-picked-count')?.textContent ?? null);
    result.pickedName = await frame.evaluate(() => document.querySelector('.ks-roofline-picked-name')?.textContent ?? null);
    result.lanesInView = await frame.evaluate(() => { const r = document.querySelector('.ks-lanes').getBoundingClientRect(); return r.bottom > 0 && r.top < innerHeight; });
    if (chart.largest.kernelRows.length > 1) {
      await section.scrollIntoViewIfNeeded();
      await frame.click('.ks-roofline-next');
      await until(async () => selOf(page) === String(chart.largest.kernelRows[1]), 10000);
      result.selAfterNext = selOf(page);
    }
    // keyboard: Escape clears, the first arrow focuses the point with the most kernel time, Enter selects it
    await frame.focus('.ks-roofline-canvas');
    await page.keyboard.press('Escape');
    await until(async () => selOf(page) === null, 5000);
    result.selAfterEscape = selOf(page);
    await page.keyboard.press('ArrowRight');
    result.keyHover = await tooltip(frame);
    await page.keyboard.press('Enter');
    await until(async () => selOf(page) !== null, 10000);
    result.selAfterEnter = selOf(page);
    result.contrast = await contrastFaults(frame);
    // a link with an area (as Shift+drag makes one): the chart asks for that window only and says so
    const area = `0,${Math.round(chart.durationUs / 2)}`;
    await page.evaluate((suffix) => { location.hash = `#kinetoscope${suffix}`; }, `&ks=${encodeURIComponent(new URLSearchParams({ run, a: area }).toString())}`);
    await until(() => frame.evaluate(() => /Selected area/.test(document.querySelector('.ks-roofline-scope')?.textContent ?? '')), 10000);
    await until(async () => requests.some((u) => u.includes('by=roofline') && u.includes('start_us=')), 10000);
    await page.waitForTimeout(500);
    result.area = { scope: await frame.textContent('.ks-roofline-scope'), asked: requests.some((u) => u.includes('by=roofline') && u.includes('start_us=0')),
      points: Number(await frame.evaluate(() => document.querySelector('.ks-roofline-canvas').dataset.points ?? -1)) };
    return result;
  } finally {
    await browser.close();
  }
}

main().then((r) => console.log(JSON.stringify(r)), (err) => { console.error(err); process.exit(1); });
