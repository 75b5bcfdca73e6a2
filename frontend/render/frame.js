// @ts-check
/**
 * What every lanes draw function receives, plus the shared fonts and colours.
 */

/**
 * @typedef {object} Frame
 * @property {CanvasRenderingContext2D} ctx in CSS pixels
 * @property {import('../model/scale.js').TimeScale} scale maps the view window onto [x0Css, x1Css]
 * @property {number} widthCss
 * @property {number} heightCss
 * @property {import('../model/lanes.js').LanesData} data
 * @property {import('../model/lod.js').TextWidthCache} widths label widths in FONT
 * @property {number} scrollYCss vertical scroll of the lanes area
 * @property {(tUs: number) => boolean} stalledAt whether tUs lies in a stalled step
 */

export const FONT = '11px system-ui, -apple-system, "Segoe UI", sans-serif';
/** Labels are drawn only in rectangles at least this wide (a few characters and the ellipsis). */
export const MIN_LABEL_PX = 28;

/** The light palette (TensorBoard's default). */
const LIGHT = {
  background: '#ffffff',
  laneAlt: '#f6f7f9',
  grid: 'rgba(0, 0, 0, 0.07)',
  axisText: '#555',
  text: '#1f1f1f',
  gpuLabel: '#8a3c00',
  textOnFill: '#ffffff',
  gutter: '#fafafa',
  gutterLine: '#dddddd',
  step: '#90a4ae',
  stepAlt: '#b0bec5',
  stalled: '#d32f2f',
  loader: '#ef8f00',
  selection: '#000000',
  hover: 'rgba(0, 0, 0, 0.55)',
  flow: '#263238',
  scrollbar: 'rgba(0, 0, 0, 0.25)',
};

/** The palette under TensorBoard's dark mode: the same roles, light ink on dark ground. */
const DARK = {
  background: '#1e1f22',
  laneAlt: '#26282c',
  grid: 'rgba(255, 255, 255, 0.09)',
  axisText: '#b0b3b8',
  text: '#e3e3e3',
  gpuLabel: '#ffb77a',
  textOnFill: '#ffffff',
  gutter: '#232428',
  gutterLine: '#3a3c41',
  step: '#607d8b',
  stepAlt: '#78909c',
  stalled: '#ef5350',
  loader: '#ffa726',
  selection: '#ffffff',
  hover: 'rgba(255, 255, 255, 0.6)',
  flow: '#cfd8dc',
  scrollbar: 'rgba(255, 255, 255, 0.3)',
};

/** The colours every draw function reads; `useDarkColors` swaps them in place. */
export const COLORS = { ...LIGHT };

/** Switches the canvas palette (the caller redraws). @param {boolean} dark */
export function useDarkColors(dark) {
  Object.assign(COLORS, dark ? DARK : LIGHT);
}

