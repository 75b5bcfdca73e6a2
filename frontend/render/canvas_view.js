// @ts-check
/**
 * A canvas that owns its device-pixel scaling, follows its CSS size through a ResizeObserver and
 * coalesces redraw requests into one draw per animation frame (pyinstrument's CanvasView idea).
 * Draw callbacks work in CSS pixels; the DPR transform is set before each call.
 */

/**
 * @callback DrawFn
 * @param {CanvasRenderingContext2D} ctx already scaled to CSS pixels and cleared
 * @param {number} widthCss
 * @param {number} heightCss
 * @returns {void}
 */

/** Every CanvasView made, so a theme change can redraw them all. @type {Set<CanvasView>} */
const VIEWS = new Set();

/** Redraws every canvas (after the colours changed). */
export function redrawAllCanvases() {
  for (const view of VIEWS) view.requestRedraw();
}

export class CanvasView {
  /**
   * @param {HTMLCanvasElement} canvas sized by CSS (width) and by `setHeight` (height)
   * @param {DrawFn} draw
   */
  constructor(canvas, draw) {
    this.canvas = canvas;
    this.draw = draw;
    const ctx = canvas.getContext('2d');
    if (!ctx) throw new Error('2D canvas is not available');
    this.ctx = ctx;
    this.widthCss = 0;
    this.heightCss = 0;
    this.dpr = 1;
    this.pending = 0;
    VIEWS.add(this);
    this.observer = new ResizeObserver(() => this.resize());
    this.observer.observe(canvas);
    this.resize();
  }

  /** Matches the backing store to the CSS size times devicePixelRatio. */
  resize() {
    const rect = this.canvas.getBoundingClientRect();
    const dpr = window.devicePixelRatio || 1;
    const widthPx = Math.max(1, Math.round(rect.width * dpr));
    const heightPx = Math.max(1, Math.round(rect.height * dpr));
    this.widthCss = rect.width;
    this.heightCss = rect.height;
    this.dpr = dpr;
    if (this.canvas.width !== widthPx || this.canvas.height !== heightPx) {
      this.canvas.width = widthPx;
      this.canvas.height = heightPx;
    }
    this.requestRedraw();
  }

  /** @param {number} heightCss */
  setHeight(heightCss) {
    const h = `${Math.max(1, Math.round(heightCss))}px`;
    if (this.canvas.style.height !== h) this.canvas.style.height = h;
  }

  /** Schedules one draw on the next animation frame, however often it is called before it. */
  requestRedraw() {
    if (this.pending) return;
    this.pending = requestAnimationFrame(() => {
      this.pending = 0;
      this.drawNow();
    });
  }

  drawNow() {
    const { ctx } = this;
    ctx.setTransform(this.dpr, 0, 0, this.dpr, 0, 0);
    ctx.clearRect(0, 0, this.widthCss, this.heightCss);
    if (this.widthCss > 0 && this.heightCss > 0) this.draw(ctx, this.widthCss, this.heightCss);
  }

  dispose() {
    this.observer.disconnect();
    if (this.pending) cancelAnimationFrame(this.pending);
  }
}
