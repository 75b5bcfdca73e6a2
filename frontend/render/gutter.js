// @ts-check
/**
 * Lane labels on the left (with a collapse arrow on lanes that have nested rows), lane separators
 * and the vertical scrollbar of the lanes area.
 */
import { GUTTER_W, HEADER_H } from '../model/layout.js';
import { fitLabel } from '../model/lod.js';
import { COLORS } from './frame.js';

/**
 * @param {import('./frame.js').Frame} frame
 * @param {import('../model/layout.js').LaneBlock[]} blocks
 */
export function drawGutter(frame, blocks) {
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
    ctx.fillText(arrow + fitLabel(b.label, GUTTER_W - 26, widths), 6, y + 11);
  }
  ctx.beginPath();
  ctx.moveTo(GUTTER_W - 0.5, HEADER_H);
  ctx.lineTo(GUTTER_W - 0.5, frame.heightCss);
  ctx.stroke();
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
