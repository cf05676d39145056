// Unit tests for the pure parts of the player (web/video.js). Run: node --test Tests/web/
import { test } from 'node:test';
import assert from 'node:assert/strict';

import {
  VideoMode,
  NEEDS_HTTPS,
  PLAYING_MSE,
  chooseVideoMode,
  parseStoredMode,
  videoWebSocketPath,
  frameFormat,
  expectedBinaryBytes,
  FramePairer,
  SeqMetaMap,
  KeyframeGate,
  BitrateMeter,
  formatBitrate,
  utf8Length,
  Ring,
} from '../../web/video.js';

const h264Meta = (seq, key, bytes, extra = {}) => JSON.stringify({
  type: 'frame', seq, capturedAt: 1, width: 640, height: 480, detections: [],
  video: { format: 'h264', key, bytes, ...(key ? { codec: 'avc1.64001f' } : {}) }, ...extra,
});

test('H.264 is the default where the context is secure and VideoDecoder exists', () => {
  assert.deepEqual(chooseVideoMode({ hasDecoder: true, secure: true }),
    { mode: 'h264', h264Available: true, mseAvailable: false, reason: null });
  assert.deepEqual(chooseVideoMode({ hasDecoder: true, secure: true, hasMSE: true }),
    { mode: 'h264', h264Available: true, mseAvailable: true, reason: null });
});

test('plain HTTP with Media Source Extensions plays H.264 through MSE and says why', () => {
  const choice = chooseVideoMode({ stored: 'h264', hasDecoder: false, secure: false, hasMSE: true, host: 'nas.local:8080' });
  assert.equal(choice.mode, 'mse');
  assert.equal(choice.h264Available, false);
  assert.equal(choice.mseAvailable, true);
  assert.ok(choice.reason.startsWith(PLAYING_MSE), choice.reason);
  assert.match(choice.reason, /nas\.local:8080 is not a secure context/);
  // The viewer's choice still counts: JPEG stays JPEG; MSE can be picked where WebCodecs exists.
  assert.equal(chooseVideoMode({ stored: 'jpeg', hasDecoder: false, secure: false, hasMSE: true }).mode, 'jpeg');
  assert.equal(chooseVideoMode({ requested: 'mse', hasDecoder: true, secure: true, hasMSE: true }).mode, 'mse');
  assert.equal(chooseVideoMode({ requested: 'mse', hasDecoder: true, secure: true, hasMSE: false }).mode, 'h264');
  assert.equal(videoWebSocketPath(VideoMode.MSE, '/cam/front/ws'), '/cam/front/ws?video=fmp4');
});

test('an fMP4 frame JSON is told apart and its fragment length checked', () => {
  const meta = { type: 'frame', seq: 3, video: { format: 'h264', bytes: 100 }, fmp4: { pts: 7200, bytes: 212 } };
  assert.equal(frameFormat(meta), 'mse');
  assert.equal(expectedBinaryBytes(meta), 212);
});

test('a remembered JPEG choice is kept; a remembered H.264 choice too', () => {
  assert.equal(chooseVideoMode({ stored: 'jpeg', hasDecoder: true, secure: true }).mode, 'jpeg');
  assert.equal(chooseVideoMode({ stored: 'h264', hasDecoder: true, secure: true }).mode, 'h264');
  assert.equal(chooseVideoMode({ stored: 'garbage', hasDecoder: true, secure: true }).mode, 'h264');
});

test('the page URL ?video= wins over the remembered choice, when H.264 is possible', () => {
  assert.equal(chooseVideoMode({ requested: 'jpeg', stored: 'h264', hasDecoder: true, secure: true }).mode, 'jpeg');
  assert.equal(chooseVideoMode({ requested: 'h264', stored: 'jpeg', hasDecoder: true, secure: true }).mode, 'h264');
  assert.equal(chooseVideoMode({ requested: 'h264', hasDecoder: true, secure: false }).mode, 'jpeg');
});

test('plain HTTP under another name stays on JPEG and says H.264 needs HTTPS', () => {
  // A non-secure context exposes no VideoDecoder at all; the reason must still be the HTTPS one.
  const choice = chooseVideoMode({ stored: 'h264', hasDecoder: false, secure: false, host: 'camera.lan:8080' });
  assert.equal(choice.mode, 'jpeg');
  assert.equal(choice.h264Available, false);
  assert.ok(choice.reason.startsWith(NEEDS_HTTPS), choice.reason);
  assert.match(choice.reason, /camera\.lan:8080/);
  assert.equal(NEEDS_HTTPS, 'H.264 needs HTTPS here');
});

test('a secure context without WebCodecs stays on JPEG and says so', () => {
  const choice = chooseVideoMode({ hasDecoder: false, secure: true });
  assert.equal(choice.mode, 'jpeg');
  assert.match(choice.reason, /VideoDecoder/);
  assert.ok(!choice.reason.includes(NEEDS_HTTPS));
});

test('parseStoredMode accepts only the two modes', () => {
  assert.equal(parseStoredMode('jpeg'), 'jpeg');
  assert.equal(parseStoredMode('h264'), 'h264');
  assert.equal(parseStoredMode('H264'), null);
  assert.equal(parseStoredMode(null), null);
});

test('the WebSocket path asks for H.264 only in H.264 mode', () => {
  assert.equal(videoWebSocketPath(VideoMode.H264), '/ws?video=h264');
  assert.equal(videoWebSocketPath(VideoMode.JPEG), '/ws');
  assert.equal(videoWebSocketPath('h264', '/cam/front/ws'), '/cam/front/ws?video=h264');
});

test('frameFormat and expectedBinaryBytes read either kind of frame JSON', () => {
  assert.equal(frameFormat(JSON.parse(h264Meta(1, true, 10))), 'h264');
  assert.equal(expectedBinaryBytes(JSON.parse(h264Meta(1, true, 10))), 10);
  assert.equal(frameFormat({ type: 'frame', jpegBytes: 5 }), 'jpeg');
  assert.equal(expectedBinaryBytes({ type: 'frame', jpegBytes: 5 }), 5);
  assert.equal(expectedBinaryBytes({ type: 'frame' }), undefined);
});

test('each access unit is paired with the JSON right before it', () => {
  const pairer = new FramePairer();
  assert.equal(pairer.text(h264Meta(7, true, 3)), true);
  const paired = pairer.binary(new Uint8Array([1, 2, 3]).buffer);
  assert.equal(paired.meta.seq, 7);
  assert.equal(paired.data.byteLength, 3);
  assert.equal(pairer.text(h264Meta(8, false, 2)), true);
  assert.equal(pairer.binary(new Uint8Array([4, 5])).meta.seq, 8);
  assert.deepEqual(pairer.stats, { paired: 2, unpaired: 0, sizeMismatch: 0 });
});

test('a binary without JSON, and a JSON whose binary never came, are never paired', () => {
  const pairer = new FramePairer();
  assert.deepEqual(pairer.binary(new Uint8Array(4)), { loss: 'unpaired' }); // no JSON at all
  pairer.text(h264Meta(1, true, 4));
  pairer.text(h264Meta(2, false, 2)); // 1's access unit never came
  const paired = pairer.binary(new Uint8Array(2));
  assert.equal(paired.meta.seq, 2, 'the binary goes with the newest JSON, never an older one');
  assert.deepEqual(pairer.binary(new Uint8Array(2)), { loss: 'unpaired' }); // that JSON is used up
  assert.equal(pairer.stats.unpaired, 3);
});

test('a binary of another length than the JSON says is dropped', () => {
  const pairer = new FramePairer();
  pairer.text(h264Meta(1, true, 100));
  const result = pairer.binary(new Uint8Array(99));
  assert.equal(result.loss, 'sizeMismatch');
  assert.equal(result.meta.seq, 1);
  assert.equal(pairer.stats.sizeMismatch, 1);
  pairer.text(JSON.stringify({ type: 'frame', seq: 2, jpegBytes: 3 }));
  assert.equal(pairer.binary({ size: 4 }).loss, 'sizeMismatch'); // a Blob-like JPEG
  pairer.text(JSON.stringify({ type: 'frame', seq: 3, jpegBytes: 3 }));
  assert.equal(pairer.binary({ size: 3 }).meta.seq, 3);
});

test('JSON that is not a frame, or not JSON, leaves the pending frame alone', () => {
  const pairer = new FramePairer();
  pairer.text(h264Meta(1, true, 1));
  assert.equal(pairer.text('{"type": "hello"}'), false);
  assert.equal(pairer.text('not json'), false);
  assert.equal(pairer.binary(new Uint8Array(1)).meta.seq, 1);
  pairer.text(h264Meta(2, true, 1));
  pairer.reset(); // a new connection
  assert.deepEqual(pairer.binary(new Uint8Array(1)), { loss: 'unpaired' });
});

test('SeqMetaMap gives each seq its own meta and forgets older ones', () => {
  const map = new SeqMetaMap();
  for (const seq of [10, 11, 12, 13]) map.set(seq, { seq });
  assert.deepEqual(map.take(11), { seq: 11 });
  assert.equal(map.size, 2, '10 (never decoded) is forgotten with 11');
  assert.equal(map.forgotten, 1);
  assert.equal(map.take(10), undefined, 'an older seq is gone');
  assert.equal(map.take(99), undefined);
  assert.equal(map.size, 0, 'taking a newer seq forgets everything before it');
});

test('SeqMetaMap is bounded', () => {
  const map = new SeqMetaMap(3);
  for (let seq = 1; seq <= 5; seq += 1) map.set(seq, { seq });
  assert.equal(map.size, 3);
  assert.equal(map.evicted, 2);
  assert.equal(map.take(2), undefined);
  assert.deepEqual(map.take(3), { seq: 3 });
});

test('KeyframeGate starts closed, opens on a keyframe, and closes again on a break until the next one', () => {
  const gate = new KeyframeGate();
  assert.equal(gate.admit(false), false);
  assert.equal(gate.admit(true), true);
  assert.equal(gate.admit(false), true);
  gate.wait('error');
  gate.wait('error'); // the same break: counted once
  assert.equal(gate.admit(false), false);
  assert.equal(gate.admit(false), false);
  assert.equal(gate.held, 3);
  assert.equal(gate.admit(true), true);
  gate.wait('queue');
  assert.deepEqual(gate.waits, { error: 1, queue: 1 });
  assert.equal(gate.totalWaits, 2);
  gate.restart(); // a new stream is no break
  assert.equal(gate.totalWaits, 2);
  assert.equal(gate.waiting, true);
});

test('BitrateMeter counts the bytes of the last window', () => {
  const meter = new BitrateMeter(3000);
  assert.equal(meter.bitsPerSecond(0), null);
  for (let t = 0; t <= 6000; t += 100) meter.add(1000, t); // 10 kB/s
  assert.equal(meter.bitsPerSecond(6000), 80_000); // the 30 messages in (3000, 6000]
  // Nothing arrives for a while: the rate falls to zero.
  assert.equal(meter.bitsPerSecond(9500), 0);
});

test('BitrateMeter over less than a window uses the time since the first byte', () => {
  const meter = new BitrateMeter(3000);
  meter.add(500, 1000);
  assert.equal(meter.bitsPerSecond(1100), null, 'too short to say');
  meter.add(500, 1500);
  assert.equal(meter.bitsPerSecond(2000), 8000);
  meter.reset();
  assert.equal(meter.bitsPerSecond(2000), null);
});

test('formatBitrate', () => {
  assert.equal(formatBitrate(850_400), '850 kbit/s');
  assert.equal(formatBitrate(1_254_000), '1.25 Mbit/s');
  assert.equal(formatBitrate(12_740_000), '12.7 Mbit/s');
  assert.equal(formatBitrate(null), '–');
});

test('utf8Length matches the bytes a WebSocket text message carries', () => {
  for (const text of ['', 'plain', '{"name":"Zoë"}', 'Ελένη', '名前', 'face 😀 x', '\ud800 lone']) {
    assert.equal(utf8Length(text), Buffer.byteLength(text, 'utf8'), text);
  }
});

test('Ring keeps the newest entries', () => {
  const ring = new Ring(3);
  for (let i = 0; i < 5; i += 1) ring.push(i);
  assert.deepEqual(ring.items, [2, 3, 4]);
});

test('the pairer tells of every frame lost between a JSON and its binary', () => {
  const losses = [];
  const pairer = new FramePairer({ onLoss: (reason, meta) => losses.push([reason, meta?.seq ?? null]) });
  pairer.text(h264Meta(1, true, 2));
  pairer.binary(new Uint8Array(2)); // fine
  pairer.text(h264Meta(2, false, 2));
  pairer.text(h264Meta(3, false, 2)); // 2's access unit never came
  pairer.binary(new Uint8Array(1)); // 3's is short
  pairer.binary(new Uint8Array(2)); // a binary with no JSON
  assert.deepEqual(losses, [['unpaired', 2], ['sizeMismatch', 3], ['unpaired', null]]);
});
