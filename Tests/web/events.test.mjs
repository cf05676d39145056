// Unit tests for the Events card's pure helpers (web/events.js).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { eventsQuery, eventTitle, eventTimes, mergeEvents, boxCorners } from '../../web/events.js';

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
