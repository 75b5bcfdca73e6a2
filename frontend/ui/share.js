// @ts-check
/**
 * Sharing: copy a link to this exact view, download the visible window as a Chrome trace (opens in
 * Perfetto and chrome://tracing), download the summary as Markdown.
 */
import { formatCount } from '../model/format.js';
import { LatestChannel, errorFromResponse, routeUrl } from '../api.js';
import { el, errorText } from './dom.js';
import { urlHost, writeUrl } from './urlsync.js';

/**
 * Saves a blob under a file name through a temporary object URL.
 * @param {Blob} blob @param {string} name
 */
function download(blob, name) {
  const url = URL.createObjectURL(blob);
  const a = el('a', { href: url, download: name, style: { display: 'none' } });
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}

/** @param {string | null} disposition */
function fileNameOf(disposition) {
  const m = /filename="?([^";]+)"?/.exec(disposition ?? '');
  return m ? m[1] : 'kinetoscope-window.json';
}

/** How long a note of what a click did stays on screen. */
const SAID_MS = 4000;

/** @param {import('./store.js').Store} store */
export function createShareButtons(store) {
  const feedback = el('span', { class: 'ks-feedback', 'aria-live': 'polite' });
  const linkBox = el('input', { class: 'ks-linkbox', readonly: true, hidden: true, 'aria-label': 'link to this view' });
  /** @param {string} text @param {boolean} [isError] */
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  let sayTimer;
  const say = (text, isError) => {
    feedback.textContent = text;
    feedback.classList.toggle('ks-error-text', Boolean(isError));
    // what happened fades after a while (an error stays until the next action): it describes one click, not the page
    clearTimeout(sayTimer);
    if (text && !isError && !text.endsWith('\u2026') && !text.endsWith(':')) sayTimer = setTimeout(() => say(''), SAID_MS);
  };

  const copy = el('button', { type: 'button', title: 'Copy a link that opens this run, span, window and selection', onclick: async () => {
    writeUrl(store.state);
    const href = urlHost().host.location.href;
    try {
      await navigator.clipboard.writeText(href);
      say('Link copied.');
      linkBox.hidden = true;
    } catch {
      linkBox.value = href; // clipboard refused (iframe permissions): let the user copy it by hand
      linkBox.hidden = false;
      linkBox.select();
      say('Copy the link:');
    }
  } }, 'Copy link');

  const exportTrace = el('button', { type: 'button', title: 'Download the visible window as a Chrome trace (Perfetto, chrome://tracing)', onclick: async () => {
    const { span, win } = store.state;
    if (!span) return;
    say('Exporting\u2026');
    try {
      const response = await fetch(routeUrl('export', { span: span.id, start_us: win.t0Us, end_us: win.t1Us }));
      if (!response.ok) throw await errorFromResponse(response);
      download(await response.blob(), fileNameOf(response.headers.get('content-disposition')));
      say('Window exported.');
    } catch (err) {
      say(`Export failed: ${errorText(err)}`, true);
    }
  } }, 'Export window (Perfetto)');

  const exportMd = el('button', { type: 'button', title: 'Download the summary as Markdown (the same text as kinetoscope report --format markdown)', onclick: async () => {
    const { summary, span } = store.state;
    if (!summary || !span) return;
    try {
      const response = await fetch(routeUrl('markdown', { span: span.id }));
      if (!response.ok) throw await errorFromResponse(response);
      const { markdown } = await response.json();
      download(new Blob([markdown], { type: 'text/markdown' }), `kinetoscope-${span.run}-${span.span ?? span.id}.md`.replace(/[^\w.-]+/g, '_'));
      say('Summary exported.');
    } catch (err) {
      say(`Export failed: ${errorText(err)}`, true);
    }
  } }, 'Export summary (.md)');

  // The whole file streams straight to the browser's downloads (any size, never held in the page).
  const exportWhole = el('a', { class: 'ks-button-link', download: '', title: 'Download the whole trace file (.json.gz, with every arg): any size',
    onclick: () => { if (exportWhole.hasAttribute('href')) say('Whole trace: see the browser\u2019s downloads.'); } }, 'Export whole trace');

  // Whether the visible window can be exported is asked as the window changes (debounced), so the
  // button says so before it is clicked.
  const check = new LatestChannel();
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  let timer;
  let fits = true; // the last check's answer for the visible window
  let empty = false; // ... and whether it holds no event at all
  const checkWindow = () => {
    clearTimeout(timer);
    timer = setTimeout(async () => {
      const { span, win, summary } = store.state;
      if (!span || !summary) return;
      try {
        const r = await check.run(async (signal) => {
          const response = await fetch(routeUrl('export', { span: span.id, start_us: win.t0Us, end_us: win.t1Us, check: 1 }), { signal });
          if (!response.ok) throw await errorFromResponse(response);
          return response.json();
        });
        if (r.stale) return;
        const { events, max_events: max } = r.value;
        fits = Boolean(r.value.fits);
        empty = Number(events) === 0;
        exportTrace.disabled = !fits || empty || !store.state.summary;
        exportTrace.title = empty ? 'The visible window holds no event: pan or zoom out to export one'
          : fits ? `Download the visible window (${formatCount(events)} events) as a Chrome trace (Perfetto, chrome://tracing)`
            : `The visible window holds ${formatCount(events)} events, more than ${formatCount(max)}: zoom in to export it, or export the whole trace`;
        exportTrace.textContent = empty ? 'Nothing to export here' : fits ? 'Export window (Perfetto)' : 'Window too large to export';
      } catch {
        // a failed check leaves the button as it was; the export itself reports its own error
      }
    }, 300);
  };

  const sync = () => {
    const ready = Boolean(store.state.summary);
    exportTrace.disabled = !ready || !fits || empty;
    exportMd.disabled = !ready;
    const { span, lanesReady, spanError } = store.state;
    // the server streams only a trace that loaded: before its lanes, or after it failed, there is nothing to get
    const loaded = Boolean(span && (lanesReady || ready) && !spanError);
    if (loaded && span) exportWhole.setAttribute('href', routeUrl('export', { span: span.id, whole: 1 }));
    else exportWhole.removeAttribute('href');
    exportWhole.toggleAttribute('hidden', !span);
    exportWhole.setAttribute('aria-disabled', String(!loaded));
    exportWhole.title = spanError ? 'This trace failed to load: there is no trace to export'
      : loaded ? 'Download the whole trace file (.json.gz, with every arg): any size' : 'Available once the trace has loaded';
  };
  store.subscribe((changed) => {
    if (changed.has('span')) {
      fits = true;
      empty = false;
    }
    sync();
    if (changed.has('win') || changed.has('summary')) checkWindow();
  });
  sync();
  return [copy, exportTrace, exportWhole, exportMd, feedback, linkBox];
}
