import assert from 'node:assert/strict';
import test from 'node:test';

import { GONE, findSpan, linkMismatch, linkedSpan, mergeRuns, resolvePick, runSpanCount, runsOf, skippedLinksNotice, spanChanged, spanLabel, spanList } from '../model/runs.js';

const span = (id, index, state = 'unloaded') => ({ id, index, span: String(index), file: `w.${index}.pt.trace.json`, state });
/** Two runs: a/w0 with spans 1 and 2, b/w0 and b/w1 with one span each. */
const LISTING = [
  { name: 'a', workers: [{ name: 'w0', spans: [span('a01', 1, 'ready'), span('a02', 2)] }] },
  { name: 'b', workers: [{ name: 'w0', spans: [span('b01', 1)] }, { name: 'w1', spans: [span('b11', 1)] }] },
];
const frozen = JSON.stringify(LISTING);

test('runsOf tolerates answers without runs; spanList flattens in listing order', () => {
  assert.deepEqual(runsOf({}), []);
  assert.deepEqual(runsOf(null), []);
  assert.deepEqual(spanList(LISTING).map((x) => `${x.run}/${x.worker}/${x.span.id}`), ['a/w0/a01', 'a/w0/a02', 'b/w0/b01', 'b/w1/b11']);
  assert.equal(findSpan(LISTING, 'b11').worker, 'w1');
  assert.equal(findSpan(LISTING, 'zzz'), null);
});

test('runSpanCount counts a run\'s spans over its workers', () => {
  assert.equal(runSpanCount(LISTING, 'a'), 2);
  assert.equal(runSpanCount(LISTING, 'b'), 2, 'one span in each of two workers');
  assert.equal(runSpanCount(LISTING, 'gone'), 0);
});

test('resolvePick falls back to the first worker and span of a changed run', () => {
  assert.equal(resolvePick(LISTING, 'b', 'w1', 'b11').span.id, 'b11');
  assert.equal(resolvePick(LISTING, 'b', '', null).span.id, 'b01');
  assert.equal(resolvePick(LISTING, 'b', 'w1', null).span.id, 'b11');
  assert.equal(resolvePick(LISTING, 'nope', 'w9', 'x').span.id, 'a01');
  assert.equal(resolvePick([], 'a', 'w0', 'a01'), null);
});

test('linkedSpan prefers the span id, then the run and worker, then the first span', () => {
  assert.equal(linkedSpan(LISTING, { span: 'b11', run: 'a' }).span.id, 'b11');
  assert.equal(linkedSpan(LISTING, { span: 'gone00000000', run: 'b', worker: 'w1' }).span.id, 'b11');
  assert.equal(linkedSpan(LISTING, { run: 'b' }).span.id, 'b01');
  assert.equal(linkedSpan(LISTING, {}).span.id, 'a01');
  assert.equal(linkedSpan([], { run: 'a' }), null);
});

test('mergeRuns shows a fresh listing as it is while the span on screen is in it', () => {
  const fresh = [...LISTING, { name: 'c', workers: [{ name: 'w0', spans: [span('c01', 1)] }] }];
  assert.equal(mergeRuns(LISTING, fresh, 'a02'), fresh);
  assert.equal(mergeRuns(LISTING, fresh, null), fresh);
  assert.equal(mergeRuns([], fresh, 'zzz'), fresh, 'a span never listed adds nothing');
});

test('mergeRuns keeps a vanished span on screen, marked gone, in its worker', () => {
  const fresh = [{ name: 'a', workers: [{ name: 'w0', spans: [span('a01', 1, 'ready'), span('a03', 2)] }] }, LISTING[1]];
  const merged = mergeRuns(LISTING, fresh, 'a02');
  assert.deepEqual(merged[0].workers[0].spans.map((s) => [s.id, s.state]), [['a01', 'ready'], ['a03', 'unloaded'], ['a02', GONE]]);
  assert.equal(merged[1], fresh[1]);
  assert.equal(JSON.stringify(LISTING), frozen, 'inputs are not modified');
  assert.equal(fresh[0].workers[0].spans.length, 2);
  // Refreshed again: the ghost comes from the shown listing and stays until the file is back.
  const again = mergeRuns(merged, fresh, 'a02');
  assert.deepEqual(again, merged);
  const back = [{ name: 'a', workers: [{ name: 'w0', spans: [span('a01', 1), span('a02', 2, 'unloaded')] }] }];
  assert.equal(mergeRuns(merged, back, 'a02'), back);
});

test('mergeRuns re-creates the run and worker of a vanished span when they are gone too', () => {
  const fresh = [LISTING[0]];
  const merged = mergeRuns(LISTING, fresh, 'b11');
  assert.deepEqual(merged.map((r) => r.name), ['a', 'b']);
  assert.deepEqual(merged[1].workers.map((w) => [w.name, w.spans.map((s) => `${s.id}:${s.state}`)]), [['w1', ['b11:gone']]]);
  const noWorker = mergeRuns(LISTING, [LISTING[0], { name: 'b', workers: [LISTING[1].workers[0]] }], 'b11');
  assert.deepEqual(noWorker[1].workers.map((w) => w.name), ['w0', 'w1']);
  assert.deepEqual(noWorker[1].workers[1].spans.map((s) => s.state), [GONE]);
});

test('spanLabel shows the index, the span number or file, and any state but ready', () => {
  assert.equal(spanLabel(span('x', 3, 'ready')), '3 \u00b7 3');
  assert.equal(spanLabel({ ...span('x', 1, GONE), span: null }), '1 \u00b7 w.1.pt.trace.json (gone)');
});

test('spanChanged: another version of the file, or a failed load being retried', () => {
  assert.equal(spanChanged({ version: 'a', state: 'ready' }, { version: 'b', state: 'unloaded' }), true);
  assert.equal(spanChanged({ version: 'a', state: 'ready' }, { version: 'a', state: 'ready' }), false);
  assert.equal(spanChanged({ version: 'a', state: 'error' }, { version: 'a', state: 'queued' }), true);
  assert.equal(spanChanged({ version: 'a', state: 'error' }, { version: 'a', state: 'error' }), false);
  assert.equal(spanChanged(null, { version: 'a' }), false);
  assert.equal(spanChanged({ version: 'a' }, undefined), false);
});

test('linkMismatch names what a link asked for and what opened instead', () => {
  assert.equal(linkMismatch({ span: 'b11', run: 'b' }, linkedSpan(LISTING, { span: 'b11', run: 'b' })), null);
  assert.equal(linkMismatch({}, linkedSpan(LISTING, {})), null, 'a plain page opens the first span silently');
  const gone = { span: 'gone00000000', run: 'b', worker: 'w1', t0Us: 5, t1Us: 9 };
  const text = linkMismatch(gone, linkedSpan(LISTING, gone));
  assert.match(text, /span gone00000000/);
  assert.match(text, /opened run \u201cb\u201d, worker \u201cw1\u201d/);
  assert.match(text, /window and selection were not applied/);
  const run = linkMismatch({ run: 'nope' }, linkedSpan(LISTING, { run: 'nope' }));
  assert.match(run, /run \u201cnope\u201d, which this logdir does not list: opened run \u201ca\u201d/);
  assert.doesNotMatch(run, /window/);
});

test('skippedLinksNotice counts the links not followed, names a few, and says how to follow them', () => {
  assert.equal(skippedLinksNotice(undefined), null);
  assert.equal(skippedLinksNotice({ count: 0, links: [] }), null);
  assert.equal(skippedLinksNotice({ count: 2, links: ['resnet', 'bert'], option: '--kinetoscope_allow_links_to' }),
    '2 links point outside the logdir and were not followed (resnet, bert). A shared logdir may not lead the server '
    + 'to other files on this machine; to read them, start TensorBoard with --kinetoscope_allow_links_to DIR.');
  const one = skippedLinksNotice({ count: 1, links: ['a'] });
  assert.match(one, /^1 link points outside the logdir and was not followed \(a\)\./);
  assert.match(skippedLinksNotice({ count: 7, links: ['a', 'b', 'c', 'd', 'e'] }), /\(a, b, c, and 4 more\)/);
});
