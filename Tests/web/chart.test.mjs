// Unit tests for the pure parts of web/chart.js. Run: node --test Tests/web/
import { test } from 'node:test';
import assert from 'node:assert/strict';

import {
  sampleFromState,
  pruneSamples,
  niceCeiling,
  maxValue,
  seriesSegments,
  CHART_WINDOW_MS,
  MIN_Y_MAX,
} from '../../web/chart.js';

test('the window is two minutes', () => {
  assert.equal(CHART_WINDOW_MS, 120000);
});

test('sampleFromState takes the server fps, and a failed poll is a gap', () => {
  assert.deepEqual(sampleFromState({ fps: { capture: 30, processed: 29.5, sent: 29 } }, 5),
    { t: 5, capture: 30, processed: 29.5, sent: 29 });
  assert.deepEqual(sampleFromState({ fps: { capture: 30 } }, 6), { t: 6, capture: 30, processed: null, sent: null });
  assert.deepEqual(sampleFromState(null, 7), { t: 7, gap: true });
});

test('pruneSamples keeps the window plus one older sample', () => {
  const samples = [0, 10, 20, 30, 40].map((t) => ({ t }));
  assert.deepEqual(pruneSamples(samples, 45, 20).map((s) => s.t), [20, 30, 40]);
  assert.deepEqual(pruneSamples(samples, 40, 100).map((s) => s.t), [0, 10, 20, 30, 40]);
  assert.deepEqual(pruneSamples(samples, 1000, 20).map((s) => s.t), [40]);
  assert.deepEqual(pruneSamples([], 10, 20), []);
});

test('niceCeiling rounds up to 1, 2, 2.5, 5 x 10^n and never below the floor', () => {
  assert.equal(niceCeiling(0), MIN_Y_MAX);
  assert.equal(niceCeiling(NaN), MIN_Y_MAX);
  assert.equal(niceCeiling(7), 10);
  assert.equal(niceCeiling(10), 10);
  assert.equal(niceCeiling(16), 20);
  assert.equal(niceCeiling(21), 25);
  assert.equal(niceCeiling(31.5), 50);
  assert.equal(niceCeiling(60), 100);
  assert.equal(niceCeiling(120), 200);
  assert.equal(niceCeiling(3, 1), 5);
});

test('maxValue ignores gaps and missing values', () => {
  assert.equal(maxValue([{ t: 0, capture: 30, processed: 12, sent: null }, { t: 1, gap: true }, { t: 2, sent: 31 }]), 31);
  assert.equal(maxValue([]), 0);
});

test('seriesSegments maps time to x and value to y inside the plot area', () => {
  const area = { x: 10, y: 5, w: 120, h: 50 };
  const now = 1000;
  const window = 120;
  const samples = [{ t: 880, capture: 0 }, { t: 940, capture: 25 }, { t: 1000, capture: 50 }];
  const [segment, ...rest] = seriesSegments(samples, 'capture', now, window, area, 50);
  assert.equal(rest.length, 0);
  assert.deepEqual(segment, [[10, 55], [70, 30], [130, 5]]);
});

test('seriesSegments breaks the line at gaps and missing values, clamps to the area', () => {
  const area = { x: 0, y: 0, w: 100, h: 100 };
  const samples = [
    { t: -50, capture: 10 }, // older than the window: pinned to the left edge
    { t: 10, capture: 200 }, // above yMax: pinned to the top
    { t: 20, gap: true },
    { t: 30, capture: -5 }, // below zero: pinned to the bottom
    { t: 40, capture: null },
    { t: 50, capture: 50 },
  ];
  const segments = seriesSegments(samples, 'capture', 100, 100, area, 100);
  assert.deepEqual(segments, [[[0, 90], [10, 0]], [[30, 100]], [[50, 50]]]);
});
