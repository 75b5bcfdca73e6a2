// @ts-check
/**
 * The hover box of the lanes and charts: a title and label/value rows, all inserted as text.
 */
import { el } from './dom.js';

export class Tooltip {
  /** @param {HTMLElement} container positioned (relative) ancestor of the box */
  constructor(container) {
    this.container = container;
    this.box = el('div', { class: 'ks-tooltip', role: 'tooltip', hidden: true });
    container.appendChild(this.box);
    this.key = '';
  }

  /**
   * @param {number} xCss position inside the container
   * @param {number} yCss
   * @param {string} title
   * @param {[string, string][]} rows
   * @param {string} [key] identity of the content; the same key keeps the DOM and only moves the box
   */
  show(xCss, yCss, title, rows, key) {
    if (!key || key !== this.key) {
      this.box.replaceChildren(
        el('div', { class: 'ks-tooltip-title' }, title),
        ...rows.map(([label, value]) => el('div', { class: 'ks-tooltip-row' }, el('span', {}, label), el('b', {}, value))),
      );
      this.key = key ?? '';
    }
    this.box.hidden = false;
    const w = this.box.offsetWidth;
    const maxX = this.container.clientWidth - w - 4;
    this.box.style.left = `${Math.max(4, Math.min(xCss + 14, maxX))}px`;
    this.box.style.top = `${yCss + 16}px`;
  }

  /** Adds rows to the box currently shown for `key` (details that arrived later). @param {string} key @param {[string, string][]} rows */
  extend(key, rows) {
    if (this.box.hidden || key !== this.key) return;
    for (const [label, value] of rows) this.box.appendChild(el('div', { class: 'ks-tooltip-row' }, el('span', {}, label), el('b', {}, value)));
  }

  hide() {
    this.box.hidden = true;
    this.key = '';
  }
}
