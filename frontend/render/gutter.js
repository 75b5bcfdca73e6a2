// @ts-check
/**
 * Lane labels on the left (with a collapse arrow on lanes that have nested rows), lane separators
 * and the vertical scrollbar of the lanes area.
 */
import { PIN_W } from '../model/lanes_hit.js';
import { GROUP_H, GUTTER_W, HEADER_H } from '../model/layout.js';
import { fitLabel } from '../model/lod.js';
import { COLORS } from './frame.js';

/**
 * @param {import('./frame.js').Frame} frame
 * @param {import('../model/layout.js').LaneBlock[]} blocks
 * @param {import('../model/layout.js').GroupBlock[]} [groups]
 * @param {Set<number>} [pinned] lane ids
 */
export function drawGutter(frame, blocks, groups = [], pinned = new Set()) {
  const { ctx, widths } = frame;
  ctx.fillStyle = COLORS.gutter;
  ctx.fillRect(0, HEADER_H, GUTTER_W, frame.heightCss - HEADER_H);
  ctx.textBaseline = 'middle';
  ctx.textAlign = 'left';
  ctx.strokeStyle = COLORS.gutterLine;
  ctx.lineWidth = 1;
  let previousKind = '';
  for (const b of blocks) {
    const y = HEADER_H + b.yCss - frame.scrollYCss;
    if (y > frame.heightCss || y + b.hCss < HEADER_H) {
      previousKind = b.kind;
      continue;
    }
    ctx.beginPath();
    ctx.moveTo(0, Math.round(y) + 0.5);
    ctx.lineTo(b.kind !== previousKind ? frame.widthCss : GUTTER_W, Math.round(y) + 0.5);
    ctx.stroke();
    previousKind = b.kind;
    ctx.fillStyle = b.kind === 'gpu' ? COLORS.gpuLabel : COLORS.text;
    const arrow = b.collapsible ? (b.collapsed ? '\u25b8 ' : '\u25be ') : '  ';
    ctx.fillText(arrow + fitLabel(b.label, GUTTER_W - 26 - PIN_W, widths), 6, y + 11);
    drawPin(ctx, GUTTER_W - PIN_W / 2 - 2, y + 11, pinned.has(b.laneId));
  }
  ctx.save();
  ctx.beginPath();
  ctx.rect(0, HEADER_H, frame.widthCss, frame.heightCss - HEADER_H);
  ctx.clip();
  for (const g of groups) {
    const y = HEADER_H + g.yCss - frame.scrollYCss;
    if (y > frame.heightCss || y + GROUP_H < HEADER_H) continue;
    ctx.fillStyle = COLORS.laneAlt;
    ctx.fillRect(0, y, frame.widthCss, GROUP_H);
    ctx.fillStyle = COLORS.axisText;
    const noun = g.lanes === 1 ? 'lane' : 'lanes';
    ctx.fillText(`${g.collapsed ? '\u25b8' : '\u25be'} ${g.label} (${g.lanes} ${noun}${g.collapsed ? ', click to show' : ''})`, 6, y + GROUP_H / 2);
    ctx.beginPath();
    ctx.moveTo(0, Math.round(y + GROUP_H) - 0.5);
    ctx.lineTo(frame.widthCss, Math.round(y + GROUP_H) - 0.5);
    ctx.stroke();
  }
  ctx.restore();
  ctx.beginPath();
  ctx.moveTo(GUTTER_W - 0.5, HEADER_H);
  ctx.lineTo(GUTTER_W - 0.5, frame.heightCss);
  ctx.stroke();
}

/**
 * A pin (head and needle): solid when the lane is pinned to the top, faint when it can be.
 * @param {CanvasRenderingContext2D} ctx @param {number} x @param {number} y @param {boolean} on
 */
function drawPin(ctx, x, y, on) {
  ctx.save();
  ctx.globalAlpha = on ? 1 : 0.3;
  ctx.fillStyle = on ? COLORS.stalled : COLORS.axisText;
  ctx.strokeStyle = ctx.fillStyle;
  ctx.beginPath();
  ctx.arc(x, y - 2, 3, 0, 2 * Math.PI);
  ctx.fill();
  ctx.beginPath();
  ctx.moveTo(x, y + 1);
  ctx.lineTo(x, y + 6);
  ctx.stroke();
  ctx.restore();
}

/**
 * @param {import('./frame.js').Frame} frame
 * @param {number} contentHCss height of all lanes
 */
export function drawScrollbar(frame, contentHCss) {
  const viewH = frame.heightCss - HEADER_H;
  if (contentHCss <= viewH) return;
  const thumbH = Math.max(20, (viewH * viewH) / contentHCss);
  const y = HEADER_H + ((viewH - thumbH) * frame.scrollYCss) / (contentHCss - viewH);
  frame.ctx.fillStyle = COLORS.scrollbar;
  frame.ctx.fillRect(frame.widthCss - 5, y, 4, thumbH);
}
