// @ts-check
/**
 * The Selection panel as a drawer at the right edge of the window, under the sticky header: it opens when
 * an event is selected (a click on the lanes, a table row, a link), so the details show where the user
 * is looking instead of far below the tables, and closes with its button (which clears the selection) or
 * Escape on the lanes.
 */
import { el } from './dom.js';

/**
 * @param {import('./store.js').Store} store
 * @param {HTMLElement} details the details panel's root (ui/details.js)
 * @param {HTMLElement[]} header the header's parts (its sticky line, the verdicts below it): the drawer's top
 *   follows the lowest bottom of those in view
 * @returns {HTMLElement}
 */
export function selectionDrawer(store, details, header) {
  const close = el('button', { type: 'button', class: 'ks-drawer-close', title: 'close (clears the selection)', 'aria-label': 'close the selection',
    onclick: () => store.set({ sel: null, selRow: null }) }, '\u2715');
  const root = el('aside', { class: 'ks-drawer', 'aria-label': 'Selection', hidden: true },
    el('div', { class: 'ks-drawer-head' }, el('h3', {}, 'Selection'), close), details);
  const place = () => {
    const topCss = Math.max(0, ...header.map((h) => h.getBoundingClientRect().bottom)) + 8;
    root.style.top = `${topCss}px`;
    root.style.maxHeight = `calc(100vh - ${topCss + 12}px)`;
  };
  store.subscribe((changed) => {
    if (!changed.has('sel') && !changed.has('selRow') && !changed.has('span')) return;
    const open = Boolean(store.state.sel) || store.state.selRow !== null;
    if (open) place();
    root.hidden = !open;
  });
  const resized = new ResizeObserver(place);
  for (const h of header) resized.observe(h);
  window.addEventListener('scroll', () => { if (!root.hidden) place(); }, { passive: true });
  return root;
}
