// @ts-check
/**
 * The step bar (ProfilerStep#N, stalled steps in red with a warning sign) and, beneath it, the
 * DataLoader waits (red inside stalled steps, amber otherwise). Pinned under the axis.
 */
import { AXIS_H, GUTTER_W, LOADER_H, STEP_H } from '../model/layout.js';
import { fitLabel } from '../model/lod.js';
import { COLORS, MIN_LABEL_PX } from './frame.js';

/** Prefix of a stalled step's label. */
export const STALL_MARK = '\u26a0 ';

/**
 * @param {import('./frame.js').Frame} frame
 */
export function drawStepBar(frame) {
  const { ctx, scale, data, widths } = frame;
  const s = data.steps;
  const y = AXIS_H + 1;
  ctx.fillStyle = COLORS.background;
  ctx.fillRect(0, AXIS_H, frame.widthCss, STEP_H + LOADER_H + 4);
  ctx.save();
  ctx.beginPath();
  ctx.rect(scale.x0Css, AXIS_H, scale.x1Css - scale.x0Css, STEP_H + LOADER_H + 4);
  ctx.clip();
  ctx.textBaseline = 'middle';
  for (let i = 0; i < s.name.length; i++) {
    const x0 = Math.max(scale.tToX(s.startUs[i]), scale.x0Css - 1);
    const x1 = Math.min(scale.tToX(s.endUs[i]), scale.x1Css + 1);
    if (x1 < scale.x0Css || x0 > scale.x1Css) continue;
    ctx.fillStyle = s.stalled[i] ? COLORS.stalled : i % 2 ? COLORS.stepAlt : COLORS.step;
    ctx.fillRect(x0, y, Math.max(x1 - x0 - 1, 1), STEP_H - 2);
    if (x1 - x0 >= MIN_LABEL_PX) {
      const text = fitLabel((s.stalled[i] ? STALL_MARK : '') + s.name[i], x1 - x0 - 8, widths);
      ctx.fillStyle = COLORS.textOnFill;
      ctx.fillText(text, x0 + 4, y + (STEP_H - 2) / 2);
    }
  }
  const dl = s.dataloader;
  const yl = AXIS_H + STEP_H + 1;
  for (let i = 0; i < dl.startUs.length; i++) {
    const x0 = scale.tToX(dl.startUs[i]);
    const x1 = Math.max(scale.tToX(dl.endUs[i]), x0 + 1);
    if (x1 < scale.x0Css || x0 > scale.x1Css) continue;
    ctx.fillStyle = frame.stalledAt((dl.startUs[i] + dl.endUs[i]) / 2) ? COLORS.stalled : COLORS.loader;
    ctx.fillRect(x0, yl, x1 - x0, LOADER_H - 2);
  }
  ctx.restore();
  drawHeaderLabels(ctx);
}

/** @param {CanvasRenderingContext2D} ctx */
function drawHeaderLabels(ctx) {
  ctx.fillStyle = COLORS.gutter;
  ctx.fillRect(0, AXIS_H, GUTTER_W, STEP_H + LOADER_H + 4);
  ctx.fillStyle = COLORS.axisText;
  ctx.textAlign = 'right';
  ctx.textBaseline = 'middle';
  ctx.fillText('steps', GUTTER_W - 8, AXIS_H + STEP_H / 2);
  ctx.fillText('DataLoader', GUTTER_W - 8, AXIS_H + STEP_H + LOADER_H / 2);
  ctx.textAlign = 'left';
}
