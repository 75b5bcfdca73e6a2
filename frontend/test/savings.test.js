import assert from 'node:assert/strict';
import test from 'node:test';

import { routeUrl } from '../api.js';
import { MAX_EDITS, parseEditsText, savingRows, selectionEdits, shareWindow, shareWindowText, sourceText, stepBars } from '../model/savings.js';

// the ResNet sample's first savings, as the summary route answers them
const SUMMARY = { savings: [
  { source: 'verdict', fix: '4 DataLoader workers', edits: ['dataloader-workers=4'], saving_us: 58984.667, steps: 6, saving_share: 0.3346,
    median_step_us: 115906.5, recorded_median_step_us: 176273.0, total_saving_us: 353908.0 },
  { source: 'insight:fusion', fix: 'fuse the kernels of Optimizer.step#SGD.step', edits: ['fuse:Optimizer.step#SGD.step'], saving_us: 3400,
    steps: 6, saving_share: 0.019, median_step_us: 173000, recorded_median_step_us: 176273.0, total_saving_us: 20400 },
  { source: 'verdict', fix: 'no DataLoader wait', edits: ['dataloader=0'], saving_us: 60366.5, steps: 6, saving_share: 0.3425,
    median_step_us: 115906.5, recorded_median_step_us: 176273.0, total_saving_us: 362199.0 },
  { fix: 42, edits: 'x' }, null] };

test('savings come largest first, malformed entries left out', () => {
  const rows = savingRows(SUMMARY);
  assert.deepEqual(rows.map((r) => r.edits[0]), ['dataloader=0', 'dataloader-workers=4', 'fuse:Optimizer.step#SGD.step']);
  assert.equal(rows[0].share, 0.3425);
  assert.equal(rows[0].beforeUs, 176273);
  assert.deepEqual(savingRows({}), []);
  assert.deepEqual(savingRows(null), []);
  assert.equal(sourceText('insight:fusion'), 'the fusion insight');
  assert.equal(sourceText('runner-up'), 'the runner-up');
});

test('the shares name the step they are of: the verdict\'s judged one, else the median step', () => {
  const judged = savingRows({ savings: [{ fix: 'a faster kernel', edits: ['kernel:k*0.5'], saving_us: 1208.8, saving_share: 0.1143,
    share_of: 'judged', share_base_us: 10578.8, recorded_median_step_us: 465716.6, median_step_us: 465000 }] });
  assert.equal(judged[0].shareOf, 'judged');
  assert.equal(shareWindowText(judged[0], (us) => `${(us / 1e3).toFixed(1)} ms`), 'shares of the 10.6 ms step the verdict judges');
  const rows = savingRows(SUMMARY); // an older answer: no share_of
  assert.equal(rows[0].shareOf, null);
  assert.match(shareWindowText(shareWindow({ share_of: 'replayed', share_base_us: 9e5 }), String), /replay's median step/);
  assert.equal(shareWindowText(rows[0], String), 'shares of the median step');
  assert.equal(shareWindowText(undefined, String), 'shares of the median step');
});

test('the edits box: one edit per line, bounded', () => {
  assert.deepEqual(parseEditsText('dataloader=0\n\n  sync:aten::item=0  \r\n'), { edits: ['dataloader=0', 'sync:aten::item=0'], error: null });
  assert.match(parseEditsText(Array(MAX_EDITS + 1).fill('dataloader=0').join('\n')).error, /at most 16/);
  assert.match(parseEditsText('kernel:' + 'x'.repeat(2000) + '*0.5').error, /characters/);
  // kernel names hold commas and spaces: only newlines separate edits
  assert.deepEqual(parseEditsText('kernel:void f<float, 4>(int, int)*0.5').edits, ['kernel:void f<float, 4>(int, int)*0.5']);
  // an edit the server cannot read is refused here, with the server's own message, and nothing is sent
  assert.deepEqual(parseEditsText('graph\nhost:aten::mm*lots'),
    { edits: [], error: "'host:aten::mm*lots': 'lots' is not a number" });
  assert.match(parseEditsText('prep=overlap\nwarp=9').error, /^'warp=9' is not an edit; write one of dataloader=0/);
});

test('repeated parameters in a route URL', () => {
  assert.equal(routeUrl('whatif', { span: 'ab', edit: ['dataloader=0', 'sync:aten::item=0'] }),
    'whatif?span=ab&edit=dataloader%3D0&edit=sync%3Aaten%3A%3Aitem%3D0');
});

test('step bars scale to the longest bar', () => {
  const bars = stepBars({ steps: [{ name: 'ProfilerStep#5', recorded_us: 200, predicted_us: 100 },
    { name: 'ProfilerStep#6', recorded_us: 100, predicted_us: 50 }, { name: 'bad', recorded_us: 'x' }] });
  assert.equal(bars.length, 2);
  assert.deepEqual(bars.map((b) => [b.recordedFrac, b.predictedFrac]), [[1, 0.5], [0.5, 0.25]]);
  assert.deepEqual(stepBars({ steps: [] }), []);
});

test('a selected CPU event offers its own host edits; other lanes and odd names none', () => {
  const frame = 'transformers/models/videomae/image_processing_videomae.py(235): preprocess';
  assert.deepEqual(selectionEdits({ laneKind: 'cpu', name: frame }).map((e) => e.edit), [`host:${frame}*0`, `host:${frame}*0.5`]);
  assert.deepEqual(selectionEdits({ laneKind: 'gpu', name: 'k' }), []);
  assert.deepEqual(selectionEdits({ laneKind: 'cpu', name: 'a\nb' }), []);
  assert.deepEqual(selectionEdits({ laneKind: 'cpu', name: 'x'.repeat(MAX_EDITS * 100) }), []);
  assert.deepEqual(selectionEdits(null), []);
  const [first] = parseEditsText(selectionEdits({ laneKind: 'cpu', name: 'aten::mm' })[0].edit).edits;
  assert.equal(first, 'host:aten::mm*0');
});
