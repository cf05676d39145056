// Unit tests for the <video> clip player's pure parts (web/clipvideo.js): the exact match of a
// presented picture's mediaTime to its sample, the sample whose range holds a time, the seek
// time half a frame into a sample, and which player the page picks. Run: node --test Tests/web/
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { sampleTicks, samplesByTicks, sampleAtMediaTime, sampleContaining, seekTime } from '../../web/clipvideo.js';
import { clipPlayerKind, clipPlayerNote } from '../../web/clipview.js';

// A clip as the server writes them: timescale 16000, millisecond times, a long first sample.
const TIMESCALE = 16000;
const times = [0, 0.123, 0.156, 0.189, 0.222, 0.257, 0.288, 0.323];
const samples = times.map((t, i) => ({ index: i, timestamp: t, duration: (times[i + 1] ?? t + 0.033) - t }));

test('a presented picture maps exactly to its sample by ticks, and a time between samples to none', () => {
  const byTicks = samplesByTicks(samples, TIMESCALE);
  assert.deepEqual(sampleTicks(samples, TIMESCALE).slice(0, 3), [0, 1968, 2496]);
  times.forEach((t, i) => assert.equal(sampleAtMediaTime(byTicks, 0, t, TIMESCALE), i));
  // Chromium gives mediaTime to the microsecond: still the same tick.
  assert.equal(sampleAtMediaTime(byTicks, 0, 0.123001, TIMESCALE), 1);
  assert.equal(sampleAtMediaTime(byTicks, 0, 0.14, TIMESCALE), -1, 'no neighbour is guessed');
  assert.equal(sampleAtMediaTime(byTicks, 0, NaN, TIMESCALE), -1);
});

test('a clip whose first sample is not at 0 is matched on a timeline starting at 0 too', () => {
  const shifted = samples.map((s) => ({ ...s, timestamp: s.timestamp + 10 }));
  const byTicks = samplesByTicks(shifted, TIMESCALE);
  const first = sampleTicks(shifted, TIMESCALE)[0];
  assert.equal(sampleAtMediaTime(byTicks, first, 10.156, TIMESCALE), 2);
  assert.equal(sampleAtMediaTime(byTicks, first, 0.156, TIMESCALE), 2);
});

test('the sample holding a time: its range [start, next start)', () => {
  assert.equal(sampleContaining(samples, 0), 0);
  assert.equal(sampleContaining(samples, 0.1229), 0);
  assert.equal(sampleContaining(samples, 0.123), 1);
  assert.equal(sampleContaining(samples, 0.2), 3);
  assert.equal(sampleContaining(samples, 99), samples.length - 1);
  assert.equal(sampleContaining(samples, -1), -1);
  assert.equal(sampleContaining([], 0), -1);
  const shifted = samples.map((s) => ({ ...s, timestamp: s.timestamp + 10 }));
  assert.equal(sampleContaining(shifted, 0.2), 3, 'times count from the first sample');
});

test('seeking goes half a frame into the sample, so its picture is not in doubt', () => {
  assert.equal(seekTime(samples, 0), 0.0615);
  assert.ok(Math.abs(seekTime(samples, 2) - (0.156 + 0.0165)) < 1e-9);
  const last = samples.length - 1;
  assert.ok(Math.abs(seekTime(samples, last) - (0.323 + 0.0165)) < 1e-9);
  for (let i = 0; i < samples.length; i += 1) assert.equal(sampleContaining(samples, seekTime(samples, i)), i);
});

test('the page picks WebCodecs in a secure context, else the <video>, and says which', () => {
  const decoder = function VideoDecoder() {};
  assert.equal(clipPlayerKind({ isSecureContext: true, VideoDecoder: decoder }, () => true), 'webcodecs');
  assert.equal(clipPlayerKind({ isSecureContext: false }, () => true), 'video');
  assert.equal(clipPlayerKind({ isSecureContext: true }, () => true), 'video');
  assert.equal(clipPlayerKind({ isSecureContext: false }, () => false), null);
  assert.match(clipPlayerNote('webcodecs'), /WebCodecs/);
  assert.match(clipPlayerNote('video', { isSecureContext: false }), /video element.*not HTTPS/);
});
