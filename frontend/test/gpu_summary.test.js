import assert from 'node:assert/strict';
import test from 'node:test';

import { GPU_FIGURES, MAX_SHOWN_DEVICES, deviceHeading, gpuSummaryRows, pctText } from '../model/gpu_summary.js';

// the ResNet sample's summary entry, as the summary route answers it
const RESNET = { device: 0, name: 'Tesla V100-DGXS-32GB', memory_bytes: 34084028416, memory_gb: 31.74, compute_capability: '7.0',
  window_us: 1065553, utilization_pct: 55.514085, kinetoscope_busy_pct: 60.569185, sm_efficiency_pct: 54.679041,
  occupancy_pct: 49.128005, tensor_cores_pct: 0, kinetoscope_tensor_cores_pct: 0 };

test('each figure is labelled, titled with what it measures, and written as torch-tb-profiler wrote it', () => {
  const [row] = gpuSummaryRows({ gpu_summary: [RESNET] });
  assert.equal(row.heading, 'GPU 0 \u00b7 Tesla V100-DGXS-32GB \u00b7 31.74 GB \u00b7 compute 7.0');
  assert.deepEqual(row.figures.map((f) => f.value), ['55.51%', '60.57%', '54.68%', '49.13%', '0.00%', '0.00%']);
  assert.ok(row.figures.every((f) => f.label && f.title.length > 20));
  assert.match(row.figures.find((f) => f.key === 'utilization_pct').title, /torch-tb-profiler/);
  assert.match(row.figures.find((f) => f.key === 'kinetoscope_busy_pct').title, /Kinetoscope/);
  assert.equal(GPU_FIGURES.length, row.figures.length);
});

test('missing properties and figures: left out of the heading, a dash for the figure', () => {
  const [row] = gpuSummaryRows({ gpu_summary: [{ device: 3, name: null, memory_gb: null, compute_capability: null, sm_efficiency_pct: null }] });
  assert.equal(row.heading, 'GPU 3');
  assert.equal(row.figures.find((f) => f.key === 'sm_efficiency_pct').value, '\u2013');
  assert.equal(pctText(NaN), '\u2013');
  assert.equal(pctText('12'), '\u2013');
  assert.equal(deviceHeading(null), 'GPU ?');
});

test('no summary, a hostile one, and many devices', () => {
  assert.deepEqual(gpuSummaryRows({}), []);
  assert.deepEqual(gpuSummaryRows({ gpu_summary: 'x' }), []);
  assert.deepEqual(gpuSummaryRows(null), []);
  const many = Array.from({ length: 40 }, (_, i) => ({ ...RESNET, device: i }));
  assert.equal(gpuSummaryRows({ gpu_summary: many }).length, MAX_SHOWN_DEVICES);
});

test('hardware counters: each measured figure right after the estimate it measures, the others last', () => {
  const measured = { utilization_pct: 60.015, sm_efficiency_pct: 55.2138, occupancy_pct: null, sm_throughput_pct: 36.909,
    dram_throughput_pct: 21.3548, tensor_active_pct: null, counters: [], counters_total: 5 };
  const [row] = gpuSummaryRows({ gpu_summary: [{ ...RESNET, measured }] });
  assert.deepEqual(row.figures.map((f) => f.key), ['utilization_pct', 'measured.utilization_pct', 'kinetoscope_busy_pct',
    'sm_efficiency_pct', 'measured.sm_efficiency_pct', 'occupancy_pct', 'tensor_cores_pct', 'kinetoscope_tensor_cores_pct',
    'measured.sm_throughput_pct', 'measured.dram_throughput_pct']);
  assert.equal(row.figures[1].value, '60.02%');
  assert.match(row.figures[1].title, /PM sampling/);
  const [hostile] = gpuSummaryRows({ gpu_summary: [{ ...RESNET, measured: { utilization_pct: '90' } }] });
  assert.equal(hostile.figures.length, GPU_FIGURES.length);  // not a number: not shown
  const [plain] = gpuSummaryRows({ gpu_summary: [{ ...RESNET, measured: 'x' }] });
  assert.equal(plain.figures.length, GPU_FIGURES.length);
});
