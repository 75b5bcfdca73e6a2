// @ts-check
/**
 * The critical path drawn over the lanes ("show the critical path"): each segment as a band on the lane it lies
 * on (host time on the thread that holds the steps, device work, launches and waits on their stream), coloured
 * by what held the step up then, with a connector where the path moves from one lane to another. Segments whose
 * lane is not drawn (collapsed, or not in the answer) keep only the strip under the step bar.
 */
import { PATH_COLORS } from '../model/critical_path.js';
import { GUTTER_W, HEADER_H } from '../model/layout.js';

const BAND_ALPHA = 0.16;
const EDGE_H = 3;

/**
 * @param {import('./frame.js').Frame} frame
 * @param {Map<number, import('../model/layout.js').LaneBlock>} byLane
 * @param {{startUs: number, endUs: number, kind: string, lane?: number}[]} path in time order
 */
export function drawPathOverlay(frame, byLane, path) {
  if (!path.length) return;
  const { ctx, scale, widthCss, heightCss } = frame;
  ctx.save();
  ctx.beginPath();
  ctx.rect(GUTTER_W, HEADER_H, widthCss - GUTTER_W, heightCss - HEADER_H);
  ctx.clip();
  /** @type {{x: number, y: number} | null} */
  let last = null;
  for (const s of path) {
    const b = s.lane === undefined ? undefined : byLane.get(s.lane);
    if (!b) { last = null; continue; }
    const x0 = scale.tToX(s.startUs);
    const x1 = Math.max(scale.tToX(s.endUs), x0 + 1);
    const y = HEADER_H + b.yCss - frame.scrollYCss;
    if (x1 < scale.x0Css || x0 > scale.x1Css || y > heightCss || y + b.hCss < HEADER_H) { last = null; continue; }
    const color = PATH_COLORS[s.kind] ?? PATH_COLORS.wait;
    ctx.globalAlpha = BAND_ALPHA;
    ctx.fillStyle = color;
    ctx.fillRect(x0, y, x1 - x0, b.hCss);
    ctx.globalAlpha = 1;
    ctx.fillRect(x0, y, x1 - x0, EDGE_H);
    if (last && Math.abs(last.y - y) > 1) {  // the path moves to another lane here
      ctx.strokeStyle = color;
      ctx.lineWidth = 1;
      ctx.beginPath();
      ctx.moveTo(last.x + 0.5, last.y + EDGE_H / 2);
      ctx.lineTo(x0 + 0.5, y + EDGE_H / 2);
      ctx.stroke();
    }
    last = { x: x1, y };
  }
  ctx.restore();
}
