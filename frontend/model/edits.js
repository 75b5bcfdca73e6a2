// @ts-check
/**
 * The what-if edits read as the server reads them (tb_plugin/kinetoscope/analysis/whatif/edits.py, `parse_edit`):
 * the same spellings, limits and error messages, so an edit the server would refuse is refused in the page before
 * any request (tests/test_edit_grammar.py checks both read the same texts alike). Pure.
 */

export const MAX_NAME = 1000; // characters of a NAME or PATTERN
export const MAX_FACTOR = 100; // the largest scale factor an edit may give
export const ROOF_CATEGORIES = ['gemm', 'attention', 'conv', 'elementwise', 'norm', 'reduce', 'copy', 'other'];
export const SPELLINGS = ['dataloader=0', 'dataloader-workers=K', 'sync:NAME=0', 'sync:NAME*F', 'host:NAME*F',
  'kernel:PATTERN*F', 'kernel:in:OP*F', 'fuse:NAME', 'comm=hidden', 'roofline:CATEGORY>=P%', 'precision:bf16',
  'precision:fp16', 'graph', 'prep=overlap', 'warmup=median', 'straggler=median'];
const NOT_YET = ['comm=']; // spellings this version does not replay (comm= other than hidden)
/** Edits without a name or a factor: the text and its kind. */
const FIXED = new Map([['dataloader=0', 'dataloader'], ['straggler=median', 'straggler'], ['warmup=median', 'warmup'],
  ['graph', 'graph'], ['prep=overlap', 'prep'], ['comm=hidden', 'comm']]);

/**
 * @typedef {object} Edit
 * @property {string} kind dataloader, dataloader-workers, sync, host, kernel, kernel-in, fuse, comm, roofline,
 *   precision, graph, prep, warmup or straggler
 * @property {string} target NAME, PATTERN, CATEGORY or precision
 * @property {number} factor new length as a share (0 removes it); K for dataloader-workers; P as a share for roofline
 * @property {string} text the edit as written, trimmed
 */

/** An edit the server would refuse, with its message. */
export class EditError extends Error {}

/** The characters Python's `repr` escapes (not `str.isprintable`: control, format, private, unassigned, separators). */
const PY_UNPRINTABLE = /[\p{Cc}\p{Cf}\p{Cs}\p{Co}\p{Cn}\p{Zl}\p{Zp}\p{Zs}]/u;

/**
 * Python's `repr` of a string, as the server's messages quote the edit.
 * @param {string} s
 */
export function pyRepr(s) {
  const quote = s.includes("'") && !s.includes('"') ? '"' : "'";
  let out = '';
  for (const ch of s) {
    const code = /** @type {number} */ (ch.codePointAt(0));
    if (ch === '\\' || ch === quote) out += `\\${ch}`;
    else if (ch === '\n') out += '\\n';
    else if (ch === '\r') out += '\\r';
    else if (ch === '\t') out += '\\t';
    else if (ch !== ' ' && PY_UNPRINTABLE.test(ch)) {
      out += code < 0x100 ? `\\x${code.toString(16).padStart(2, '0')}`
        : code < 0x10000 ? `\\u${code.toString(16).padStart(4, '0')}` : `\\U${code.toString(16).padStart(8, '0')}`;
    } else out += ch;
  }
  return quote + out + quote;
}

// Python's whitespace (`str.isspace`), which `str.strip` and `float` take off the ends; JavaScript's trim differs
const PY_SPACE = '[\\t\\n\\v\\f\\r\\x1c-\\x20\\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]';
const PY_STRIP = new RegExp(`^${PY_SPACE}+|${PY_SPACE}+$`, 'g');

/** Python's `text.strip()`. @param {string} text */
export function pyStrip(text) {
  return text.replace(PY_STRIP, '');
}

const DIGITS = String.raw`\d(?:_?\d)*`;
const FLOAT = new RegExp(String.raw`^[+-]?(?:(?:${DIGITS}(?:\.(?:${DIGITS})?)?|\.${DIGITS})(?:[eE][+-]?${DIGITS})?|inf|infinity|nan)$`, 'i');

/**
 * Python's `float(text)`: the number, or null where Python raises ValueError.
 * @param {string} text
 */
export function pyFloat(text) {
  const t = pyStrip(text);
  if (!FLOAT.test(t)) return null;
  const lower = t.toLowerCase().replace(/^[+]/, '');
  if (/^-?(inf|infinity)$/.test(lower)) return lower.startsWith('-') ? -Infinity : Infinity;
  if (/nan$/.test(lower)) return NaN;
  return Number(t.replaceAll('_', ''));
}

/**
 * Reads one edit as the server does.
 * @param {string} text
 * @returns {Edit}
 * @throws {EditError} an unknown spelling, an empty name, or a factor that is not a number in [0, MAX_FACTOR]
 */
export function parseEdit(text) {
  const t = pyStrip(String(text ?? ''));
  const fixed = FIXED.get(t);
  if (fixed) return { kind: fixed, target: '', factor: 0, text: t };
  const workers = /^dataloader-workers=(\d{1,4})$/.exec(t);
  if (workers) {
    const k = Number(workers[1]);
    if (k < 1) throw new EditError(`${pyRepr(t)}: K must be at least 1`);
    return { kind: 'dataloader-workers', target: '', factor: k, text: t };
  }
  for (const kind of ['sync', 'host', 'kernel']) {
    if (t.startsWith(`${kind}:`)) return named(t, kind, t.slice(kind.length + 1));
  }
  if (t.startsWith('fuse:')) {
    const name = t.slice('fuse:'.length);
    if (!name || [...name].length > MAX_NAME) throw new EditError(`${pyRepr([...t].slice(0, 200).join(''))}: the name must have 1 to ${MAX_NAME} characters`);
    return { kind: 'fuse', target: name, factor: 0, text: t };
  }
  if (t.startsWith('roofline:')) return roofline(t);
  if (t === 'precision:bf16' || t === 'precision:fp16') return { kind: 'precision', target: t.split(':')[1], factor: 0, text: t };
  if (NOT_YET.some((p) => t.startsWith(p))) throw new EditError(`${pyRepr(t)}: this edit is not replayed; the replay knows ${SPELLINGS.join(', ')}`);
  throw new EditError(`${pyRepr([...t].slice(0, 200).join(''))} is not an edit; write one of ${SPELLINGS.join(', ')}`);
}

/**
 * `sync:`, `host:` and `kernel:` edits: NAME=0 or NAME*F.
 * @param {string} t @param {string} kind @param {string} body
 * @returns {Edit}
 */
function named(t, kind, body) {
  let name;
  let factor;
  if (body.endsWith('=0')) {
    name = body.slice(0, -2);
    factor = 0;
  } else {
    const star = body.lastIndexOf('*');
    if (star < 0) throw new EditError(`${pyRepr(t)}: write ${kind}:NAME*F or ${kind}:NAME=0`);
    name = body.slice(0, star);
    const number = body.slice(star + 1);
    const value = pyFloat(number);
    if (value === null) throw new EditError(`${pyRepr(t)}: ${pyRepr(number)} is not a number`);
    factor = value;
  }
  if (!name || [...name].length > MAX_NAME) throw new EditError(`${pyRepr(t)}: the name must have 1 to ${MAX_NAME} characters`);
  if (!(Number.isFinite(factor) && factor >= 0 && factor <= MAX_FACTOR)) {
    throw new EditError(`${pyRepr(t)}: the factor must be a number from 0 to ${MAX_FACTOR}`);
  }
  if (kind === 'kernel' && name.startsWith('in:')) {
    if (!name.slice(3)) throw new EditError(`${pyRepr(t)}: write kernel:in:OP*F`);
    return { kind: 'kernel-in', target: name.slice(3), factor, text: t };
  }
  return { kind, target: name, factor, text: t };
}

/**
 * `roofline:CATEGORY>=P%`.
 * @param {string} t
 * @returns {Edit}
 */
function roofline(t) {
  const m = /^roofline:([a-z]+)>=(\d{1,3}(?:\.\d{1,3})?)%$/.exec(t);
  if (!m) {
    throw new EditError(`${pyRepr([...t].slice(0, 200).join(''))}: write roofline:CATEGORY>=P% (CATEGORY one of ${ROOF_CATEGORIES.join(', ')})`);
  }
  const [, category, p] = m;
  if (!ROOF_CATEGORIES.includes(category)) throw new EditError(`${pyRepr(t)}: ${pyRepr(category)} is not a category; one of ${ROOF_CATEGORIES.join(', ')}`);
  const share = Number(p);
  if (!(share > 0 && share <= 100)) throw new EditError(`${pyRepr(t)}: P must be above 0 and at most 100`);
  return { kind: 'roofline', target: category, factor: share / 100, text: t };
}

/**
 * The first edit of `edits` the server would refuse, as its message; null when every one reads.
 * @param {string[]} edits
 */
export function firstEditError(edits) {
  for (const e of edits) {
    try {
      parseEdit(e);
    } catch (err) {
      if (err instanceof EditError) return err.message;
      throw err;
    }
  }
  return null;
}
