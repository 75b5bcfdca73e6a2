// @ts-check
/**
 * An event's `args` (from `event?args=1`) as rows of text for the selection panel: scalars as they
 * are, small lists on one line (`[98, 8, 1]`), anything nested as compact JSON, and call stacks
 * (one `;`-separated string in older traces, a list in newer ones) one frame per line.
 */

/** Keys whose value is a call stack. */
const STACK_KEYS = new Set(['call stack', 'stack']);

/**
 * @param {unknown} args the `args` object of an `event` answer (anything else gives no rows)
 * @returns {{key: string, text: string, multiline: boolean}[]} in the file's key order
 */
export function argRows(args) {
  if (!args || typeof args !== 'object' || Array.isArray(args)) return [];
  return Object.entries(args).map(([key, value]) => {
    if (STACK_KEYS.has(key.toLowerCase())) {
      const frames = Array.isArray(value) ? value.map(String) : String(value).split(';').map((f) => f.trim()).filter(Boolean);
      return { key, text: frames.join('\n'), multiline: frames.length > 1 };
    }
    return { key, text: argText(value), multiline: false };
  });
}

/** @param {unknown} value */
function argText(value) {
  if (value === null) return 'null';
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (Array.isArray(value) && value.every((v) => v === null || typeof v !== 'object')) {
    return `[${value.map((v) => (typeof v === 'string' ? JSON.stringify(v) : String(v))).join(', ')}]`;
  }
  return JSON.stringify(value);
}
