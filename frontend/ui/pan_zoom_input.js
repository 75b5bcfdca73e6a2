// @ts-check
/**
 * Wheel, drag and keys on a canvas showing a time window, shared by the main lanes and the Compare panel's
 * stacked lanes: the wheel zooms around the cursor (a mostly horizontal wheel pans), a press dragged past
 * the slop pans (and scrolls the lanes where the view scrolls), a press released before it is a click,
 * W/S zoom, A/D pan, 0 shows the view's home window and Escape clears what the view says. The window
 * arithmetic is `model/pan_zoom.js`; what a click, a hover or Escape means stays with the view.
 */
import { dragWindow, keyWindow, pastSlop, wheelPx, wheelWindow } from '../model/pan_zoom.js';

/** @typedef {import('../model/scale.js').Window} Window */

/**
 * @typedef {object} Gesture a drag that moves something else than the window, from one press
 * @property {(e: PointerEvent) => void} move the pointer moved past the slop
 * @property {() => void} click the press was released before the slop
 */

/**
 * @typedef {object} PanZoomView what the input moves and asks
 * @property {HTMLCanvasElement} canvas
 * @property {() => Window} win the window shown
 * @property {() => Window} bounds how far it may zoom out and pan
 * @property {() => import('../model/scale.js').TimeScale} scale the window onto the canvas (x0Css: the plot's left edge)
 * @property {(win: Window) => void} moveTo shows another window
 * @property {() => Window} home the window 0 shows
 * @property {() => void} escape what Escape does
 * @property {(e: PointerEvent | null) => void} hover the pointer over the canvas, no press (null: nothing hovered, the box closes)
 * @property {(e: PointerEvent) => void} click a press released before the slop
 * @property {() => boolean} [ready] false: wheel, presses and keys are left alone (nothing shown yet); always ready without it
 * @property {{yCss: () => number, by: (dyCss: number) => void}} [scroll] a view that scrolls vertically: Shift+wheel
 *   and the vertical part of a drag scroll it, and the slop counts both axes (only the horizontal one without it)
 * @property {(e: PointerEvent) => Gesture | null} [gesture] a press that drags something else than the window (null: a pan)
 * @property {boolean} [focusOnWheel] a wheel focuses the canvas while nothing else has the focus, so keys follow
 * @property {boolean} [keysAtPointer] W/S zoom around the pointer while it is over the plot (else around the middle)
 */

/**
 * Listens for wheel and pointer events on the view's canvas and returns its keydown handler: the caller
 * listens where the view's keys come from (its canvas for a view that acts only while focused; the
 * window for the main lanes). A key handled is prevented and goes no further up the page.
 * @param {PanZoomView} view
 * @returns {(e: KeyboardEvent) => void}
 */
export function attachPanZoom(view) {
  const canvas = view.canvas;
  const ready = () => !view.ready || view.ready();
  /** @type {{xCss: number, yCss: number, win: Window, usPerPx: number, scrollYCss: number, moved: boolean, gesture: Gesture | null} | null} */
  let drag = null;
  let pointerXCss = -1;

  canvas.addEventListener('wheel', (e) => {
    if (!ready()) return;
    e.preventDefault();
    if (view.focusOnWheel && document.activeElement === document.body) canvas.focus({ preventScroll: true });
    if (view.scroll && e.shiftKey) view.scroll.by(e.deltaY * wheelPx(e.deltaMode));
    else view.moveTo(wheelWindow(view.win(), view.bounds(), view.scale(), { deltaX: e.deltaX, deltaY: e.deltaY, deltaMode: e.deltaMode, xCss: e.offsetX }));
  }, { passive: false });

  canvas.addEventListener('pointerdown', (e) => {
    if (e.button !== 0 || !ready()) return;
    view.hover(null); // a press answers elsewhere (selection, zoom): no hover box left over it
    canvas.focus({ preventScroll: true });
    canvas.setPointerCapture(e.pointerId);
    drag = { xCss: e.offsetX, yCss: e.offsetY, win: view.win(), usPerPx: view.scale().usPerPx, scrollYCss: view.scroll?.yCss() ?? 0, moved: false,
      gesture: view.gesture?.(e) ?? null };
  });

  canvas.addEventListener('pointermove', (e) => {
    pointerXCss = e.offsetX;
    if (!drag) {
      view.hover(e);
      return;
    }
    const dxCss = e.offsetX - drag.xCss;
    const dyCss = view.scroll ? e.offsetY - drag.yCss : 0;
    if (!drag.moved && !pastSlop(dxCss, dyCss)) return;
    drag.moved = true;
    view.hover(null);
    if (drag.gesture) {
      drag.gesture.move(e);
      return;
    }
    view.moveTo(dragWindow(drag.win, drag.usPerPx, dxCss, view.bounds()));
    view.scroll?.by(drag.scrollYCss - dyCss - view.scroll.yCss());
  });

  canvas.addEventListener('pointerup', (e) => {
    const press = drag;
    drag = null;
    if (!press || press.moved) return;
    if (press.gesture) press.gesture.click();
    else view.click(e);
  });

  canvas.addEventListener('pointerleave', () => {
    pointerXCss = -1;
    if (!drag) view.hover(null);
  });

  return (e) => {
    const target = /** @type {HTMLElement} */ (e.target);
    const tag = target.tagName;
    if (e.ctrlKey || e.metaKey || e.altKey || tag === 'INPUT' || tag === 'SELECT' || tag === 'TEXTAREA' || target.isContentEditable || !ready()) return;
    if (e.key.toLowerCase() === 'escape') view.escape();
    else {
      const win = view.win();
      const scale = view.scale();
      const centerUs = view.keysAtPointer && pointerXCss >= scale.x0Css ? scale.xToT(pointerXCss) : (win.t0Us + win.t1Us) / 2;
      const next = keyWindow(e.key, win, view.bounds(), centerUs, view.home());
      if (!next) return;
      view.moveTo(next);
    }
    e.preventDefault();
    e.stopPropagation();
  };
}
