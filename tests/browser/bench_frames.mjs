// Frame-time benchmark of the lanes view: scripted wheel zooms, drag pans and W/S/A/D keys on a
// loaded trace, timing every animation-frame callback of the page (the redraws) including the
// canvas rasterisation (forced by a 1-pixel getImageData per canvas), plus the rAF intervals.
// Usage: node bench_frames.mjs BASE_URL RUN [OUT_DIR] [DPR] -> prints one JSON line.
import path from 'node:path';

import { launch, openPlugin, waitReady } from './lib.mjs';

const [base, run, outDir, dprArg] = process.argv.slice(2);
const dpr = Number(dprArg) || 1;

function stats(values) {
  const v = [...values].sort((a, b) => a - b);
  const q = (p) => (v.length ? v[Math.min(v.length - 1, Math.floor(p * v.length))] : null);
  const round = (x) => (x === null ? null : Math.round(x * 100) / 100);
  return { n: v.length, median: round(q(0.5)), p95: round(q(0.95)), max: round(v.length ? v[v.length - 1] : null) };
}

const INSTRUMENT = () => {
  const raf = window.requestAnimationFrame.bind(window);
  const bench = { work: new Map(), ticks: [], on: false };
  window.__ksBench = bench;
  window.requestAnimationFrame = (cb) => raf((ts) => {
    const t0 = performance.now();
    cb(ts);
    for (const c of document.querySelectorAll('canvas')) c.getContext('2d').getImageData(0, 0, 1, 1);
    if (bench.on) bench.work.set(ts, (bench.work.get(ts) ?? 0) + performance.now() - t0);
  });
  const tick = (ts) => {
    if (bench.on) bench.ticks.push(ts);
    raf(tick);
  };
  raf(tick);
};

const browser = await launch();
try {
  const { page, frame, errors } = await openPlugin(browser, base, `&ks=${encodeURIComponent(`run=${run}`)}`, { width: 1500, height: 1000 }, dpr);
  await waitReady(frame, 180000);
  await frame.evaluate(INSTRUMENT);
  const box = await (await frame.frameElement()).boundingBox();
  const canvas = await frame.$eval('.ks-lanes-canvas', (c) => { const r = c.getBoundingClientRect(); return { x: r.left, y: r.top, w: r.width, h: r.height }; });
  const x0 = box.x + canvas.x + 200;
  const y = box.y + canvas.y + 80;
  const w = canvas.w - 220;
  const events = await frame.evaluate(() => document.querySelector('.ks-bound')?.textContent);
  const requests = [];
  page.on('request', (r) => { if (r.url().includes('/lanes?')) requests.push(r.url()); });
  await frame.evaluate(() => { window.__ksBench.on = true; });
  const t0 = Date.now();
  await page.mouse.move(x0 + w / 2, y);
  const phases = {};
  const phase = async (name, fn) => {
    const before = await frame.evaluate(() => window.__ksBench.work.size);
    await fn();
    phases[name] = (await frame.evaluate(() => window.__ksBench.work.size)) - before;
  };
  await phase('zoom-in (wheel)', async () => {
    for (let i = 0; i < 40; i++) {
      await page.mouse.move(x0 + w * (0.3 + 0.4 * ((i * 7) % 10) / 10), y);
      await page.mouse.wheel(0, -120);
      await page.waitForTimeout(16);
    }
  });
  await phase('pan (drag)', async () => {
    await page.mouse.move(x0 + w * 0.8, y);
    await page.mouse.down();
    for (let i = 0; i < 60; i++) {
      await page.mouse.move(x0 + w * 0.8 - i * 12, y + (i % 5));
      await page.waitForTimeout(16);
    }
    await page.mouse.up();
  });
  await phase('keys (W/S/A/D)', async () => {
    for (const key of ['w', 'd', 's', 'a']) {
      for (let i = 0; i < 15; i++) {
        await page.keyboard.press(key);
        await page.waitForTimeout(16);
      }
    }
  });
  await phase('zoom-out (wheel)', async () => {
    for (let i = 0; i < 40; i++) {
      await page.mouse.wheel(0, 120);
      await page.waitForTimeout(16);
    }
  });
  const elapsedMs = Date.now() - t0;
  const { work, ticks } = await frame.evaluate(() => {
    const b = window.__ksBench;
    b.on = false;
    return { work: [...b.work.values()], ticks: b.ticks };
  });
  const intervals = ticks.slice(1).map((t, i) => t - ticks[i]);
  if (outDir) await page.screenshot({ path: path.join(outDir, `bench-${run}-dpr${dpr}.png`) });
  console.log(JSON.stringify({ run, dpr, verdict: events, elapsedMs, lanesRequests: requests.length, phases,
    frameWorkMs: stats(work), rafIntervalMs: stats(intervals), errors }));
} finally {
  await browser.close();
}
