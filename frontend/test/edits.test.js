// @ts-check
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { EditError, firstEditError, parseEdit, pyFloat, pyRepr } from '../model/edits.js';

test('edits read as the server reads them', () => {
  assert.deepEqual(parseEdit('  graph '), { kind: 'graph', target: '', factor: 0, text: 'graph' });
  assert.deepEqual(parseEdit('host:preprocess (video.py:12)*0'), { kind: 'host', target: 'preprocess (video.py:12)', factor: 0, text: 'host:preprocess (video.py:12)*0' });
  assert.deepEqual(parseEdit('kernel:in:aten::mm*0.5'), { kind: 'kernel-in', target: 'aten::mm', factor: 0.5, text: 'kernel:in:aten::mm*0.5' });
  assert.deepEqual(parseEdit('sync:aten::item=0'), { kind: 'sync', target: 'aten::item', factor: 0, text: 'sync:aten::item=0' });
  assert.deepEqual(parseEdit('dataloader-workers=4'), { kind: 'dataloader-workers', target: '', factor: 4, text: 'dataloader-workers=4' });
  assert.deepEqual(parseEdit('roofline:gemm>=60%'), { kind: 'roofline', target: 'gemm', factor: 0.6, text: 'roofline:gemm>=60%' });
  assert.equal(parseEdit('host:f*1_0.5e-1').factor, 1.05);
});

test('refused edits carry the server\'s messages', () => {
  assert.throws(() => parseEdit('host:f*inf'), (e) => e instanceof EditError && e.message === "'host:f*inf': the factor must be a number from 0 to 100");
  assert.throws(() => parseEdit('dataloader-workers=0'), /K must be at least 1/);
  assert.throws(() => parseEdit('roofline:disk>=50%'), /'disk' is not a category/);
  assert.throws(() => parseEdit('comm=exposed'), /this edit is not replayed/);
  assert.throws(() => parseEdit("host:it's"), (e) => e instanceof EditError && e.message.startsWith('"host:it\'s": write host:NAME*F'));
  assert.equal(firstEditError(['graph', 'prep=overlap']), null);
  assert.match(/** @type {string} */ (firstEditError(['graph', 'fuse:'])), /the name must have 1 to 1000 characters/);
});

test('Python\'s float and repr', () => {
  assert.equal(pyFloat(' -2.5E3 '), -2500);
  assert.equal(pyFloat('0x10'), null);
  assert.equal(pyFloat(''), null);
  assert.equal(pyFloat('1__0'), null);
  assert.ok(Number.isNaN(pyFloat('NaN')));
  assert.equal(pyRepr('a\nb\\'), "'a\\nb\\\\'");
  assert.equal(pyRepr('both \' and "'), "'both \\' and \"'");
});
