// Unit tests for the formatting in web/metrics.js (the server card). Run: node --test Tests/web/
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { formatBytes, renditionText, valueAt, formatMs, MISSING } from '../../web/metrics.js';

const state = {
  video: {
    viewers: { jpeg: 1, h264: 2 },
    encodeMs: { p50: 3.214, p99: null, count: 120 },
    bytesPerFrame: { jpeg: 45210.4, h264: 6120 },
    keyframes: { scheduled: 4, requested: 2 },
    skipsToKeyframe: 1,
    renditions: [
      { name: 'main', width: 640, height: 480, encoding: true, viewers: 2 },
      { name: 'low', width: 320, height: 240, encoding: false, viewers: 0 },
    ],
  },
};

test('the video metrics are read from their paths, and a p99 of null shows as missing', () => {
  assert.equal(valueAt(state, 'video.viewers.h264'), 2);
  assert.equal(formatMs(valueAt(state, 'video.encodeMs.p50')), '3.21');
  assert.equal(formatMs(valueAt(state, 'video.encodeMs.p99')), MISSING);
  assert.equal(valueAt({}, 'video.viewers.h264'), undefined, 'an old server has no video object');
});

test('formatBytes', () => {
  assert.equal(formatBytes(45210.4), '45.2 kB');
  assert.equal(formatBytes(850.4), '850 B');
  assert.equal(formatBytes(1_254_000), '1.25 MB');
  assert.equal(formatBytes(undefined), MISSING);
});

test('renditionText says name, size, whether it is encoding and its viewers', () => {
  assert.equal(renditionText(state.video.renditions[0]), 'main 640×480 · encoding · 2 viewers');
  assert.equal(renditionText(state.video.renditions[1]), 'low 320×240 · idle · 0 viewers');
  assert.equal(renditionText({ name: 'low', viewers: 1 }), 'low · 1 viewer');
  assert.equal(renditionText(null), MISSING);
});
