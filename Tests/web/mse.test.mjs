import test from 'node:test';
import assert from 'node:assert/strict';
import { PtsMetaMap, liveEdge, mediaSourceClass, hasMSE, sameFingerprint, LIVE_BEHIND_S, CATCH_UP_RATE } from '../../web/mse.js';

test('PtsMetaMap gives each pts its JSON once and forgets frames never presented', () => {
  const map = new PtsMetaMap(4);
  for (const pts of [0, 3000, 6000, 9000]) map.set(pts, { seq: pts / 3000 });
  assert.deepEqual(map.take(6000), { seq: 2 });
  assert.equal(map.skipped, 2); // 0 and 3000 were passed by
  assert.equal(map.take(6000), undefined);
  assert.equal(map.take(1234), undefined);
  assert.deepEqual(map.take(9000), { seq: 3 });
  for (let i = 0; i < 6; i += 1) map.set(i, {});
  assert.equal(map.size, 4);
});

test('PtsMetaMap tells whether a later frame was appended after the one presented', () => {
  const map = new PtsMetaMap();
  map.set(0, { seq: 1 });
  map.take(0);
  assert.equal(map.hasAfter(0), false); // nothing newer: the compositor has no later picture to show
  map.set(3000, { seq: 2 });
  map.set(6000, { seq: 3 });
  assert.equal(map.hasAfter(0), true);
  map.take(3000);
  assert.equal(map.hasAfter(3000), true);
  map.take(6000);
  assert.equal(map.hasAfter(6000), false);
  assert.equal(map.hasAfter(9000), false);
});

test('liveEdge jumps a playhead far behind to the newest frame and speeds up a little behind', () => {
  const far = liveEdge({ start: 0, end: 5, currentTime: 5 - LIVE_BEHIND_S - 0.05 });
  assert.ok(far.seekTo > 4.99 && far.seekTo < 5, far.seekTo);
  assert.equal(far.playbackRate, 1);
  const near = liveEdge({ start: 0, end: 5, currentTime: 4.9 });
  assert.equal(near.seekTo, null);
  assert.equal(near.playbackRate, CATCH_UP_RATE);
  // Back to 1x within about a frame of the end; between the two thresholds the rate stays as it is.
  assert.equal(liveEdge({ start: 0, end: 5, currentTime: 4.97, rate: CATCH_UP_RATE }).playbackRate, 1);
  assert.equal(liveEdge({ start: 0, end: 5, currentTime: 4.96, rate: CATCH_UP_RATE }).playbackRate, CATCH_UP_RATE);
  assert.equal(liveEdge({ start: 0, end: 5, currentTime: 4.96, rate: 1 }).playbackRate, 1);
  // A playhead before the buffer (a new range) goes into it.
  assert.ok(liveEdge({ start: 10, end: 10.2, currentTime: 3 }).seekTo >= 10);
});

test('liveEdge trims far behind the playhead, never past the newest keyframe', () => {
  assert.equal(liveEdge({ start: 0, end: 10, currentTime: 9.95, newestKeyTime: 8 }).removeBefore, 9.95 - 3);
  assert.equal(liveEdge({ start: 0, end: 10, currentTime: 9.95, newestKeyTime: 2 }).removeBefore, 2);
  assert.equal(liveEdge({ start: 0, end: 10, currentTime: 9.95, newestKeyTime: null }).removeBefore, null);
  assert.equal(liveEdge({ start: 0, end: 2, currentTime: 1.95, newestKeyTime: 1 }).removeBefore, null);
});

test('MediaSource is preferred, ManagedMediaSource (iPhone Safari) taken where it is missing', () => {
  class MS { static isTypeSupported() { return true; } }
  class MMS { static isTypeSupported() { return true; } }
  assert.equal(mediaSourceClass({ MediaSource: MS, ManagedMediaSource: MMS }), MS);
  assert.equal(mediaSourceClass({ ManagedMediaSource: MMS }), MMS);
  assert.equal(mediaSourceClass({}), null);
  assert.equal(hasMSE({ ManagedMediaSource: MMS }), true);
  assert.equal(hasMSE({ MediaSource: class { static isTypeSupported() { return false; } } }), false);
  assert.equal(hasMSE({}), false);
});

test('sameFingerprint: equal bytes only', () => {
  assert.equal(sameFingerprint(new Uint8ClampedArray([1, 2, 3]), new Uint8ClampedArray([1, 2, 3])), true);
  assert.equal(sameFingerprint(new Uint8ClampedArray([1, 2, 3]), new Uint8ClampedArray([1, 2, 4])), false);
  assert.equal(sameFingerprint(null, new Uint8ClampedArray([1])), false);
  assert.equal(sameFingerprint(new Uint8ClampedArray([1]), new Uint8ClampedArray([1, 1])), false);
});
