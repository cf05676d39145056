// Unit tests for the Events card's pure helpers (web/events.js).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { eventsQuery, eventTitle, eventTimes, mergeEvents, boxCorners, clipURL } from '../../web/events.js';
import { canPlayClips, clipUnavailableReason, clipNote } from '../../web/clipview.js';

test('the list query follows the filters', () => {
  assert.equal(eventsQuery({}), '/api/events?limit=30');
  assert.equal(eventsQuery({ kind: 'template', text: ' logo ' }), '/api/events?kind=template&label=logo&limit=30');
  assert.equal(eventsQuery({ kind: 'face', text: 'Ada Lovelace' }), '/api/events?kind=face&name=Ada+Lovelace&limit=30');
  assert.equal(eventsQuery({ text: 'a&b' }), '/api/events?label=a%26b&limit=30');
});

test('titles name people, unknown faces and templates', () => {
  assert.equal(eventTitle({ kind: 'face', label: 'face', name: 'Ada' }), 'Ada');
  assert.equal(eventTitle({ kind: 'face', label: 'face' }), 'unknown face');
  assert.equal(eventTitle({ kind: 'template', label: 'logo' }), 'logo');
});

test('times say how long, or that it is still in view', () => {
  const at = (s) => `t${s}`;
  assert.equal(eventTimes({ startTime: 10, endTime: 13.25 }, at), 't10, 3.3 s');
  assert.equal(eventTimes({ startTime: 10, endTime: null }, at), 't10, in view');
  assert.equal(eventTimes({ startTime: 10 }, at), 't10, in view');
});

test('merging keeps one entry per id, the newest copy, newest first', () => {
  const a = { id: 'a', startTime: 1, endTime: null };
  const b = { id: 'b', startTime: 2 };
  const aEnded = { id: 'a', startTime: 1, endTime: 4 };
  const merged = mergeEvents([b, a], [aEnded, { id: 'c', startTime: 3 }]);
  assert.deepEqual(merged.map((e) => e.id), ['c', 'b', 'a']);
  assert.equal(merged[2].endTime, 4);
});

test('box corners turn clockwise about the centre', () => {
  const upright = boxCorners({ x: 0.25, y: 0.25, w: 0.5, h: 0.5 }, 0, 100, 100);
  assert.deepEqual(upright, [[25, 25], [75, 25], [75, 75], [25, 75]]);
  const turned = boxCorners({ x: 0.25, y: 0.25, w: 0.5, h: 0.5 }, 90, 100, 100).map((p) => p.map((v) => Math.round(v)));
  // Clockwise by 90° in image coordinates (y down): the top-left corner goes to the top-right.
  assert.deepEqual(turned[0], [75, 25]);
});

test('an event\'s clip: its URL, whether this page can play it, and a note when it is not whole', () => {
  assert.equal(clipURL('1763802000.123456-abc123'), '/api/events/1763802000.123456-abc123/clip.mp4');
  const decoder = function VideoDecoder() {};
  assert.equal(canPlayClips({ isSecureContext: true, VideoDecoder: decoder }), true);
  assert.equal(canPlayClips({ isSecureContext: false, VideoDecoder: decoder }), false, 'WebCodecs needs a secure context');
  assert.equal(canPlayClips({ isSecureContext: true }), false);
  assert.match(clipUnavailableReason({ isSecureContext: false }), /HTTPS/);
  assert.match(clipUnavailableReason({ isSecureContext: true }), /WebCodecs/);
  assert.equal(clipNote({ start: 1, duration: 4, bytes: 10, complete: true }), '');
  assert.match(clipNote({ complete: false }), /Still recording/);
  assert.match(clipNote({ complete: true, capped: true }), /length cap/);
  assert.match(clipNote({ complete: false, error: 'disk full' }), /cut short \(disk full\)/);
  assert.equal(clipNote(undefined), '');
});
