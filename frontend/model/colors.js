// @ts-check
/**
 * Colours: one hue per event kind, lightness varied by name so neighbours stay distinguishable, and
 * one colour per gap cause (shared by the lanes, the legend and the gap table). Pure.
 */

/** Hue (degrees) and saturation (%) per event kind as the lanes route names them. */
const KIND_HUE = /** @type {Record<string, [number, number]>} */ ({
  cpu_op: [210, 55],
  user_annotation: [265, 40],
  python_function: [180, 30],
  runtime: [95, 50],
  driver: [75, 45],
  cuda_sync: [0, 60],
  kernel: [28, 75],
  memcpy: [330, 60],
  memset: [300, 45],
  gpu_user_annotation: [265, 30],
  trace_span: [0, 0],
  other: [0, 0],
});

/**
 * FNV-1a over UTF-16 units: a stable small hash for picking a shade.
 * @param {string} text
 */
export function hashString(text) {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** @type {Map<string, string>} */
const cache = new Map();

/**
 * Fill colour of an event. Merged coverage blocks (`merged`) are drawn desaturated: they stand for
 * several events and must not read as one.
 * @param {string} kind
 * @param {string} name
 * @param {boolean} merged
 */
export function eventColor(kind, name, merged) {
  const key = `${kind}\u0000${merged ? '' : name}\u0000${merged}`;
  let color = cache.get(key);
  if (color === undefined) {
    const [hue, sat] = KIND_HUE[kind] ?? KIND_HUE.other;
    const light = merged ? 62 : 48 + (hashString(name) % 5) * 6;
    color = `hsl(${hue} ${merged ? sat * 0.6 : sat}% ${light}%)`;
    if (cache.size > 5000) cache.clear();
    cache.set(key, color);
  }
  return color;
}

/**
 * Gap causes in the project's one order (the Python `formats.CAUSES`: legend, filters, reports), with
 * their colour and legend text.
 */
export const GAP_CAUSES = /** @type {const} */ ([
  { cause: 'dataloader', color: 'rgba(230, 81, 0, 0.30)', solid: '#e65100', text: 'waiting for the DataLoader' },
  { cause: 'comm', color: 'rgba(0, 131, 143, 0.28)', solid: '#00838f', text: 'host waiting on a collective (communication)' },
  { cause: 'sync', color: 'rgba(123, 31, 162, 0.28)', solid: '#7b1fa2', text: 'CPU synchronized with the GPU' },
  { cause: 'host', color: 'rgba(21, 101, 192, 0.22)', solid: '#1565c0', text: 'CPU had not launched the work yet' },
  { cause: 'launch', color: 'rgba(249, 168, 37, 0.35)', solid: '#f9a825', text: 'launched in time, reached the GPU late' },
  { cause: 'graph', color: 'rgba(109, 76, 65, 0.28)', solid: '#6d4c41', text: 'a bubble inside a replayed CUDA graph' },
  { cause: 'unlinked', color: 'rgba(97, 97, 97, 0.22)', solid: '#616161', text: 'no launch call in the trace' },
]);

/** @param {string} cause */
function causeOf(cause) {
  return GAP_CAUSES.find((c) => c.cause === cause) ?? GAP_CAUSES.find((c) => c.cause === 'unlinked') ?? GAP_CAUSES[0];
}

/**
 * Translucent fill of a gap cause (unknown causes are grey).
 * @param {string} cause
 */
export function gapColor(cause) {
  return causeOf(cause).color;
}

/**
 * Opaque colour of a gap cause, for swatches and text.
 * @param {string} cause
 */
export function gapSolid(cause) {
  return causeOf(cause).solid;
}

/**
 * What a gap cause means, for tooltips ('' for an unknown cause).
 * @param {string} cause
 */
export function gapText(cause) {
  return GAP_CAUSES.find((c) => c.cause === cause)?.text ?? '';
}
