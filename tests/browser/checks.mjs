// Browser checks of the Kinetoscope tab in real TensorBoard, one per subcommand; each prints one JSON
// line that tests/test_browser.py asserts on. Usage: node checks.mjs CHECK BASE_URL OUT_DIR [ARGS...]
import { appendFileSync, copyFileSync, mkdirSync, readFileSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';

import { compareFit, firstViews, laptopTour } from './laptop.mjs';
import { launch, openPlugin, pixels, waitReady } from './lib.mjs';

const XSS = '<img src=x onerror=alert(1)>';
/** The span's verdict (the run's, when shown, sits above it in `.ks-run-verdict`). */
const SPAN_BOUND = '.ks-span-verdict .ks-bound';
/** The rows of the gap table (not those of the top-culprit lists folded above it). */
const GAP_ROWS = '.ks-gaps tr[data-start-us]';
const [check, base, outDir, ...args] = process.argv.slice(2);
mkdirSync(outDir, { recursive: true });
const shot = (name) => path.join(outDir, `${name}.png`);

/** `#kinetoscope&ks=...` state of a page, as {run, worker, span, t: [t0, t1] | null, sel}. */
function urlState(page) {
  const part = new URL(page.url()).hash.split('&').find((p) => p.startsWith('ks='));
  const q = new URLSearchParams(part ? decodeURIComponent(part.slice(3)) : '');
  const t = q.get('t') ? q.get('t').split(',').map(Number) : null;
  return { run: q.get('run'), worker: q.get('worker'), span: q.get('span'), t, sel: q.get('sel') };
}

const ksSuffix = (state) => `&ks=${encodeURIComponent(new URLSearchParams(state).toString())}`;

async function waitWindow(page, predicate, timeoutMs = 5000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const s = urlState(page);
    if (predicate(s.t)) return s.t;
    if (Date.now() > deadline) return s.t;
    await page.waitForTimeout(50);
  }
}

/** Lane geometry of the lanes canvas; `left`/`top` are in page coordinates (for page.mouse). */
async function geometry(frame) {
  const box = await (await frame.frameElement()).boundingBox();
  const g = await frame.evaluate(async () => {
    const layout = await import(new URL('static/model/layout.js', document.baseURI).href);
    const canvas = document.querySelector('.ks-lanes-canvas');
    const rect = canvas.getBoundingClientRect();
    return { left: rect.left, top: rect.top, width: rect.width, height: rect.height, gutter: layout.GUTTER_W, right: layout.RIGHT_PAD,
      axisH: layout.AXIS_H, stepH: layout.STEP_H, rowH: layout.ROW_H, lanePad: layout.LANE_PAD, lanes: JSON.parse(canvas.dataset.layout || '[]') };
  });
  return { ...g, left: g.left + box.x, top: g.top + box.y };
}

/** Pixels of a canvas rectangle whose colour is saturated (events, not the grey background or grid). */
async function saturated(frame, x0, y0, x1, y1, selector = '.ks-lanes-canvas') {
  return frame.evaluate(([a, b, c, d, sel]) => {
    const canvas = document.querySelector(sel);
    const dpr = canvas.width / canvas.getBoundingClientRect().width;
    const img = canvas.getContext('2d').getImageData(Math.round(a * dpr), Math.round(b * dpr), Math.round((c - a) * dpr), Math.round((d - b) * dpr));
    let n = 0;
    for (let i = 0; i < img.data.length; i += 4) {
      const r = img.data[i], g = img.data[i + 1], bl = img.data[i + 2];
      if (Math.max(r, g, bl) - Math.min(r, g, bl) > 40) n++;
    }
    return n;
  }, [x0, y0, x1, y1, selector]);
}

async function smoke(browser, run) {
  const { page, frame, errors, dialogs, httpErrors } = await openPlugin(browser, base, ksSuffix({ run }));
  await waitReady(frame);
  const g = await geometry(frame);
  const sum = async (kind) => {
    let n = 0;
    for (const lane of g.lanes.filter((l) => l.kind === kind)) n += await saturated(frame, g.gutter, lane.yCss, g.width - g.right, lane.yCss + lane.hCss);
    return n;
  };
  const result = { errors, httpErrors, dialogs, imgs: await frame.$$eval('img', (els) => els.length), cpuPixels: await sum('cpu'), gpuPixels: await sum('gpu'), kinds: g.lanes.map((l) => l.kind),
    verdict: await frame.textContent(SPAN_BOUND), sections: await frame.$$eval('.ks-section h3', (hs) => hs.map((h) => h.textContent)) };
  await page.screenshot({ path: shot(`overview-${run.replace(/\W+/g, '_')}`) });
  await page.screenshot({ path: shot(`page-${run.replace(/\W+/g, '_')}`), fullPage: true });
  return result;
}

async function stalls(browser, run) {
  const { page, frame, errors, httpErrors } = await openPlugin(browser, base, ksSuffix({ run }));
  await waitReady(frame);
  const spans = await frame.evaluate(async (name) => {
    const body = await (await fetch('runs')).json();
    return body.runs.find((r) => r.name === name).workers.flatMap((w) => w.spans.map((s) => s.id));
  }, run);
  const out = [];
  for (const id of spans) {
    await frame.selectOption('select[aria-label=span]', id);
    await frame.waitForFunction((sid) => document.querySelector('select[aria-label=span]').value === sid, id);
    await waitReady(frame);
    await frame.waitForSelector('.ks-steps tr[data-stalled]');
    const rows = await frame.$$eval('.ks-steps tr[data-stalled]', (trs) => trs.map((tr) => tr.dataset.stalled === 'true'));
    const g = await geometry(frame);
    const steps = await frame.evaluate(async (sid) => {
      const [st, su] = await Promise.all([fetch(`stalls?span=${sid}`), fetch(`summary?span=${sid}`)].map(async (p) => (await p).json()));
      // Sample at 3/4 of each step, near the top of the bar: clear of the white label text.
      return { steps: st.steps.map((s) => [s.start_us + s.dur_us * 0.75, s.stalled]), duration: su.duration_us };
    }, id);
    const plotW = g.width - g.gutter - g.right;
    const points = steps.steps.map(([t]) => [g.gutter + (t / steps.duration) * plotW, g.axisH + 2.5]);
    const colors = await pixels(frame, '.ks-lanes-canvas', points);
    out.push({ span: id, stalledRows: rows, stepBarRed: colors.map(([r, gg, b]) => r > 180 && gg < 90 && b < 90), apiStalled: steps.steps.map((s) => s[1]) });
  }
  await page.screenshot({ path: shot(`stalls-${run.replace(/\W+/g, '_')}`) });
  return { errors, httpErrors, spans: out };
}

async function interact(browser, run) {
  const { page, frame, errors, httpErrors } = await openPlugin(browser, base, ksSuffix({ run }));
  await waitReady(frame);
  const g = await geometry(frame);
  const duration = await frame.evaluate(async () => {
    const id = document.querySelector('select[aria-label=span]').value;
    return (await (await fetch(`summary?span=${id}`)).json()).duration_us;
  });
  const cx = g.left + g.gutter + (g.width - g.gutter) * 0.4;
  const cy = g.top + g.lanes[0].yCss + 10;
  await page.mouse.move(cx, cy);
  for (let i = 0; i < 4; i++) await page.mouse.wheel(0, -250);
  const afterWheel = await waitWindow(page, (t) => t && t[1] - t[0] < duration * 0.5);
  await page.waitForTimeout(600);
  await page.screenshot({ path: shot('zoomed') });
  await page.keyboard.press('w');
  const afterW = await waitWindow(page, (t) => t && t[1] - t[0] < (afterWheel[1] - afterWheel[0]) * 0.9);
  await page.keyboard.press('a');
  const afterA = await waitWindow(page, (t) => t && t[0] < afterW[0] - 1e-6);
  await page.mouse.move(cx, cy);
  await page.mouse.down();
  await page.mouse.move(cx - 200, cy, { steps: 8 });
  await page.mouse.up();
  const afterDrag = await waitWindow(page, (t) => t && t[0] > afterA[0] + 1e-6);
  await page.keyboard.press('0');
  const afterReset = await waitWindow(page, (t) => t === null);
  // Double-click the first step on the step bar: the window becomes that step (plus 10% each side).
  await page.waitForTimeout(400);
  await page.mouse.dblclick(g.left + g.gutter + 20, g.top + g.axisH + g.stepH / 2);
  const afterDbl = await waitWindow(page, (t) => t !== null);
  // A click on the first lane's label collapses it to its top row; a second click expands it.
  const label = [g.left + 40, g.top + g.lanes[0].yCss + 8];
  await page.mouse.click(...label);
  const collapsedH = (await geometry(frame)).lanes[0].hCss;
  await page.mouse.click(...label);
  const expandedH = (await geometry(frame)).lanes[0].hCss;
  return { errors, httpErrors, duration, afterWheel, afterW, afterA, afterDrag, afterReset, afterDbl,
    laneH: [g.lanes[0].hCss, collapsedH, expandedH], rowH: g.rowH, lanePad: g.lanePad };
}

/**
 * A graph-replay trace zoomed to [t0, t1] (µs): the lane of the ops its replays ran is drawn right above its stream,
 * and hovering its first bar names the op, `replayed_op` and the lane of the reference.
 */
async function replayed(browser, run, t0, t1) {
  const { page, frame, errors, httpErrors } = await openPlugin(browser, base, ksSuffix({ run, t: `${t0},${t1}` }));
  await waitReady(frame);
  const ids = await frame.evaluate(async ([a, b]) => {
    const span = document.querySelector('select[aria-label=span]').value;
    const body = await (await fetch(`lanes?span=${span}&start_us=${a}&end_us=${b}&width_px=800`)).json();
    const at = body.lanes.findIndex((l) => l.replayed_ops);
    return at < 0 ? null : { replayed: body.lanes[at].id, stream: body.lanes[at + 1]?.id };
  }, [t0, t1]);
  let g = await geometry(frame);
  for (let i = 0; i < 40 && ids && !g.lanes.some((l) => l.laneId === ids.replayed); i++) {
    await page.waitForTimeout(250);
    g = await geometry(frame);
  }
  const order = g.lanes.map((l) => l.laneId);
  const lane = ids && g.lanes.find((l) => l.laneId === ids.replayed);
  let tooltip = null;
  if (lane) {
    const y = lane.yCss + g.lanePad / 2 + g.rowH / 2;
    const xs = [];
    for (let x = g.gutter + 2; x < g.width - g.right; x += 2) xs.push([x, y]);
    const colors = await pixels(frame, '.ks-lanes-canvas', xs);
    const hitAt = xs.findIndex((_, i) => { const [r, gg, b] = colors[i]; return Math.max(r, gg, b) - Math.min(r, gg, b) > 60; });
    if (hitAt >= 0) {
      await page.mouse.move(g.left + xs[hitAt][0] + 2, g.top + y);
      await frame.waitForSelector('.ks-tooltip:not([hidden])', { timeout: 5000 }).catch(() => null);
      tooltip = await frame.$eval('.ks-tooltip:not([hidden])', (e) => e.textContent).catch(() => null);
    }
  }
  await page.screenshot({ path: shot('replayed-ops') });
  return { errors, httpErrors, ids, drawn: Boolean(lane), above: lane ? order.indexOf(ids.stream) === order.indexOf(ids.replayed) + 1 : false,
    tooltip, pixels: lane ? await saturated(frame, g.gutter, lane.yCss, g.width - g.right, lane.yCss + lane.hCss) : 0 };
}

async function gapRow(browser, run) {
  const { page, frame, errors, httpErrors } = await openPlugin(browser, base, ksSuffix({ run }));
  await waitReady(frame);
  await frame.waitForSelector(GAP_ROWS);
  const row = await frame.$(`${GAP_ROWS}:nth-child(3)`);
  const gap = await row.evaluate((tr) => [Number(tr.dataset.startUs), Number(tr.dataset.durUs), tr.dataset.cause]);
  await row.click();
  const win = await waitWindow(page, (t) => t !== null);
  await page.waitForTimeout(800);
  await page.screenshot({ path: shot('gap-zoom') });
  return { errors, httpErrors, gap, window: win, active: await frame.$$eval('.ks-gaps tr.ks-active', (trs) => trs.length) };
}

/**
 * Where to click the first event drawn in the top row of the first lane of `kind` ('gpu', 'cpu'), in page pixels
 * (the first saturated pixel along the row, from the left), or null when the row shows none.
 */
async function firstEventOn(frame, g, kind) {
  const lane = g.lanes.find((l) => l.kind === kind);
  const y = lane.yCss + g.lanePad / 2 + g.rowH / 2;
  const xs = [];
  for (let x = g.gutter + 2; x < g.width - g.right; x += 3) xs.push([x, y]);
  const colors = await pixels(frame, '.ks-lanes-canvas', xs);
  const hitAt = xs.findIndex((_, i) => { const [r, gg, b] = colors[i]; return Math.max(r, gg, b) - Math.min(r, gg, b) > 60; });
  return hitAt < 0 ? null : { x: g.left + xs[hitAt][0] + 1, y: g.top + y };
}

/**
 * Clicks the first kernel drawn in the GPU lane of a zoomed window, then reopens the link. The run verdict's
 * answers come `slowMs` late (a busy server), so the page must not move under the pointer after waitReady:
 * `moved` is how far the lanes moved down between reading where to click and the run verdict shown.
 */
async function selectAndShare(browser, run, t0, t1, slowMs = 0) {
  const slowRunVerdict = (page) => page.route(/\/verdict\?run=/, async (route) => {
    await new Promise((resolve) => setTimeout(resolve, slowMs));
    await route.continue();
  });
  const { page, frame, errors, httpErrors } = await openPlugin(browser, base, ksSuffix({ run, t: `${t0},${t1}` }), undefined, undefined, slowRunVerdict);
  await waitReady(frame);
  const g = await geometry(frame);
  const hit = await firstEventOn(frame, g, 'gpu');
  if (!hit) return { errors, httpErrors, clicked: false };
  await page.mouse.click(hit.x, hit.y);
  await frame.waitForSelector('.ks-details-name', { timeout: 15000 });
  await frame.waitForSelector('.ks-run-verdict', { timeout: 15000 });
  const moved = (await geometry(frame)).top - g.top;
  await frame.waitForSelector('.ks-offset', { timeout: 5000 }).catch(() => null);
  const name = await frame.textContent('.ks-details-name');
  const offset = await frame.$eval('.ks-offset', (e) => e.textContent).catch(() => null);
  await frame.waitForSelector('.ks-args dt', { timeout: 15000 }).catch(() => null);
  const args = await frame.$$eval('.ks-args dt', (dts) => dts.map((d) => d.textContent)).catch(() => []);
  await page.waitForTimeout(500);
  const state = urlState(page);
  await page.screenshot({ path: shot('selection') });
  const exported = await exportBoth(page, frame);
  const link = page.url();
  const second = await browser.newPage({ viewport: { width: 1500, height: 1000 } });
  await second.goto(link);
  const frame2 = await (await import('./lib.mjs')).pluginFrame(second);
  await waitReady(frame2);
  await frame2.waitForSelector('.ks-details-name', { timeout: 15000 });
  await second.waitForTimeout(500);
  return { errors, httpErrors, clicked: true, moved, name, offset, args, state, exported, restored: { name: await frame2.textContent('.ks-details-name'), state: urlState(second) } };
}

/** Clicks both export buttons and reads what they download. */
async function exportBoth(page, frame) {
  const read = async (label) => {
    const [download] = await Promise.all([page.waitForEvent('download', { timeout: 30000 }), frame.click(`button:has-text("${label}")`)]);
    const file = path.join(outDir, `export-${download.suggestedFilename()}`);
    await download.saveAs(file);
    const raw = readFileSync(file);
    const text = download.suggestedFilename().endsWith('.gz') ? gunzipSync(raw).toString('utf8') : raw.toString('utf8');
    return { name: download.suggestedFilename(), text };
  };
  const trace = await read('Export window');
  const md = await read('Export summary');
  const events = JSON.parse(trace.text).traceEvents ?? [];
  return { traceName: trace.name, traceEvents: events.length, completeEvents: events.filter((e) => e.ph === 'X').length,
    mdName: md.name, mdHead: md.text.split('\n')[0], mdHasVerdict: md.text.includes('**Verdict:') };
}

async function xss(browser) {
  const { page, frame, errors, dialogs, httpErrors } = await openPlugin(browser, base, ksSuffix({ run: 'xss' }));
  await waitReady(frame);
  const g = await geometry(frame);
  const tooltips = [];
  for (const lane of g.lanes) {
    for (let f = 0.05; f < 1; f += 0.1) {
      await page.mouse.move(g.left + g.gutter + (g.width - g.gutter) * f, g.top + lane.yCss + g.lanePad / 2 + g.rowH / 2);
      await page.waitForTimeout(30);
      tooltips.push(await frame.$eval('.ks-tooltip:not([hidden])', (e) => e.textContent).catch(() => ''));
    }
  }
  const tooltip = tooltips.join('\n');
  await frame.waitForSelector(GAP_ROWS, { timeout: 10000 }).catch(() => null);
  await frame.waitForSelector('.ks-peaks .ks-chip', { timeout: 10000 }).catch(() => null);
  const text = await frame.evaluate(() => document.body.textContent);
  const options = await frame.$$eval('select option', (os) => os.map((o) => o.textContent));
  await page.screenshot({ path: shot('xss'), fullPage: true });
  const imgs = await frame.$$eval('img', (els) => els.length);
  const errorsBefore = [...errors];
  // A trace that failed to load is a message; the page keeps working and the next run loads. The
  // failure arrives as a `status` state, not a 422 answer, so the console stays clean here too.
  await frame.selectOption('select[aria-label=run]', 'broken');
  const brokenMessage = await frame.waitForSelector('.ks-verdict .ks-error', { timeout: 30000 }).then((e) => e.textContent());
  await frame.selectOption('select[aria-label=run]', 'xss');
  await waitReady(frame);
  return { errors: errorsBefore, brokenErrors: errors.slice(errorsBefore.length), httpErrors, dialogs, imgs, textHits: text.split(XSS).length - 1, optionHits: options.filter((o) => o.includes(XSS)).length,
    tooltipHasName: tooltip.includes(XSS), brokenMessage, recovered: await frame.textContent(SPAN_BOUND) };
}

/** The parts of a verdict block (`.ks-run-verdict` or `.ks-span-verdict`) as text. */
async function verdictParts(frame, selector) {
  return frame.$eval(selector, (block) => {
    const text = (sel) => block.querySelector(sel)?.textContent ?? null;
    return { bound: text('.ks-bound'), confidence: text('.ks-confidence'), share: text('.ks-share'), runnerUp: text('.ks-runner-up'),
      spans: text('.ks-run-spans'), label: text('.ks-verdict-label'), evidence: text('.ks-evidence'), asRun: text('.ks-as-run'),
      pending: block.dataset.pending ?? null, line: block.querySelector('.ks-verdict-line')?.textContent ?? null };
  }).catch(() => null);
}

/**
 * A run of several spans, opened cold: the run verdict shows above the span's once every span of
 * the run has loaded (pending 0), with confidence, runner-up and the span count; the new figures
 * (communication chip, gap causes, step columns, culprits) show too. Then RUN2 is picked: its run
 * verdict replaces the first, and its memory notes say what a byte-delta trace cannot claim.
 */
async function runVerdict(browser, run, run2) {
  const { page, frame, errors, httpErrors, requests } = await openPlugin(browser, base, ksSuffix({ run }));
  await waitReady(frame);
  const settled = (name) => frame.waitForFunction((r) => {
    const block = document.querySelector('.ks-run-verdict');
    return block && block.dataset.pending === '0' && document.querySelector('select[aria-label=run]').value === r;
  }, name, { timeout: 60000 }).then(() => true, () => false);
  const shown = await settled(run);
  const order = await frame.evaluate(() => {
    const a = document.querySelector('.ks-run-verdict');
    const b = document.querySelector('.ks-span-verdict');
    return Boolean(a && b && (a.compareDocumentPosition(b) & Node.DOCUMENT_POSITION_FOLLOWING));
  });
  await frame.waitForSelector('.ks-steps th', { timeout: 20000 }).catch(() => null);
  await frame.waitForSelector(GAP_ROWS, { timeout: 20000 }).catch(() => null);
  const figures = await frame.evaluate(() => ({
    comm: [...document.querySelectorAll('.ks-chip.ks-comm')].map((c) => c.textContent),
    legend: [...document.querySelectorAll('.ks-legend-item[data-cause]')].map((e) => e.dataset.cause),
    filters: [...document.querySelectorAll('.ks-filters input[data-cause]')].map((e) => e.dataset.cause),
    stepHeads: [...document.querySelectorAll('.ks-steps th')].map((th) => th.textContent.replace(/ [\u25b2\u25bc]$/, '')),
    culpritCells: [...document.querySelectorAll('.ks-gaps td.ks-culprit')].map((td) => td.textContent).filter(Boolean),
    culpritLists: [...document.querySelectorAll('.ks-culprit-group')].map((g) => g.dataset.list),
  }));
  const result = { run: await verdictParts(frame, '.ks-run-verdict'), span: await verdictParts(frame, '.ks-span-verdict'), shown, runAboveSpan: order, ...figures };
  await page.screenshot({ path: shot(`run-verdict-${run.replace(/\W+/g, '_')}`) });
  await frame.selectOption('select[aria-label=run]', run2);
  await waitReady(frame);
  const shown2 = await settled(run2);
  await frame.waitForSelector('.ks-memory-notes div', { timeout: 20000 }).catch(() => null);
  const memoryNotes = await frame.$$eval('.ks-memory-notes div', (ds) => ds.map((d) => d.textContent));
  await page.screenshot({ path: shot(`run-verdict-${run2.replace(/\W+/g, '_')}`), fullPage: true });
  return { errors, httpErrors, ...result, shown2, run2: await verdictParts(frame, '.ks-run-verdict'),
    runsAsked: requests.filter((u) => u.startsWith('verdict?')).map((u) => decodeURIComponent(u.slice('verdict?run='.length))), memoryNotes };
}

/** The server's listing as `run/file` -> span id (asked from node, not the page: it also prompts a rescan). */
async function listing() {
  const body = await (await fetch(`${base}/data/plugin/kinetoscope/runs`)).json();
  return new Map(body.runs.flatMap((r) => r.workers.flatMap((w) => w.spans.map((sp) => [`${r.name}/${sp.file}`, sp.id]))));
}

async function until(predicate, timeoutMs, stepMs = 250) {
  const deadline = Date.now() + timeoutMs;
  while (!(await predicate())) {
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, stepMs));
  }
  return true;
}

/** The first truthy value of `probe`, asked every `stepMs` until `timeoutMs` (null when none came). */
async function poll(probe, timeoutMs, stepMs = 250) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) return null;
    await new Promise((resolve) => setTimeout(resolve, stepMs));
  }
}

/** What must survive a listing refresh: the link state, the selectors, the drawn view, the page itself. */
async function onScreen(page, frame) {
  const view = await frame.evaluate(() => ({
    marker: window.ksMarker ?? null, canvasMarker: document.querySelector('.ks-lanes-canvas')?.dataset.marker ?? null,
    selects: [...document.querySelectorAll('select')].map((sel) => sel.value),
    options: Object.fromEntries([...document.querySelectorAll('select')].map((sel) => [sel.getAttribute('aria-label'), [...sel.options].map((o) => [o.value, o.textContent])])),
    verdict: document.querySelector('.ks-span-verdict .ks-bound')?.textContent ?? null,
    gapRows: document.querySelectorAll('.ks-gaps tr[data-start-us]').length,
    notice: document.querySelector('.ks-notice')?.textContent ?? '',
  }));
  return { ...view, state: urlState(page) };
}

/** TensorBoard's own way of hiding and showing a plugin tab's iframe (plugins_component hidePlugin/showPlugin). */
async function setPluginHidden(page, hidden) {
  await page.evaluate((hide) => {
    const frame = document.querySelector('iframe[src*="plugin_entry.html?name=kinetoscope"]');
    Object.assign(frame.style, hide ? { maxHeight: 0, overflow: 'hidden', visibility: 'hidden', position: 'absolute' }
      : { maxHeight: null, overflow: null, visibility: null, position: null });
  }, hidden);
}

/**
 * With the page open on `run` and zoomed: a new run and a new span of the shown worker are written
 * to LOGDIR (copies of SRC) and appear in the selectors on the next periodic refresh; then the shown
 * span's file is deleted, and showing the plugin tab again refreshes at once: the span stays on
 * screen, marked gone. Nothing on screen is reset meanwhile.
 */
async function live(browser, run, logdir, src) {
  const { page, frame, errors, httpErrors, requests } = await openPlugin(browser, base, ksSuffix({ run }));
  await waitReady(frame);
  const g = await geometry(frame);
  await page.mouse.move(g.left + g.gutter + (g.width - g.gutter) * 0.4, g.top + g.lanes[0].yCss + 10);
  for (let i = 0; i < 3; i++) await page.mouse.wheel(0, -250);
  await waitWindow(page, (t) => t !== null);
  await page.waitForTimeout(800);
  await frame.evaluate(() => {
    window.ksMarker = 'no reload';
    document.querySelector('.ks-lanes-canvas').dataset.marker = 'same canvas';
  });
  const before = await onScreen(page, frame);
  const shownId = before.state.span;
  const shownFile = [...(await listing())].find(([, id]) => id === shownId)[0];

  const incoming = path.join(logdir, '..', 'incoming.tmp');
  const add = (rel) => {
    mkdirSync(path.dirname(path.join(logdir, rel)), { recursive: true });
    copyFileSync(src, incoming);
    renameSync(incoming, path.join(logdir, rel)); // atomic, as Kineto writes
  };
  const newSpan = `${run}/${path.basename(src).replace(/\.(\d+)\./, (_, n) => `.${BigInt(n) + 10n ** 12n}.`)}`; // last of its worker
  add('fresh/worker0.1.pt.trace.json.gz');
  add(newSpan);
  const listed = await until(async () => { const l = await listing(); return l.has('fresh/worker0.1.pt.trace.json.gz') && l.has(newSpan); }, 30000);
  const listedAt = Date.now();
  const appeared = await frame.waitForFunction(() => [...document.querySelectorAll('select[aria-label=run] option')].some((o) => o.value === 'fresh'),
    null, { timeout: 25000 }).then(() => true, () => false);
  const appearedMs = Date.now() - listedAt;
  await page.waitForTimeout(300);
  const afterAdd = await onScreen(page, frame);
  await page.screenshot({ path: shot('live-added') });

  unlinkSync(path.join(logdir, shownFile));
  const unlisted = await until(async () => !(await listing()).has(shownFile), 30000);
  await setPluginHidden(page, true);
  const hiddenFrom = requests.length;
  await page.waitForTimeout(3500);
  const hiddenRequests = requests.slice(hiddenFrom);
  await setPluginHidden(page, false);
  const shownAt = Date.now();
  const gone = await frame.waitForSelector('.ks-notice .ks-warn', { timeout: 10000 }).then(() => true, () => false);
  const goneMs = Date.now() - shownAt;
  const afterGone = await onScreen(page, frame);
  await page.screenshot({ path: shot('live-gone') });
  return { errors, httpErrors, before, afterAdd, afterGone, listed, appeared, appearedMs, unlisted, hiddenRequests, gone, goneMs, newSpan };
}

/**
 * With the page open on `run`, the shown span's file is replaced (atomically, as Kineto writes) by a copy
 * of SRC, another trace: the tab reloads the span by itself and shows the new file's verdict.
 */
async function replaced(browser, run, logdir, src) {
  const { page, frame, errors, httpErrors } = await openPlugin(browser, base, ksSuffix({ run }));
  await waitReady(frame);
  await until(async () => urlState(page).span !== null, 10000, 50); // the link state follows the page shortly
  const verdictBefore = await frame.evaluate((sel) => document.querySelector(sel)?.textContent ?? null, SPAN_BOUND);
  const shownId = urlState(page).span;
  const shownFile = [...(await listing())].find(([, id]) => id === shownId)[0];
  const incoming = path.join(logdir, '..', 'replacement.tmp');
  copyFileSync(src, incoming);
  const replacedAt = Date.now();
  renameSync(incoming, path.join(logdir, shownFile));
  const followed = await frame.waitForFunction(([sel, old]) => {
    const now = document.querySelector(sel)?.textContent;
    return Boolean(now) && now !== old;
  }, [SPAN_BOUND, verdictBefore], { timeout: 30000 }).then(() => true, () => false);
  const followedMs = Date.now() - replacedAt;
  const verdictAfter = await frame.evaluate((sel) => document.querySelector(sel)?.textContent ?? null, SPAN_BOUND);
  await page.screenshot({ path: shot('replaced') });
  return { errors, httpErrors, verdictBefore, verdictAfter, followed, followedMs, sameSpan: urlState(page).span === shownId };
}

/**
 * A new run whose trace is half-written (as the profiler leaves it mid-write): the tab shows the load error.
 * Once the writer completes the file, the tab shows the trace by itself, without a reload.
 */
async function completed(browser, run, logdir, src) {
  const raw = readFileSync(src);
  const text = src.endsWith('.gz') ? gunzipSync(raw) : raw;
  const half = Math.floor(text.length / 2);
  const file = path.join(logdir, run, 'w.1.pt.trace.json');
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, text.subarray(0, half));
  await until(async () => [...(await listing()).keys()].some((k) => k.startsWith(`${run}/`)), 30000, 200);
  const { page, frame, errors, httpErrors } = await openPlugin(browser, base, ksSuffix({ run }));
  const halfShown = await frame.waitForSelector('.ks-msg.ks-error', { timeout: 30000 }).then(() => true, () => false);
  const halfError = await frame.evaluate(() => document.querySelector('.ks-msg.ks-error')?.textContent ?? '');
  await page.screenshot({ path: shot('half-written') });
  appendFileSync(file, text.subarray(half));
  const completedAt = Date.now();
  const followed = await frame.waitForSelector(SPAN_BOUND, { timeout: 30000 }).then(() => true, () => false);
  const followedMs = Date.now() - completedAt;
  const verdict = await frame.evaluate((sel) => document.querySelector(sel)?.textContent ?? null, SPAN_BOUND);
  const errorsLeft = await frame.evaluate(() => document.querySelectorAll('.ks-msg.ks-error').length);
  await page.screenshot({ path: shot('completed') });
  return { errors, httpErrors, halfShown, halfError, followed, followedMs, verdict, errorsLeft };
}

/**
 * A 4-rank run with a straggler: the Ranks panel names it first, lists every rank, draws the heatmap,
 * and clicking a rank's row opens that rank's trace.
 */
// A 2-D parallel job's process groups and clock offsets in the Ranks panel.
async function rankGroups(browser, run) {
  const { page, frame, errors, httpErrors } = await openPlugin(browser, base, ksSuffix({ run }));
  await waitReady(frame);
  const groups = await frame.waitForSelector('.ks-ranks .ks-groups tbody tr', { timeout: 30000 })
    .then(() => frame.$$eval('.ks-ranks .ks-groups tbody tr', (trs) => trs.map((tr) => [tr.dataset.group, tr.children[0].textContent])), () => []);
  const clocks = await frame.$eval('.ks-ranks .ks-clocks', (p) => p.textContent).catch(() => null);
  const faults = await layoutFaults(frame);
  await page.screenshot({ path: shot('rank-groups') });
  return { errors, httpErrors, groups, clocks, faults };
}

async function ranks(browser, run) {
  const { page, frame, errors, httpErrors } = await openPlugin(browser, base, ksSuffix({ run }));
  await waitReady(frame);
  const straggler = await frame.waitForSelector('.ks-ranks .ks-stragglers .ks-msg', { timeout: 30000 })
    .then((h) => h.textContent(), () => null);
  const saving = await frame.$eval('.ks-ranks .ks-straggler-saving', (p) => p.textContent).catch(() => null);
  const rows = await frame.$$eval('.ks-ranks > .ks-table-wrap:not(.ks-heat) tbody tr', (trs) => trs.map((tr) => tr.dataset.rank));
  const heatCells = await frame.$$eval('.ks-ranks .ks-heat td.ks-heat-cell', (tds) => tds.length);
  const workerBefore = urlState(page).worker ?? null;
  const groups = await frame.$$eval('.ks-ranks .ks-groups tbody tr', (trs) => trs.map((tr) => tr.dataset.group));
  const clocks = await frame.$eval('.ks-ranks .ks-clocks', (p) => p.textContent).catch(() => null);
  await frame.click('.ks-ranks > .ks-table-wrap:not(.ks-heat) tbody tr[data-rank="3"]');
  const opened = await until(async () => (await frame.$eval('select[aria-label="worker"]', (s) => s.value).catch(() => null)) === 'rank3', 15000, 100);
  await waitReady(frame);
  await page.screenshot({ path: shot('ranks') });
  return { errors, httpErrors, straggler, saving, rows, heatCells, workerBefore, opened, groups, clocks };
}

/**
 * Whatever overflows its box: sections, header and the page itself wider than they show, and sibling
 * panels of a grid that overlap. Tables may scroll inside their own `.ks-table-wrap`.
 */
// "What would it save?": the savings under the verdict and in the panel; Apply replays a saving's edits and draws
// the recorded and predicted step bars; the critical-path overlay fetches its segments for the lanes' window.
async function whatif(browser, run) {
  const { page, frame, errors, httpErrors } = await openPlugin(browser, base, ksSuffix({ run }));
  await waitReady(frame);
  const underVerdict = await frame.waitForSelector('.ks-saves .ks-save', { timeout: 30000 })
    .then(() => frame.$$eval('.ks-saves .ks-save', (items) => items.map((i) => i.textContent)), () => []);
  const rows = await frame.$$eval('[data-panel="whatif"] .ks-savings tbody tr', (trs) => trs.length);
  await frame.click('[data-panel="whatif"] .ks-savings tbody tr button');
  const bars = await frame.waitForSelector('[data-panel="whatif"] .ks-step-bar', { timeout: 30000 })
    .then(() => frame.$$eval('[data-panel="whatif"] .ks-step-bar', (b) => b.length), () => 0);
  const edits = await frame.$eval('[data-panel="whatif"] textarea', (t) => t.value);
  const summaryLine = await frame.$eval('.ks-whatif-result p', (p) => p.textContent).catch(() => null);
  const pathAsked = page.waitForResponse((r) => r.url().includes('/critical_path?'), { timeout: 30000 }).then((r) => r.status(), () => null);
  // the overlay draws on the lanes themselves (under the pinned header): saturated pixels there before and after
  const g = await geometry(frame);
  const headerH = await frame.evaluate(async () => (await import(new URL('static/model/layout.js', document.baseURI).href)).HEADER_H);
  const lanesPixels = (keep) => frame.evaluate(([a, b, c, d, k]) => {
    const canvas = document.querySelector('.ks-lanes-canvas');
    const dpr = canvas.width / canvas.getBoundingClientRect().width;
    const img = canvas.getContext('2d').getImageData(Math.round(a * dpr), Math.round(b * dpr), Math.round((c - a) * dpr), Math.round((d - b) * dpr));
    if (k) { window.__ksLanesBefore = img.data; return 0; }
    let n = 0;
    for (let i = 0; i < img.data.length; i += 4) if (img.data[i] !== window.__ksLanesBefore[i] || img.data[i + 2] !== window.__ksLanesBefore[i + 2]) n++;
    return n;
  }, [g.gutter, headerH, g.width - g.right, g.height, keep]);
  await lanesPixels(true);
  await frame.click('.ks-path-toggle input');
  const pathStatus = await pathAsked;
  await page.waitForTimeout(500);
  const lanesChanged = await lanesPixels(false);
  await page.screenshot({ path: shot('whatif') });
  // an event clicked on a CPU lane offers its own edits (host:NAME*0); one click replays it
  await frame.click('.ks-path-toggle input');  // the overlay off again: a click lands on an event, not on a segment
  await page.waitForTimeout(300);
  const hit = await firstEventOn(frame, await geometry(frame), 'cpu');
  let selectedEdits = [];
  let selectedAnswer = null;
  let selectedName = null;
  if (hit) {
    await page.mouse.click(hit.x, hit.y);
    selectedName = await frame.waitForSelector('.ks-details-name', { timeout: 15000 }).then((h) => h.textContent(), () => null);
    selectedEdits = await frame.waitForSelector('.ks-whatif-selected button', { timeout: 15000 })
      .then(() => frame.$$eval('.ks-whatif-selected button', (bs) => bs.map((b) => b.title)), () => []);
    if (selectedEdits.length) {
      await frame.evaluate(() => { const p = document.querySelector('.ks-whatif-result p'); if (p) p.textContent = ''; });
      await frame.click('.ks-whatif-selected button');
      selectedAnswer = await poll(async () => {
        const text = await frame.$eval('.ks-whatif-result p', (p) => p.textContent).catch(() => '');
        return text && text.includes('predicted') ? text : null;
      }, 30000, 100);
    }
  }
  const boxAfter = await frame.$eval('[data-panel="whatif"] textarea', (t) => t.value);
  // an edit the server would refuse is refused in the page, with the server's message, and no request is made
  let invalidRequests = 0;
  const countWhatif = (req) => { if (req.url().includes('/whatif?')) invalidRequests += 1; };
  page.on('request', countWhatif);
  await frame.fill('[data-panel="whatif"] textarea', 'graph\nhost:aten::mm*lots');
  await frame.click('.ks-whatif-edit button');
  const invalidMessage = await frame.waitForSelector('.ks-whatif-result .ks-error', { timeout: 5000 })
    .then((h) => h.textContent(), () => frame.$eval('.ks-whatif-result', (r) => r.textContent).catch(() => null));
  await page.waitForTimeout(300);
  page.off('request', countWhatif);
  return { errors, httpErrors, underVerdict, rows, bars, edits, summaryLine, pathStatus, lanesChanged, hit, selectedName, selectedEdits,
    selectedAnswer, boxAfter, invalidMessage, invalidRequests };
}

async function layoutFaults(frame) {
  return frame.evaluate(() => {
    const faults = [];
    const boxes = [document.documentElement, ...document.querySelectorAll('.ks-header, .ks-section')];
    for (const el of boxes) {
      if (el.scrollWidth > el.clientWidth + 1) faults.push(`${el.className || el.tagName} overflows: ${el.scrollWidth} > ${el.clientWidth}`);
    }
    for (const grid of document.querySelectorAll('.ks-grid, .ks-two')) {
      const kids = [...grid.children].map((k) => k.getBoundingClientRect()).filter((r) => r.width && r.height);
      for (let i = 0; i < kids.length; i++) {
        for (let j = i + 1; j < kids.length; j++) {
          const a = kids[i];
          const b = kids[j];
          if (a.left < b.right - 1 && b.left < a.right - 1 && a.top < b.bottom - 1 && b.top < a.bottom - 1) faults.push(`${grid.className} children ${i} and ${j} overlap`);
        }
      }
    }
    for (const wrap of document.querySelectorAll('.ks-table-wrap')) {
      const table = wrap.querySelector('table');
      if (!table) continue;
      const w = wrap.getBoundingClientRect();
      const section = wrap.closest('.ks-section')?.getBoundingClientRect();
      if (section && w.right > section.right + 1) faults.push(`a table box sticks out of its section by ${Math.round(w.right - section.right)} px`);
      const title = wrap.closest('.ks-section')?.querySelector('h3')?.textContent ?? '?';
      if (wrap.scrollWidth > wrap.clientWidth + 1) faults.push(`a table of "${title}" is clipped: ${wrap.scrollWidth} px in ${wrap.clientWidth} px`);
    }
    return faults;
  });
}

/** The lanes' lane geometry as the canvas publishes it. */
const laneLayout = (frame) => frame.$eval('.ks-lanes-canvas', (c) => JSON.parse(c.dataset.layout || '[]'));

/**
 * The new user's tour at one window width: layout, keys before any click, single vs double click,
 * pins and group folds, dark mode, the export button's limit, a link to a missing run, a panel
 * that folds itself when it has nothing to show, and a comparison with the op table grouped by shapes.
 */
async function tour(browser, run, width, bareRun, compareRun) {
  const viewport = { width, height: 1000 };
  const { page, frame, errors, httpErrors } = await openPlugin(browser, base, ksSuffix({ run }), viewport);
  await waitReady(frame);
  await frame.waitForSelector(GAP_ROWS, { timeout: 30000 });
  await frame.waitForSelector('.ks-steps tbody tr', { timeout: 30000 });
  await page.waitForTimeout(800);
  await page.screenshot({ path: shot(`tour-${width}`), fullPage: true });
  const faults = await layoutFaults(frame);
  const g = await geometry(frame);
  // Keys before any click: TensorBoard's page has the focus.
  await page.evaluate(() => document.activeElement?.blur());
  await page.keyboard.press('w');
  const afterKey = await waitWindow(page, (t) => t !== null, 4000);
  await page.keyboard.press('0');
  await waitWindow(page, (t) => t === null);
  // The export button at the full view (the server caps exports low for this check), then zoomed in.
  const exportAt = async () => {
    await page.waitForTimeout(900);
    return frame.$eval('button[title*="events"]', (b) => ({ disabled: b.disabled, text: b.textContent, title: b.title })).catch(() => null);
  };
  const exportFull = await exportAt();
  // A single click on a lane selects (the window stays); a double click zooms.
  const cpu = g.lanes.find((l) => l.kind !== 'gpu');
  const x = g.left + g.gutter + (g.width - g.gutter) * 0.31;
  const y = g.top + cpu.yCss + g.lanePad / 2 + g.rowH / 2;
  await page.mouse.move(x, y);
  await page.waitForTimeout(300);
  await page.mouse.click(x, y);
  await page.waitForTimeout(600);
  const afterClick = urlState(page).t;
  const tooltipAfterClick = await frame.$eval('.ks-tooltip', (e) => !e.hidden && e.getBoundingClientRect().height > 0).catch(() => false);
  await page.mouse.dblclick(x, y);
  const afterDbl = await waitWindow(page, (t) => t !== null);
  const exportZoomed = await exportAt();
  await page.keyboard.press('0');
  await waitWindow(page, (t) => t === null);
  // Pin the last lane (its pin at the right end of the label), then fold the CPU group at its header.
  const before = await laneLayout(frame);
  const last = before[before.length - 1];
  await page.mouse.click(g.left + g.gutter - 9, g.top + last.yCss + 11);
  await page.waitForTimeout(300);
  const pinned = await laneLayout(frame);
  const headerH = await frame.evaluate(async () => (await import(new URL('static/model/layout.js', document.baseURI).href)).HEADER_H);
  const firstBlock = pinned.find((b) => b.laneId !== last.laneId);
  await page.mouse.click(g.left + 40, g.top + firstBlock.yCss - 8); // the CPU group's header row sits above its first lane
  await page.waitForTimeout(300);
  const folded = await laneLayout(frame);
  // Dark mode, as TensorBoard's toggle sets it.
  await page.evaluate(() => document.body.classList.add('dark-mode'));
  await page.waitForTimeout(500);
  const dark = await frame.evaluate(() => document.body.classList.contains('ks-dark'));
  const darkBg = (await pixels(frame, '.ks-lanes-canvas', [[g.width - 12, headerH + 2]]))[0];
  await page.screenshot({ path: shot(`tour-${width}-dark`), fullPage: true });
  await page.evaluate(() => document.body.classList.remove('dark-mode'));
  await page.waitForTimeout(300);
  const light = await frame.evaluate(() => !document.body.classList.contains('ks-dark'));
  // A link to a run this logdir does not have.
  const missing = await openPlugin(browser, base, ksSuffix({ run: 'no-such-run', t: '5,9' }), viewport);
  await waitReady(missing.frame);
  const notice = await poll(() => missing.frame.evaluate(() => {
    const el = document.querySelector('.ks-link-notice');
    return el && !el.hidden ? el.textContent : null;
  }), 15000, 200);
  // The page writes the view it opened into the URL once its summary is in: read the link after that.
  const missingState = await poll(() => { const st = urlState(missing.page); return st.span ? st : null; }, 15000, 100) ?? urlState(missing.page);
  await missing.page.screenshot({ path: shot(`tour-${width}-notice`) });
  // A trace without memory events: the memory panel folds to its heading.
  const bare = await openPlugin(browser, base, ksSuffix({ run: bareRun }), viewport);
  await waitReady(bare.frame);
  const memory = await poll(() => bare.frame.evaluate(() => {
    const section = [...document.querySelectorAll('.ks-section')].find((s) => s.querySelector('h3')?.textContent.startsWith('Memory'));
    return section?.classList.contains('ks-collapsed') ? { folded: true, height: section.getBoundingClientRect().height, text: section.querySelector('h3').textContent } : null;
  }), 30000, 200);
  const bareFaults = await layoutFaults(bare.frame);
  // A multi-rank run: the Ranks panel's table and heatmap fit too.
  const job = await openPlugin(browser, base, ksSuffix({ run: 'hta/trace_filter' }), viewport);
  await waitReady(job.frame);
  await job.frame.waitForSelector('.ks-ranks .ks-heat td', { timeout: 60000 }).catch(() => null);
  await job.page.waitForTimeout(500);
  const ranksFaults = await layoutFaults(job.frame);
  const ranksShown = await job.frame.$$eval('.ks-ranks tbody tr', (trs) => trs.length);
  await job.page.screenshot({ path: shot(`tour-${width}-ranks`) });
  await bare.page.screenshot({ path: shot(`tour-${width}-bare`), fullPage: true });
  // A comparison against another run (summary, changes, joined tables, stacked lanes), and the op table
  // grouped by input shapes: all of it fits too.
  const cmp = await openPlugin(browser, base, ksSuffix({ run: compareRun, base: `run:${run}` }), viewport);
  await waitReady(cmp.frame);
  const compareDrawn = await poll(() => cmp.frame.$eval('.ks-compare-lanes-canvas', (c) => {
    const sides = JSON.parse(c.dataset.sides || '[]');
    return sides.length === 2 && sides.every((x) => x.rects > 0) ? sides.length : null;
  }).catch(() => null), 60000, 200);
  await cmp.frame.waitForSelector('.ks-profiler-table tbody tr', { timeout: 30000 });
  await cmp.frame.selectOption('.ks-op-group', 'shape');
  const shapes = await poll(() => cmp.frame.$$eval('.ks-profiler-table td[data-col="shapes"]', (tds) => (tds.length ? tds.map((t) => t.textContent) : null)),
    30000, 200);
  await cmp.page.waitForTimeout(500);
  const compareFaults = await layoutFaults(cmp.frame);
  await cmp.page.screenshot({ path: shot(`tour-${width}-compare`), fullPage: true });
  return { errors: [...errors, ...missing.errors, ...bare.errors, ...job.errors, ...cmp.errors],
    httpErrors: [...httpErrors, ...missing.httpErrors, ...bare.httpErrors, ...job.httpErrors, ...cmp.httpErrors],
    compareDrawn, compareFaults, shapes: (shapes || []).slice(0, 3),
    faults, bareFaults, ranksFaults, ranksShown, afterKey, afterClick, tooltipAfterClick, afterDbl, exportFull, exportZoomed,
    lanes: { before: before.map((b) => b.laneId), pinned: pinned.map((b) => b.laneId), folded: folded.map((b) => b.laneId), last: last.laneId },
    dark, darkBg, light, notice, missingState, memory };
}

/**
 * The tab on a remote logdir (`s3://...`, served by an S3 server on 127.0.0.1): it loads a trace from the
 * bucket and draws its lanes, as `smoke` checks; plus the logdir the plugin says it reads.
 */
async function remote(browser, run) {
  const result = await smoke(browser, run);
  const runs = await (await fetch(`${base}/data/plugin/kinetoscope/runs`)).json();
  return { ...result, logdir: runs.logdir, scanError: runs.scan_error };
}

/** The tab on a remote logdir that cannot be listed: it says which and why, as an error message. */
async function scanError(browser) {
  const { page, frame, errors, httpErrors } = await openPlugin(browser, base);
  const shown = await frame.waitForSelector('.ks-msg.ks-error', { timeout: 30000 }).then((h) => h.textContent(), () => null);
  await page.screenshot({ path: shot('remote-scan-error') });
  return { errors, httpErrors, shown };
}

/**
 * The Compare panel opened from a link (baseline run, candidate the run on screen): its headline, first
 * ranked change and verdicts; then another baseline picked in its selector is followed by the URL.
 */
async function compare(browser, run, baseRun) {
  const { page, frame, errors, httpErrors } = await openPlugin(browser, base, ksSuffix({ run, base: `run:${baseRun}`, cand: 'run' }));
  await waitReady(frame);
  const headline = await frame.waitForSelector('.ks-compare strong', { timeout: 60000 }).then((h) => h.textContent(), () => null);
  const status = await frame.textContent('.ks-compare > .ks-hint');
  const firstChange = await frame.$$eval('.ks-compare .ks-compare-table tbody tr',
    (trs) => (trs.length ? [...trs[0].querySelectorAll('td')].map((td) => td.textContent) : null));
  const joined = await frame.$$eval('.ks-compare details summary', (ss) => ss.map((x) => x.textContent));
  const strip = await frame.$$eval('.ks-compare-lane', (lanes) => lanes.map((l) => ({ side: l.dataset.side,
    steps: [...l.querySelectorAll('.ks-compare-step')].map((s) => s.textContent), parts: l.querySelectorAll('.ks-compare-part').length })));
  const stackedSides = async () => frame.$eval('.ks-compare-lanes-canvas', (c) => JSON.parse(c.dataset.sides || '[]')).catch(() => []);
  await until(async () => (await stackedSides()).filter((s) => s.rects > 0).length === 2, 30000, 200);
  const stacked = (await stackedSides()).map((s) => ({ side: s.side, span: s.span, step: s.step, rects: s.rects }));
  await frame.fill('.ks-compare-align', '3');
  await frame.dispatchEvent('.ks-compare-align', 'change');
  const aligned = await frame.$$eval('.ks-compare-lane', (lanes) => lanes.map((l) => l.querySelector('.ks-compare-step')?.textContent));
  await frame.evaluate(() => document.querySelector('.ks-compare').scrollIntoView());
  await page.screenshot({ path: shot('compare') });
  const spanKey = await frame.$eval('select[aria-label="baseline"]', (s, prefix) => [...s.options]
    .find((o) => o.value.startsWith('span:') && o.textContent.startsWith(prefix))?.value, `${baseRun} / `);
  await frame.selectOption('select[aria-label="baseline"]', spanKey);
  const baseInUrl = () => {
    const part = new URL(page.url()).hash.split('&').find((p) => p.startsWith('ks='));
    return new URLSearchParams(part ? decodeURIComponent(part.slice(3)) : '').get('base');
  };
  const followed = await until(async () => baseInUrl() === spanKey, 10000, 100);
  const spanBaseline = await until(async () => (await frame.textContent('.ks-compare > .ks-hint')).includes(`baseline: ${baseRun} / `), 60000, 200);
  return { errors, httpErrors, headline, status, firstChange, joined, strip, aligned, spanKey, followed, spanBaseline, stacked };
}

/**
 * Issue 16: Shift+drag over the lanes selects an area; the Tables panel then shows only it (the kernel calls
 * drop), the area rides in the link and a second page opened on it shows the same table; the search box
 * steps through the occurrences of a name ("n of m") and selects each one.
 */
async function area(browser, run) {
  const { page, frame, errors, httpErrors } = await openPlugin(browser, base, ksSuffix({ run }));
  await waitReady(frame);
  const tableCalls = async () => frame.$$eval('.ks-profiler-table tbody tr', (trs) => trs.slice(0, 5).map((tr) => [tr.dataset.name,
    Number(tr.querySelector('td[data-col="calls"]').textContent.replace(/[^0-9]/g, ''))]));
  await frame.click('.ks-tables .ks-tab[data-by="kernel"]');
  await frame.waitForSelector('.ks-profiler-table[data-by="kernel"] tbody tr', { timeout: 30000 });
  const before = await tableCalls();
  // the tab's click scrolled the Tables into view: bring the lanes back (under the sticky header) as a user would
  await frame.$eval('.ks-lanes-canvas', (c) => c.scrollIntoView({ block: 'center' }));
  await page.waitForTimeout(200);
  const g = await geometry(frame);
  const y = g.top + g.lanes[0].yCss + 10;
  const x0 = g.left + g.gutter + (g.width - g.gutter - g.right) * 0.2;
  const x1 = g.left + g.gutter + (g.width - g.gutter - g.right) * 0.4;
  await page.keyboard.down('Shift');
  await page.mouse.move(x0, y);
  await page.mouse.down();
  await page.mouse.move(x1, y, { steps: 10 });
  await page.mouse.up();
  await page.keyboard.up('Shift');
  const windowed = await until(async () => (await frame.$eval('.ks-tables .ks-table-wrap', (e) => e.dataset.window || '')) !== '', 15000, 100);
  await page.waitForTimeout(300);
  const after = await tableCalls();
  const tableWindow = await frame.$eval('.ks-tables .ks-table-wrap', (e) => e.dataset.window);
  await page.waitForTimeout(500);
  const part = new URL(page.url()).hash.split('&').find((p) => p.startsWith('ks='));
  const linkArea = new URLSearchParams(part ? decodeURIComponent(part.slice(3)) : '').get('a');
  await page.screenshot({ path: shot('area') });
  const second = await browser.newPage({ viewport: { width: 1500, height: 1000 } });
  await second.goto(page.url());
  const frame2 = await (await import('./lib.mjs')).pluginFrame(second);
  await waitReady(frame2);
  await until(async () => (await frame2.$eval('.ks-tables .ks-table-wrap', (e) => e.dataset.window || '').catch(() => '')) !== '', 15000, 100);
  const restoredWindow = await frame2.$eval('.ks-tables .ks-table-wrap', (e) => e.dataset.window).catch(() => null);
  await frame.fill('.ks-search', 'cudnn_convolution_backward_input');
  await frame.press('.ks-search', 'Enter');
  await until(async () => /of/.test(await frame.textContent('.ks-search-count')), 15000, 100);
  const first = await frame.textContent('.ks-search-count');
  await frame.click('.ks-search-next');
  await until(async () => (await frame.textContent('.ks-search-count')).startsWith('2 of'), 15000, 100);
  const second2 = await frame.textContent('.ks-search-count');
  const selected = await frame.waitForSelector('.ks-details-name', { timeout: 15000 }).then((h) => h.textContent(), () => null);
  return { errors, httpErrors, before, after, windowed, tableWindow, linkArea, restoredWindow, search: [first, second2], selected };
}

/**
 * Issue 17: the Compare panel's stacked lanes for two spans (baseline: the first span of `baseRun`; candidate:
 * the span on screen of `run`). Both sides' lanes are drawn (rectangles and saturated pixels in each side's
 * band), changing the aligned step moves each side's window to that step, a wheel over the view zooms both
 * sides (finer and narrower requests), hovering an event names it, and the link reopens the same view.
 */
async function compareLanes(browser, run, baseRun) {
  const listing = await (await fetch(`${base}/data/plugin/kinetoscope/runs`)).json();
  const baseSpan = listing.runs.find((r) => r.name === baseRun).workers[0].spans[0].id;
  const { page, frame, errors, httpErrors, requests } = await openPlugin(browser, base, ksSuffix({ run, base: `span:${baseSpan}` }));
  await waitReady(frame);
  const CANVAS = '.ks-compare-lanes-canvas';
  const baseLanes = () => requests.filter((u) => u.startsWith(`lanes?span=${baseSpan}&`)).length;
  const sides = async (f = frame) => f.$eval(CANVAS, (c) => JSON.parse(c.dataset.sides || '[]')).catch(() => []);
  const win = async (f = frame) => f.$eval(CANVAS, (c) => (c.dataset.win || '').split(',').map(Number)).catch(() => null);
  const drawn = (list) => list.length === 2 && list.every((s) => s.rects > 0 && s.fetched);
  await until(async () => drawn(await sides()), 60000, 200);
  await page.waitForTimeout(400);
  const first = await sides();
  const { gutter, right, width } = await frame.evaluate(async (sel) => {
    const layout = await import(new URL('static/model/layout.js', document.baseURI).href);
    return { gutter: layout.GUTTER_W, right: layout.RIGHT_PAD, width: document.querySelector(sel).getBoundingClientRect().width };
  }, CANVAS);
  const bandPixels = async (list) => Promise.all(list.map((s) => saturated(frame, gutter, s.yCss, width - right, s.yCss + s.hCss, CANVAS)));
  const firstPixels = await bandPixels(first);
  const firstWin = await win();
  await (await frame.$('.ks-compare-lanes')).screenshot({ path: shot('compare-lanes-step1') });

  await frame.fill('.ks-compare-align', '3');
  await frame.dispatchEvent('.ks-compare-align', 'change');
  const moved = (list) => drawn(list) && list.every((s, i) => s.anchorUs !== first[i].anchorUs && s.fetched[0] <= s.anchorUs && s.fetched[1] > s.anchorUs);
  await until(async () => moved(await sides()), 30000, 200);
  await page.waitForTimeout(300);
  const stepped = await sides();
  const steppedWin = await win();
  const linkParam = (name) => {
    const part = new URL(page.url()).hash.split('&').find((p) => p.startsWith('ks='));
    return new URLSearchParams(part ? decodeURIComponent(part.slice(3)) : '').get(name);
  };
  await until(async () => linkParam('step') === '3', 5000, 100);
  const linkStep = linkParam('step');

  await frame.evaluate((sel) => document.querySelector(sel).scrollIntoView({ block: 'center' }), CANVAS);
  await page.waitForTimeout(200);
  const box = await (await frame.frameElement()).boundingBox();
  const rect = await frame.$eval(CANVAS, (c) => { const r = c.getBoundingClientRect(); return { left: r.left, top: r.top }; });
  const left = box.x + rect.left;
  const top = box.y + rect.top;
  await page.mouse.move(left + gutter + (width - gutter - right) * 0.3, top + stepped[0].yCss + 8);
  const requestsBeforeZoom = baseLanes();
  await frame.$eval(CANVAS, (c) => { c.ksDraw = { count: 0, lastMs: 0, maxMs: 0, recentMs: [] }; });
  for (let i = 0; i < 4; i++) await page.mouse.wheel(0, -250);
  const zoomedIn = (list) => drawn(list) && list.every((s, i) => s.fetched[2] < stepped[i].fetched[2] * 0.7
    && s.fetched[1] - s.fetched[0] < (stepped[i].fetched[1] - stepped[i].fetched[0]) * 0.7);
  await until(async () => zoomedIn(await sides()), 30000, 200);
  await page.waitForTimeout(300);
  const zoomed = await sides();
  const zoomedWin = await win();
  const zoomedPixels = await bandPixels(zoomed);
  const zoomRequests = baseLanes() - requestsBeforeZoom;
  // 20 more wheel steps, then what the frames and the baseline's lanes requests cost.
  for (let i = 0; i < 20; i++) {
    await page.mouse.wheel(0, i % 2 ? 120 : -120);
    await page.waitForTimeout(30);
  }
  await page.waitForTimeout(500);
  const draw = await frame.$eval(CANVAS, (c) => c.ksDraw);
  const lanesMs = await frame.evaluate((id) => performance.getEntriesByType('resource').filter((e) => e.name.includes(`lanes?span=${id}&`))
    .map((e) => Math.round(e.duration * 10) / 10), baseSpan);
  await until(async () => linkParam('cw') !== null, 5000, 100);

  // Hover along the candidate's first lane until the box names an event.
  let hover = null;
  const cand = zoomed[1];
  for (let k = 1; k < 40 && !hover; k++) {
    await page.mouse.move(left + gutter + ((width - gutter - right) * k) / 40, top + cand.yCss + 10);
    await page.waitForTimeout(60);
    hover = await frame.$eval('.ks-compare-lanes-wrap .ks-tooltip', (t) => (t.hidden ? null : t.textContent)).catch(() => null);
  }
  await page.screenshot({ path: shot('compare-lanes') });
  // Every CPU thread, not only the two busiest: more lanes or as many (the view grows or stays).
  await frame.click('.ks-compare-lanes-all');
  await page.waitForTimeout(300);
  const allThreads = (await sides()).map((s) => s.lanes.filter((k) => k === 'cpu').length);
  await frame.click('.ks-compare-lanes-all');
  await page.waitForTimeout(300);
  const busiestOnly = (await sides()).map((s) => s.lanes.filter((k) => k === 'cpu').length);
  // Keys on the focused view act on it, not on the main lanes: 0 goes back to the aligned steps, W zooms in.
  const mainWindow = linkParam('t');
  await frame.focus(CANVAS);
  await page.keyboard.press('0');
  await until(async () => (await win())[1] - (await win())[0] > (zoomedWin[1] - zoomedWin[0]) * 2, 5000, 100);
  const keyReset = await win();
  await page.keyboard.press('w');
  await until(async () => (await win())[1] - (await win())[0] < (keyReset[1] - keyReset[0]) * 0.9, 5000, 100);
  const keyZoom = await win();
  await page.waitForTimeout(400);
  const mainWindowKept = linkParam('t') === mainWindow;
  // TensorBoard's dark mode: the canvas redraws with the dark palette (its label gutter goes dark).
  await page.evaluate(() => document.body.classList.add('dark-mode'));
  await until(async () => (await frame.evaluate(() => document.body.dataset.theme)) === 'dark', 5000, 100);
  await page.waitForTimeout(200);
  const [gutterDark] = await pixels(frame, CANVAS, [[3, zoomed[0].yCss + 3]]);
  await (await frame.$('.ks-compare-lanes')).screenshot({ path: shot('compare-lanes-dark') });

  const second = await browser.newPage({ viewport: { width: 1500, height: 1000 } });
  await second.goto(page.url());
  const frame2 = await (await import('./lib.mjs')).pluginFrame(second);
  await waitReady(frame2);
  await until(async () => drawn(await sides(frame2)), 60000, 200);
  const reopened = { sides: (await sides(frame2)).map((s) => [s.span, s.step, s.anchorUs]), win: await win(frame2) };
  return { errors, httpErrors, baseSpan, first, firstPixels, firstWin, stepped, steppedWin, linkStep, zoomed, zoomedWin, zoomedPixels, hover, reopened,
    zoomRequests, draw, lanesMs, gutterDark, keyReset, keyZoom, mainWindowKept, allThreads, busiestOnly };
}

/**
 * Issue 30: the tab at WIDTHxHEIGHT, light or dark (laptop.mjs), plus the layout faults and console errors.
 */
async function laptop(browser, run, width, height, theme, otherRun) {
  const { page, frame, errors, httpErrors } = await openPlugin(browser, base, ksSuffix({ run }), { width, height });
  await waitReady(frame, 120000);
  await frame.waitForSelector('.ks-profiler-table tbody tr', { timeout: 60000 }).catch(() => null);
  const r = await laptopTour({ page, frame, base, geometry, urlState, until }, theme === 'dark', otherRun);
  const faults = await layoutFaults(frame);
  await page.screenshot({ path: shot(`laptop-${width}x${height}-${theme}`) });
  return { errors, httpErrors, faults, ...r };
}

/** Issue 30: the Compare panel's stacked lanes of `run` against `baseRun` at WIDTHxHEIGHT (laptop.mjs). */
async function compareFitCheck(browser, run, baseRun, width, height) {
  const { page, frame, errors, httpErrors } = await openPlugin(browser, base, ksSuffix({ run, base: `run:${baseRun}` }), { width, height });
  await waitReady(frame, 120000);
  const r = await compareFit({ page, frame, until });
  await (await frame.$('.ks-compare-lanes-canvas')).scrollIntoViewIfNeeded();
  await page.screenshot({ path: shot(`compare-fit-${width}x${height}`) });
  return { errors, httpErrors, ...r };
}

/**
 * Issue 30: a kernel name cut at 1,000 characters (the only run of the logdir): its row carries a key, and its
 * "whole name" button shows it whole.
 */
async function fullName(browser) {
  const { page, frame, errors, httpErrors } = await openPlugin(browser, base, '', { width: 1280, height: 800 });
  await waitReady(frame);
  await frame.click('.ks-tables .ks-tab[data-by="kernel"]');
  await frame.waitForSelector('.ks-profiler-table[data-by="kernel"] .ks-full-name-link', { timeout: 30000 });
  const keys = await frame.$$eval('.ks-profiler-table tbody tr', (trs) => trs.map((t) => t.dataset.nameKey ?? null));
  const shown = await frame.$$eval('.ks-profiler-table tbody td[data-col="name"]', (tds) => tds.map((t) => t.title));
  await frame.click('.ks-full-name-link');
  await frame.waitForSelector('.ks-full-name-text', { timeout: 15000 });
  const whole = await frame.textContent('.ks-full-name-text');
  const head = await frame.textContent('.ks-full-name-head');
  // the same name selected (search selects its first occurrence): the Selection drawer offers it whole too
  await frame.fill('.ks-search', 'void k<');
  await frame.press('.ks-search', 'Enter');
  await frame.waitForSelector('.ks-drawer:not([hidden]) .ks-full-name-link', { timeout: 30000 });
  await frame.click('.ks-drawer .ks-full-name-link');
  await frame.waitForSelector('.ks-drawer .ks-full-name-text', { timeout: 15000 });
  const drawer = await frame.textContent('.ks-drawer .ks-full-name-text');
  return { errors, httpErrors, keys, shown, whole, head, drawer };
}

/** Issue 30: each run's first view at WIDTHxHEIGHT (laptop.mjs): its first GPU lane on screen without scrolling. */
async function firstView(browser, width, height, ...runs) {
  return { views: await firstViews({ browser, base, openPlugin, waitReady, ksSuffix }, width, height, runs.map(String)) };
}

const browser = await launch();
try {
  const checks = { smoke, stalls, interact, gaprow: gapRow, select: selectAndShare, xss, live, runverdict: runVerdict, replaced, completed, ranks, tour, compare, area };
  checks.comparelanes = compareLanes;
  checks.remote = remote;
  checks.scanerror = scanError;
  checks.whatif = whatif;
  checks.rankgroups = rankGroups;
  checks.laptop = laptop;
  checks.firstview = firstView;
  checks.comparefit = compareFitCheck;
  checks.fullname = fullName;
  checks.replayed = replayed;
  if (!checks[check]) throw new Error(`unknown check ${check}`);
  console.log(JSON.stringify(await checks[check](browser, ...args.map((a) => (/^-?\d+(\.\d+)?$/.test(a) ? Number(a) : a)))));
} finally {
  await browser.close();
}
