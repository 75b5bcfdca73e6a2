// @ts-check
/**
 * The hover box of the lanes and charts: a title and label/value rows, all inserted as text. It is placed in
 * the window (model/popup.js): beside the pointer, flipped where it would leave the window.
 */
import { placePopup } from '../model/popup.js';
import { el } from './dom.js';

export class Tooltip {
  /** @param {HTMLElement} container positioned (relative) ancestor of the box */
  constructor(container) {
    this.container = container;
    this.box = el('div', { class: 'ks-tooltip', role: 'tooltip', hidden: true });
    container.appendChild(this.box);
    // placed in the window: a scrolled page would leave it beside nothing
    window.addEventListener('scroll', () => this.hide(), { passive: true });
    this.key = '';
    this.at = { xCss: 0, yCss: 0 };
  }

  /** Whether the box is on screen. */
  get shown() {
    return !this.box.hidden;
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
    this.at = { xCss, yCss };
    this.place();
  }

  /** Places the box for the last pointer position (and again when rows are added: it grew). */
  place() {
    const rect = this.container.getBoundingClientRect();
    const p = placePopup(rect.left + this.at.xCss, rect.top + this.at.yCss, this.box.offsetWidth, this.box.offsetHeight,
      document.documentElement.clientWidth, window.innerHeight);
    this.box.style.left = `${p.left}px`;
    this.box.style.top = `${p.top}px`;
  }

  /** Adds rows to the box currently shown for `key` (details that arrived later). @param {string} key @param {[string, string][]} rows */
  extend(key, rows) {
    if (this.box.hidden || key !== this.key) return;
    for (const [label, value] of rows) this.box.appendChild(el('div', { class: 'ks-tooltip-row' }, el('span', {}, label), el('b', {}, value)));
    this.place();
  }

  hide() {
    this.box.hidden = true;
    this.key = '';
  }
}
