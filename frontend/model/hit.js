// @ts-check
/**
 * Binary search over sorted columns and hit-testing with the drawing's own geometry. Pure.
 */

/**
 * First index i in [lo, hi) with arr[i] >= v (hi when none).
 * @param {ArrayLike<number>} arr sorted ascending
 * @param {number} v
 * @param {number} [lo=0]
 * @param {number} [hi=arr.length]
 * @returns {number}
 */
export function bisectLeft(arr, v, lo = 0, hi = arr.length) {
  while (lo < hi) {
    const mid = /** @type {number} */ ((lo + hi) >>> 1);
    if (arr[mid] < v) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * First index i in [lo, hi) with arr[i] > v (hi when none).
 * @param {ArrayLike<number>} arr sorted ascending
 * @param {number} v
 * @param {number} [lo=0]
 * @param {number} [hi=arr.length]
 * @returns {number}
 */
export function bisectRight(arr, v, lo = 0, hi = arr.length) {
  while (lo < hi) {
    const mid = /** @type {number} */ ((lo + hi) >>> 1);
    if (arr[mid] <= v) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * The index range [i0, i1) of intervals sorted by start that may overlap [t0Us, t1Us]: a superset,
 * since the search starts `maxDurUs` before t0Us (no interval starting earlier can reach t0Us).
 * Callers skip the few that end before t0Us.
 * @param {ArrayLike<number>} startUs sorted ascending
 * @param {number} maxDurUs the longest interval of the row
 * @param {number} t0Us
 * @param {number} t1Us
 * @returns {[number, number]}
 */
export function visibleRange(startUs, maxDurUs, t0Us, t1Us) {
  const i0 = bisectLeft(startUs, t0Us - maxDurUs);
  const i1 = bisectRight(startUs, t1Us, i0);
  return [i0, i1];
}

/**
 * The interval under `tUs`, or the nearest one within `tolUs` (so a 1-px kernel can be hovered).
 * Among intervals containing tUs the shortest wins: it is the one drawn on top.
 * @param {ArrayLike<number>} startUs sorted ascending
 * @param {ArrayLike<number>} durUs
 * @param {number} maxDurUs
 * @param {number} tUs
 * @param {number} tolUs
 * @returns {number} index, or -1
 */
export function hitInterval(startUs, durUs, maxDurUs, tUs, tolUs) {
  const [i0, i1] = visibleRange(startUs, maxDurUs, tUs - tolUs, tUs + tolUs);
  let best = -1;
  let bestDist = Infinity;
  let bestDur = Infinity;
  for (let i = i0; i < i1; i++) {
    const s = startUs[i];
    const e = s + durUs[i];
    const dist = tUs < s ? s - tUs : tUs > e ? tUs - e : 0;
    if (dist > tolUs) continue;
    if (dist < bestDist || (dist === bestDist && durUs[i] < bestDur)) {
      best = i;
      bestDist = dist;
      bestDur = durUs[i];
    }
  }
  return best;
}

/**
 * Index of the block containing yCss in a list of vertically stacked blocks, or -1.
 * @param {ArrayLike<{yCss: number, hCss: number}>} blocks sorted by yCss, not overlapping
 * @param {number} yCss
 */
export function blockAtY(blocks, yCss) {
  let lo = 0;
  let hi = blocks.length;
  while (lo < hi) {
    const mid = /** @type {number} */ ((lo + hi) >>> 1);
    if (blocks[mid].yCss + blocks[mid].hCss <= yCss) lo = mid + 1;
    else hi = mid;
  }
  return lo < blocks.length && blocks[lo].yCss <= yCss ? lo : -1;
}
