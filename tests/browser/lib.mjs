// Shared helpers of the browser checks: launch Debian's Chromium through playwright-core (no browser
// download), open TensorBoard on the Kinetoscope tab and find the plugin's iframe.
import { chromium } from 'playwright-core';

export const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
// Flags that work as root with no network (docs/tensorboard-plugin.md §10).
const FLAGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
  '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage'];

export async function launch() {
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: FLAGS });
}

/**
 * Opens `${base}/#kinetoscope<suffix>` (after `setUp(page)`, e.g. routes that slow answers down) and returns the page, the plugin frame, the console errors, the
 * refused requests (`STATUS URL` of every answer >= 400, any frame) and the URLs of the plugin's
 * requests seen so far (the arrays keep filling).
 */
export async function openPlugin(browser, base, hashSuffix = '', viewport = { width: 1500, height: 1000 }, deviceScaleFactor = 1, setUp = async (page) => {}) {
  const page = await browser.newPage({ viewport, deviceScaleFactor });
  await setUp(page);
  const errors = [];
  const httpErrors = [];
  const requests = [];
  page.on('console', (msg) => {
    if (msg.type() === 'error') errors.push(`${msg.text()} @ ${msg.location()?.url ?? ''}`);
  });
  page.on('pageerror', (err) => errors.push(`pageerror: ${err.message}`));
  page.on('response', (response) => {
    if (response.status() >= 400) httpErrors.push(`${response.status()} ${response.url()}`);
  });
  page.on('request', (request) => {
    if (request.url().includes('/data/plugin/kinetoscope/')) requests.push(request.url().split('/data/plugin/kinetoscope/')[1]);
  });
  const dialogs = [];
  page.on('dialog', async (d) => {
    dialogs.push(d.message());
    await d.dismiss();
  });
  await page.goto(`${base}/#kinetoscope${hashSuffix}`);
  const frame = await pluginFrame(page);
  return { page, frame, errors, dialogs, httpErrors, requests };
}

export async function pluginFrame(page, timeoutMs = 30000) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const frame = page.frames().find((f) => f.url().includes('plugin_entry.html?name=kinetoscope'));
    if (frame && (await frame.$('.ks-header').catch(() => null))) return frame;
    await page.waitForTimeout(100);
  }
  throw new Error('the Kinetoscope iframe did not render');
}

/**
 * Waits until the verdict and the lanes are drawn (the lanes status message is gone) and the page above the
 * lanes stops growing: a run of several spans shows its run verdict above the span's once it is answered, after
 * the summary, and moves the lanes down (a point read before it clicks beside the event it aimed at).
 */
export async function waitReady(frame, timeoutMs = 60000) {
  await frame.waitForSelector('.ks-bound', { timeout: timeoutMs });
  await frame.waitForFunction(() => document.querySelector('.ks-header')?.dataset.runVerdict !== 'asked', null, { timeout: timeoutMs });
  await frame.waitForFunction(() => {
    const status = document.querySelector('.ks-lanes-status');
    return status && status.childElementCount === 0;
  }, null, { timeout: timeoutMs });
  // Lanes drawn while the server still analysed are asked again with their gap and step overlays.
  await frame.waitForFunction(() => document.querySelector('.ks-lanes-canvas')?.dataset.analysed === 'true', null, { timeout: timeoutMs });
  await frame.waitForTimeout(200);
}

/** The (CSS-pixel) RGBA of a canvas pixel in the frame. */
export async function pixels(frame, selector, points) {
  return frame.evaluate(([sel, pts]) => {
    const c = document.querySelector(sel);
    const ctx = c.getContext('2d');
    const dpr = c.width / c.getBoundingClientRect().width;
    return pts.map(([x, y]) => Array.from(ctx.getImageData(Math.round(x * dpr), Math.round(y * dpr), 1, 1).data));
  }, [selector, points]);
}
