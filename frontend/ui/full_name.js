// @ts-check
/**
 * A name the server cut at 1,000 characters, shown whole on demand: a "whole name" button beside the cut name
 * (its `name_key`) fetches it from the `name` route into a box of its own. Used by the Tables panel and the
 * Selection drawer.
 */
import { LatestChannel } from '../api.js';
import { getWhenReady } from '../loading.js';
import { formatCount } from '../model/format.js';
import { el, errorText, message } from './dom.js';

export class WholeName {
  /**
   * @param {import('./store.js').Store} store
   * @param {import('../api.js').Api} api
   */
  constructor(store, api) {
    this.store = store;
    this.api = api;
    this.channel = new LatestChannel();
    /** where the whole name shows (hidden until asked) */
    this.root = el('div', { class: 'ks-full-name', hidden: true });
  }

  /** Hides the box, and drops a fetch in flight (its answer would be another name's). */
  hide() {
    this.channel.cancel();
    this.root.hidden = true;
  }

  /** The button beside a cut name that shows it whole. @param {string} key its `name_key` */
  button(key) {
    return el('button', { type: 'button', class: 'ks-link ks-full-name-link', title: 'this name was cut at 1,000 characters: show it whole',
      onclick: (/** @type {Event} */ e) => {
        e.stopPropagation(); // not a click on what holds the name (a table row)
        this.show(key);
      } }, 'whole name');
  }

  /** Fetches a cut name whole (`name` route) and shows it. @param {string} key */
  async show(key) {
    const { span } = this.store.state;
    if (!span) return;
    const close = el('button', { type: 'button', class: 'ks-link', onclick: () => this.hide() }, 'close');
    try {
      const r = await this.channel.run((signal) => getWhenReady(this.api, 'name', { span: span.id, key }, signal));
      if (r.stale) return;
      const { name, chars, cut } = /** @type {any} */ (r).value;
      this.root.replaceChildren(el('div', { class: 'ks-full-name-head' },
        `The whole name (${formatCount(chars)} characters${cut ? ', the first 200,000 shown' : ''}) `, close),
      el('div', { class: 'ks-full-name-text' }, String(name)));
    } catch (err) {
      this.root.replaceChildren(message('error', `Name: ${errorText(err)}`), close);
    }
    this.root.hidden = false;
  }
}
