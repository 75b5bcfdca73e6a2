// @ts-check
/**
 * DOM building without markup: every string becomes a text node, so names from a trace can never
 * be parsed as HTML (they may contain `<img src=x onerror=...>`).
 */

/**
 * @typedef {Node | string | number | null | undefined | false} Child
 */

/**
 * Creates an element. `props`: `class`, `dataset`, `style` (object), `on<event>` listeners, DOM
 * properties listed in PROPERTIES, anything else as an attribute.
 * @template {keyof HTMLElementTagNameMap} K
 * @param {K} tag
 * @param {Record<string, any>} [props]
 * @param {...(Child | Child[])} children
 * @returns {HTMLElementTagNameMap[K]}
 */
export function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === 'class') node.className = String(value);
    else if (key === 'dataset') Object.assign(node.dataset, value);
    else if (key === 'style') Object.assign(node.style, value);
    else if (key.startsWith('on')) node.addEventListener(key.slice(2), value);
    else if (PROPERTIES.has(key)) /** @type {any} */ (node)[key] = value;
    else node.setAttribute(key, value === true ? '' : String(value));
  }
  append(node, ...children);
  return node;
}

/** Set as properties rather than attributes (their live state lives there). */
const PROPERTIES = new Set(['value', 'checked', 'selected', 'disabled', 'title', 'href', 'download', 'tabIndex']);

/**
 * Appends children; strings and numbers go in as text nodes.
 * @param {Node} parent
 * @param {...(Child | Child[])} children
 */
export function append(parent, ...children) {
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    parent.appendChild(typeof child === 'string' || typeof child === 'number' ? document.createTextNode(String(child)) : child);
  }
}

/**
 * Replaces a node's children, skipping null, undefined and false as `append` does (the DOM's own
 * `replaceChildren` writes them as the text "null").
 * @param {Element} parent
 * @param {...(Child | Child[])} children
 */
export function replace(parent, ...children) {
  parent.replaceChildren();
  append(parent, ...children);
}

/**
 * A message box: kind is `info`, `warn` or `error`.
 * @param {'info' | 'warn' | 'error'} kind
 * @param {...Child} text
 */
export function message(kind, ...text) {
  return el('div', { class: `ks-msg ks-${kind}`, role: kind === 'error' ? 'alert' : 'status' }, ...text);
}

/**
 * What a panel says when the trace on screen failed to load: the error itself is in the header, once.
 * @returns {HTMLElement}
 */
export function spanErrorNote() {
  return el('div', { class: 'ks-hint ks-span-error-note' }, 'Nothing to show: this trace failed to load (the header says why).');
}

/**
 * The readable text of an error for a message box.
 * @param {unknown} err
 */
export function errorText(err) {
  return err instanceof Error ? err.message : String(err);
}

/**
 * Makes a section fold to its heading when the heading is clicked (or Enter/Space on it); `setCollapsed`
 * folds it from code (a panel with nothing to show). Every `h3` child is the heading.
 * @param {HTMLElement} section
 * @returns {(collapsed: boolean, note?: string) => void} setCollapsed
 */
export function collapsible(section) {
  const heading = /** @type {HTMLElement | null} */ (section.querySelector(':scope > h3'));
  if (!heading) return () => {};
  const note = el('span', { class: 'ks-fold-note' });
  heading.append(note);
  heading.classList.add('ks-fold');
  heading.tabIndex = 0;
  heading.setAttribute('role', 'button');
  const set = (/** @type {boolean} */ collapsed, /** @type {string} */ text = '') => {
    section.classList.toggle('ks-collapsed', collapsed);
    heading.setAttribute('aria-expanded', String(!collapsed));
    note.textContent = text ? ` \u2014 ${text}` : '';
  };
  heading.addEventListener('click', () => set(!section.classList.contains('ks-collapsed')));
  heading.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' || e.key === ' ') {
      e.preventDefault();
      set(!section.classList.contains('ks-collapsed'));
    }
  });
  set(false);
  return set;
}
