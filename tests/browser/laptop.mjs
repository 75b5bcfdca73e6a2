// Issue 30's checks of the tab at one window size and theme, as a new user on a laptop meets it: the
// header on one line, the first GPU lane on screen without scrolling, hover boxes inside the window (and
// redescribed after a zoom), a search hit zoomed to at least 40 px with its counter in view, the selection
// drawer in view, a link pasted into the open tab followed, and text contrast of at least 4.5:1.
// Measures only; tests/test_browser.py asserts.

/** WCAG 2 contrast of every visible text of the frame against what is behind it, the lowest first. */
export async function contrastFaults(frame, minRatio = 4.5) {
  return frame.evaluate((min) => {
    const rgba = (s) => (s.match(/[\d.]+/g) || []).map(Number).concat([1]).slice(0, 4);
    const lum = ([r, g, b]) => {
      const c = [r, g, b].map((v) => { const x = v / 255; return x <= 0.03928 ? x / 12.92 : ((x + 0.055) / 1.055) ** 2.4; });
      return 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2];
    };
    const over = (top, under) => [0, 1, 2].map((i) => top[i] * top[3] + under[i] * (1 - top[3])).concat([1]);
    /** The opaque colour behind an element: its backgrounds up the tree, blended. */
    const behind = (el) => {
      const layers = [];
      for (let e = el; e; e = e.parentElement) {
        const c = rgba(getComputedStyle(e).backgroundColor);
        if (c[3] > 0) layers.push(c);
        if (c[3] >= 1) break;
      }
      let color = [255, 255, 255, 1];
      for (const c of layers.reverse()) color = over(c, color);
      return color;
    };
    const faults = [];
    const seen = new Set();
    const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      const el = n.parentElement;
      if (!el || seen.has(el) || !n.textContent.trim()) continue;
      seen.add(el);
      if (el.closest('[hidden], option, script, style, .ks-tooltip')) continue;
      const r = el.getBoundingClientRect();
      const st = getComputedStyle(el);
      if (!r.width || !r.height || st.visibility === 'hidden' || Number(st.opacity) === 0) continue;
      const bg = behind(el);
      const fg = over(rgba(st.color), bg);
      const [a, b] = [lum(fg), lum(bg)].sort((x, y) => y - x);
      const ratio = (a + 0.05) / (b + 0.05);
      if (ratio < min) faults.push({ text: n.textContent.trim().slice(0, 40), cls: el.className || el.tagName, ratio: Math.round(ratio * 100) / 100, color: st.color, bg: `rgb(${bg.slice(0, 3).map(Math.round)})` });
    }
    return faults.sort((x, y) => x.ratio - y.ratio).slice(0, 20);
  }, minRatio);
}

/** The box of the first selector match in the frame's window, and that window's size. */
async function boxOf(frame, selector) {
  return frame.evaluate((sel) => {
    const e = document.querySelector(sel);
    const r = e && !e.closest('[hidden]') ? e.getBoundingClientRect() : null;
    return { box: r && r.width ? { left: r.left, top: r.top, right: r.right, bottom: r.bottom } : null, view: { width: innerWidth, height: innerHeight } };
  }, selector);
}

/**
 * @param {{page: any, frame: any, base: string, geometry: (frame: any) => Promise<any>, urlState: (page: any) => any,
 *   until: (p: () => Promise<boolean>, ms: number, step?: number) => Promise<boolean>}} ctx
 */
export async function laptopTour(ctx, dark, otherRun) {
  const { page, frame, base, geometry, urlState, until } = ctx;
  if (dark) {
    await page.evaluate(() => document.body.classList.add('dark-mode'));
    await until(async () => (await frame.evaluate(() => document.body.classList.contains('ks-dark'))), 5000, 100);
  }
  await page.waitForTimeout(500);
  const header = await frame.evaluate(() => {
    const h = document.querySelector('.ks-header');
    const row = h.querySelector('.ks-pickers');
    const kids = [...row.children].filter((k) => k.getBoundingClientRect().width > 0);
    const tops = new Set(kids.map((k) => Math.round(k.getBoundingClientRect().top / 8)));
    return { height: h.getBoundingClientRect().height, folded: h.classList.contains('ks-header-folded'), lines: tops.size,
      brief: h.querySelector('.ks-brief')?.textContent ?? '', briefShown: (h.querySelector('.ks-brief')?.getBoundingClientRect().width ?? 0) > 0,
      briefCut: (() => { const b = h.querySelector('.ks-brief'); return b ? b.scrollWidth > b.clientWidth + 1 : null; })(),
      innerHeight };
  });
  const g = await geometry(frame);
  const frameBox = await (await frame.frameElement()).boundingBox();
  const gpu = g.lanes.find((b) => b.kind === 'gpu') ?? null;
  // page coordinates of the first GPU lane, and whether it lies in the frame's window with the page unscrolled
  const gpuLane = gpu ? { top: g.top - frameBox.y + gpu.yCss, bottom: g.top - frameBox.y + gpu.yCss + gpu.hCss } : null;
  const gpuVisible = gpuLane ? gpuLane.bottom <= header.innerHeight && gpuLane.top >= header.height : null;

  // Hover boxes along the first GPU lane (or the first lane), at the left, the middle and the right edge.
  const lane = gpu ?? g.lanes[0];
  const y = g.top + lane.yCss + g.lanePad / 2 + g.rowH / 2;
  const tooltips = [];
  for (const f of [0.02, 0.5, 0.995]) {
    await page.mouse.move(g.left + g.gutter + (g.width - g.gutter - g.right) * f, y);
    await page.waitForTimeout(350);
    const t = await boxOf(frame, '.ks-tooltip');
    if (t.box) tooltips.push({ at: f, ...t.box, inside: t.box.left >= 0 && t.box.top >= 0 && t.box.right <= t.view.width && t.box.bottom <= t.view.height });
  }
  // A hover box over a block, then a wheel zoom under the same pointer: the box describes what is now there.
  const x = g.left + g.gutter + (g.width - g.gutter - g.right) * 0.5;
  await page.mouse.move(x, y);
  await page.waitForTimeout(400);
  const tipText = async () => frame.evaluate(() => { const t = document.querySelector('.ks-tooltip'); return t && !t.hidden ? t.textContent : null; });
  const beforeZoom = await tipText();
  for (let k = 0; k < 4; k++) {
    await page.mouse.wheel(0, -400);
    await page.waitForTimeout(150);
  }
  await until(async () => (await tipText()) !== beforeZoom, 5000, 100);
  const afterZoom = await tipText();
  await page.keyboard.press('0');
  await page.mouse.move(frameBox.x + 5, frameBox.y + 5);
  await page.waitForTimeout(400);

  // Search for the busiest kernel (else op) of the Tables: the hit is zoomed to >= 40 px, the counter stays in view.
  const st = urlState(page);
  const query = await frame.evaluate(() => document.querySelector('.ks-profiler-table tbody tr')?.dataset.name ?? null);
  let search = null;
  if (query) {
    await frame.fill('.ks-search', query.slice(0, 200));
    await frame.press('.ks-search', 'Enter');
    await until(async () => / of /.test(await frame.textContent('.ks-search-count')), 20000, 100);
    await page.waitForTimeout(900);
    const hits = await (await fetch(`${base}/data/plugin/kinetoscope/search?span=${encodeURIComponent(st.span)}&q=${encodeURIComponent(query.slice(0, 200))}&offset=0&limit=1`)).json();
    const s = urlState(page);
    const g2 = await geometry(frame);
    const dur = Number(hits.hits?.dur_us?.[0]);
    const win = s.t ?? [0, Number(await frame.evaluate(() => document.querySelector('.ks-lanes-canvas').dataset.durationUs || NaN))];
    const counter = await boxOf(frame, '.ks-search-count');
    const drawer = await boxOf(frame, '.ks-drawer');
    await until(async () => Boolean(await frame.$('.ks-drawer .ks-details-name')), 15000, 100);
    search = { query: query.slice(0, 80), count: await frame.textContent('.ks-search-count'), durUs: dur, win,
      hitPx: dur * (g2.width - g2.gutter - g2.right) / (win[1] - win[0]),
      counterInView: Boolean(counter.box) && counter.box.top >= 0 && counter.box.bottom <= counter.view.height,
      drawer: drawer.box, drawerInView: Boolean(drawer.box) && drawer.box.top >= header.height - 1 && drawer.box.bottom <= drawer.view.height && drawer.box.right <= drawer.view.width,
      drawerName: await frame.textContent('.ks-drawer .ks-details-name').catch(() => null) };
  }
  // Contrast with the selected Tables tab, the drawer and the folded header on screen.
  const contrast = await contrastFaults(frame);
  await frame.click('.ks-drawer-close').catch(() => null);
  const drawerClosed = await frame.evaluate(() => document.querySelector('.ks-drawer')?.hidden ?? null);

  // A link pasted into the open tab: the area of another window on the same span, then another run.
  const durUs = await frame.evaluate(() => Number(document.querySelector('.ks-lanes-canvas').dataset.durationUs));
  const linked = { run: st.run, worker: st.worker, span: st.span, a: `${(durUs * 0.1).toFixed(3)},${(durUs * 0.2).toFixed(3)}` };
  await page.evaluate((q) => { location.hash = `#kinetoscope&ks=${encodeURIComponent(new URLSearchParams(q).toString())}`; }, linked);
  await until(async () => (await frame.$eval('.ks-tables .ks-table-wrap', (e) => e.dataset.window || '').catch(() => '')) !== '', 10000, 100);
  const areaFollowed = await frame.$eval('.ks-tables .ks-table-wrap', (e) => e.dataset.window || '').catch(() => '');
  let runFollowed = null;
  if (otherRun) {
    await page.evaluate((q) => { location.hash = `#kinetoscope&ks=${encodeURIComponent(new URLSearchParams(q).toString())}`; }, { run: otherRun });
    await until(async () => (await frame.$eval('select[aria-label="run"]', (s) => s.value)) === otherRun, 15000, 100);
    runFollowed = await frame.$eval('select[aria-label="run"]', (s) => s.value);
  }
  return { header, gpuLane, gpuVisible, tooltips, beforeZoom, afterZoom, search, contrast, drawerClosed, linkedArea: linked.a, areaFollowed, runFollowed };
}

/**
 * The first view of each run at one window size: where its first GPU lane lies against the frame's window
 * (page unscrolled), the header's height and lines, and the text contrast; then, scrolled to the bottom, the
 * height of what stays pinned (`scrolled`).
 * @param {{browser: any, base: string, openPlugin: Function, waitReady: Function, ksSuffix: (s: object) => string}} ctx
 * @param {number} width @param {number} height @param {string[]} runs
 */
export async function firstViews(ctx, width, height, runs) {
  const out = [];
  for (const run of runs) {
    const { page, frame, errors, httpErrors } = await ctx.openPlugin(ctx.browser, ctx.base, ctx.ksSuffix({ run }), { width, height });
    try {
      await ctx.waitReady(frame, 180000);
      // a multi-rank run: measure once its Ranks panel has its table, the panel that used to push the lanes down
      if (await frame.$('.ks-ranks:not([hidden])')) await frame.waitForSelector('.ks-ranks tbody tr', { timeout: 60000 }).catch(() => null);
      await page.waitForTimeout(300);
      const view = await frame.evaluate(() => {
        const canvas = document.querySelector('.ks-lanes-canvas');
        const top = canvas.getBoundingClientRect().top + scrollY;
        const gpu = JSON.parse(canvas.dataset.layout || '[]').find((b) => b.kind === 'gpu');
        const header = document.querySelector('.ks-header').getBoundingClientRect().height;
        const ranks = document.querySelector('.ks-ranks');
        return { innerHeight, header, gpuBottom: gpu ? top + gpu.yCss + gpu.hCss : null, gpuTop: gpu ? top + gpu.yCss : null,
          ranksRows: ranks && !ranks.hidden ? ranks.querySelectorAll('tbody tr').length : null };
      });
      // scrolled to the bottom: what stays pinned over the panels is the header's one line, with the verdict's brief
      await frame.evaluate(() => window.scrollTo(0, document.documentElement.scrollHeight));
      await page.waitForTimeout(400);
      const scrolled = await frame.evaluate(() => {
        const h = document.querySelector('.ks-header');
        const brief = h.querySelector('.ks-brief');
        return { header: h.getBoundingClientRect().height, top: h.getBoundingClientRect().top, scrollY, innerHeight,
          brief: brief?.textContent ?? '', briefShown: (brief?.getBoundingClientRect().width ?? 0) > 0 };
      });
      await frame.evaluate(() => window.scrollTo(0, 0));
      out.push({ run, ...view, scrolled, errors, httpErrors });
    } catch (err) {
      out.push({ run, failed: String(err).slice(0, 300), errors, httpErrors });
    } finally {
      await page.close();
    }
  }
  return out;
}

/**
 * The Compare panel's stacked lanes at one window size: once both sides are drawn, whether the canvas fits
 * the window under the sticky header (so both sides show at once) and where each side's lanes lie.
 * @param {{page: any, frame: any, until: (p: () => Promise<boolean>, ms: number, step?: number) => Promise<boolean>}} ctx
 */
export async function compareFit(ctx) {
  const { page, frame, until } = ctx;
  const sides = async () => frame.$eval('.ks-compare-lanes-canvas', (c) => JSON.parse(c.dataset.sides || '[]')).catch(() => []);
  await until(async () => { const s = await sides(); return s.length === 2 && s.every((x) => x.rects > 0); }, 90000, 200);
  await page.waitForTimeout(500);
  return frame.evaluate(() => {
    const c = document.querySelector('.ks-compare-lanes-canvas');
    const header = document.querySelector('.ks-header').getBoundingClientRect().height;
    return { canvasH: c.getBoundingClientRect().height, header, innerHeight, sides: JSON.parse(c.dataset.sides || '[]').map((s) => ({ yCss: s.yCss, hCss: s.hCss })) };
  });
}
