// Unit tests for web/h264.js's H264Player against a fake WebCodecs decoder:
// each picture goes out with the JSON of its own seq, keyframe first, and after
// an error, a loss or a full queue only from the next keyframe on. Run: node --test Tests/web/
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { H264Player, MAX_DECODE_QUEUE } from '../../web/h264.js';

/** A VideoDecoder stand-in: keeps the chunks it is given until the test lets them out. */
class FakeDecoder {
  static made = [];
  constructor({ output, error }) {
    this.output = output;
    this.error = error;
    this.state = 'unconfigured';
    this.queue = [];
    this.config = null;
    FakeDecoder.made.push(this);
  }
  get decodeQueueSize() {
    return this.queue.length;
  }
  configure(config) {
    if (this.state === 'closed') throw new Error('InvalidStateError');
    this.config = config;
    this.state = 'configured';
  }
  decode(chunk) {
    if (this.state !== 'configured') throw new Error('InvalidStateError: not configured');
    this.queue.push(chunk);
  }
  /** Decode the oldest `n` chunks: each comes out as a frame with the chunk's timestamp. */
  emit(n = this.queue.length) {
    for (const chunk of this.queue.splice(0, n)) this.output(new FakeFrame(chunk.timestamp));
  }
  fail(name = 'EncodingError') {
    this.state = 'closed';
    const error = new Error(`${name} from the fake`);
    error.name = name;
    this.error(error);
  }
  close() {
    this.state = 'closed';
  }
}

class FakeFrame {
  static open = new Set();
  constructor(timestamp) {
    this.timestamp = timestamp;
    this.closed = false;
    FakeFrame.open.add(this);
  }
  close() {
    this.closed = true;
    FakeFrame.open.delete(this);
  }
}

class FakeChunk {
  constructor({ type, timestamp, data }) {
    Object.assign(this, { type, timestamp, data });
  }
}

function meta(seq, key, { codec = 'avc1.64001f', detections } = {}) {
  return {
    type: 'frame', seq, capturedAt: 1000 + seq, width: 640, height: 480,
    detections: detections ?? [{ kind: 'template', label: `at-${seq}`, box: { x: seq / 1000, y: 0, w: 0.1, h: 0.1 } }],
    video: { format: 'h264', key, bytes: 4, ...(key && codec ? { codec } : {}) },
  };
}

function setup(options = {}) {
  FakeDecoder.made = [];
  FakeFrame.open.clear();
  const painted = [];
  const unsupported = [];
  const player = new H264Player({
    onFrame: (frame) => painted.push(frame),
    onUnsupported: (error, codec) => unsupported.push({ error, codec }),
    VideoDecoder: FakeDecoder,
    EncodedVideoChunk: FakeChunk,
    ...options,
  });
  const push = (seq, key, extra) => player.push(meta(seq, key, extra), new Uint8Array(4));
  const decoder = () => FakeDecoder.made.at(-1);
  return { player, painted, unsupported, push, decoder };
}

test('nothing goes to the decoder before the first keyframe; the keyframe configures it', () => {
  const { player, push, decoder } = setup();
  assert.equal(push(1, false), false);
  assert.equal(FakeDecoder.made.length, 0);
  assert.equal(push(2, true), true);
  assert.deepEqual(decoder().config, { codec: 'avc1.64001f', optimizeForLatency: true, hardwareAcceleration: 'no-preference' });
  assert.equal(push(3, false), true);
  assert.deepEqual(decoder().queue.map((c) => [c.type, c.timestamp]), [['key', 2], ['delta', 3]]);
  assert.equal(player.stats.heldForKeyframe, 1);
  assert.equal(player.waitingFor, null);
});

test('each decoded picture is handed on with the JSON of its own seq, however late it comes out', () => {
  const { painted, push, decoder } = setup();
  push(10, true);
  for (let seq = 11; seq <= 15; seq += 1) push(seq, false);
  decoder().emit(2); // the decoder runs two frames behind the wire
  push(16, false);
  decoder().emit();
  assert.deepEqual(painted.map((f) => f.meta.seq), [10, 11, 12, 13, 14, 15, 16]);
  for (const frame of painted) {
    assert.equal(frame.bitmap.timestamp, frame.meta.seq);
    assert.equal(frame.meta.detections[0].label, `at-${frame.meta.seq}`);
    assert.equal(frame.format, 'h264');
  }
});

test('a picture whose seq has no JSON is closed and never handed on', () => {
  const { player, painted, push, decoder } = setup();
  push(1, true);
  decoder().output(new FakeFrame(999));
  assert.equal(painted.length, 0);
  assert.equal(player.stats.orphans, 1);
  assert.equal(FakeFrame.open.size, 0, 'the orphan picture was closed');
});

test('a picture the decoder dropped leaves no JSON behind for a later one', () => {
  const { player, painted, push, decoder } = setup();
  push(1, true);
  push(2, false);
  push(3, false);
  decoder().queue.splice(1, 1); // 2 never comes out
  decoder().emit();
  assert.deepEqual(painted.map((f) => f.meta.seq), [1, 3]);
  assert.equal(player.metas.size, 0);
});

test('after a decode error, deltas wait for the next keyframe on a new decoder', () => {
  const { player, painted, push, decoder } = setup();
  push(1, true);
  push(2, false);
  const first = decoder();
  first.fail();
  assert.equal(player.stats.decodeErrors, 1);
  assert.equal(player.waitingFor, 'error');
  assert.equal(push(3, false), false);
  assert.equal(push(4, false), false);
  assert.equal(push(5, true), true);
  assert.notEqual(decoder(), first, 'a closed decoder is replaced');
  assert.equal(FakeDecoder.made.length, 2);
  push(6, false);
  // A late picture from the failed decoder is closed, not shown.
  const stale = new FakeFrame(2);
  first.output(stale);
  assert.equal(stale.closed, true);
  decoder().emit();
  assert.deepEqual(painted.map((f) => f.meta.seq), [5, 6]);
  assert.deepEqual(player.keyframeWaits, { error: 1 });
  assert.equal(player.stats.heldForKeyframe, 2);
});

test('a decode() that throws is handled like a decode error', () => {
  const { player, push, decoder } = setup();
  push(1, true);
  decoder().state = 'unconfigured'; // the next decode() throws
  assert.equal(push(2, false), false);
  assert.equal(player.stats.decodeErrors, 1);
  assert.equal(push(3, false), false);
  assert.equal(push(4, true), true);
});

test('when the decode queue is full, deltas are dropped until the next keyframe', () => {
  const { player, painted, push, decoder } = setup();
  push(1, true);
  for (let seq = 2; seq < 1 + MAX_DECODE_QUEUE; seq += 1) assert.equal(push(seq, false), true);
  assert.equal(decoder().decodeQueueSize, MAX_DECODE_QUEUE);
  assert.equal(push(100, false), false, 'the queue is full');
  decoder().emit(); // the decoder catches up ...
  assert.equal(push(101, false), false, '... but the chain is broken until a keyframe');
  assert.equal(push(102, true), true);
  assert.equal(FakeDecoder.made.length, 1, 'no error: the same decoder goes on');
  push(103, false);
  decoder().emit();
  const queued = Array.from({ length: MAX_DECODE_QUEUE }, (_, i) => i + 1);
  assert.deepEqual(painted.map((f) => f.meta.seq), [...queued, 102, 103]);
  assert.equal(player.stats.queueDrops, 1);
  assert.deepEqual(player.keyframeWaits, { queue: 1 });
});

test('a frame lost on the wire makes the player wait for a keyframe', () => {
  const { player, push, decoder } = setup();
  push(1, true);
  player.gap('lost');
  assert.equal(push(3, false), false);
  assert.equal(push(4, true), true);
  assert.deepEqual(decoder().queue.map((c) => c.timestamp), [1, 4]);
  assert.deepEqual(player.keyframeWaits, { lost: 1 });
});

test('a seq that does not increase cannot be bound to a picture: wait for a keyframe', () => {
  const { player, push } = setup();
  push(5, true);
  assert.equal(push(5, false), false);
  assert.equal(push(4, true), false);
  assert.equal(push(6, false), false);
  assert.equal(push(7, true), true);
  assert.equal(player.keyframeWaits.lost, 1);
});

test('a new codec string on a keyframe reconfigures; the same one does not', () => {
  const { player, push, decoder } = setup();
  push(1, true);
  push(2, false);
  push(3, true); // same codec
  assert.equal(FakeDecoder.made.length, 1);
  push(4, true, { codec: 'avc1.64000d' }); // a smaller rendition
  assert.equal(FakeDecoder.made.length, 2);
  assert.equal(decoder().config.codec, 'avc1.64000d');
  assert.equal(player.codec, 'avc1.64000d');
  assert.equal(FakeDecoder.made[0].state, 'closed');
  push(5, true, { codec: null }); // a keyframe that does not say: keep the current codec
  assert.equal(FakeDecoder.made.length, 2);
});

test('a first keyframe without a codec string cannot configure anything', () => {
  const { player, push } = setup();
  assert.equal(push(1, true, { codec: null }), false);
  assert.equal(FakeDecoder.made.length, 0);
  assert.equal(push(2, true), true);
  assert.equal(player.stats.configures, 1);
});

test('NotSupportedError from the decoder reports the codec and stops decoding', () => {
  const { player, unsupported, push, decoder } = setup();
  push(1, true);
  decoder().fail('NotSupportedError');
  assert.equal(unsupported.length, 1);
  assert.equal(unsupported[0].codec, 'avc1.64001f');
  assert.equal(push(2, true), false);
  assert.equal(player.stats.decodeErrors, 0);
});

test('reset starts a new stream: old pictures are dropped and the first keyframe is awaited, uncounted', () => {
  const { player, painted, push, decoder } = setup();
  push(50, true);
  push(51, false);
  const old = decoder();
  player.reset();
  assert.equal(old.state, 'closed');
  old.output(new FakeFrame(51));
  assert.equal(painted.length, 0);
  assert.equal(push(1, false), false, 'a restarted server may begin seq again: wait for its keyframe');
  assert.equal(push(1, true), true);
  decoder().emit();
  assert.deepEqual(painted.map((f) => f.meta.seq), [1]);
  assert.deepEqual(player.keyframeWaits, {});
  assert.equal(FakeFrame.open.size, 1, 'only the picture handed on is open (its owner closes it)');
});

test("a joiner's catch-up on a camera's stream is decoded past the queue limit and every picture keeps its JSON", () => {
  const { player, painted, push, decoder } = setup();
  player.catchUp(300); // the server sends 200..300 at once, starting on the camera's keyframe
  push(200, true);
  for (let seq = 201; seq <= 300; seq += 1) assert.equal(push(seq, false), true, `catch-up frame ${seq}`);
  assert.equal(decoder().queue.length, 101);
  assert.equal(player.stats.queueDrops, 0);
  decoder().emit();
  assert.equal(painted.length, 101);
  assert.equal(player.stats.orphans, 0, 'no JSON was evicted while the burst waited in the decoder');
  assert.ok(painted.every((frame) => frame.meta.detections[0].label === `at-${frame.meta.seq}`));
  // Live again: the queue limit holds for frames after the catch-up once its last picture is out.
  for (let seq = 301; seq <= 301 + MAX_DECODE_QUEUE; seq += 1) push(seq, false);
  assert.equal(player.stats.queueDrops, 1);
});

test('live frames right after a catch-up still in the decoder are not dropped for the queue', () => {
  const { player, push, decoder } = setup();
  player.catchUp(130);
  push(100, true);
  for (let seq = 101; seq <= 130; seq += 1) push(seq, false);
  decoder().emit(5); // the burst is still being decoded when live frames come
  for (let seq = 131; seq <= 140; seq += 1) assert.equal(push(seq, false), true, `live frame ${seq}`);
  assert.equal(player.stats.queueDrops, 0);
  decoder().emit();
  for (let seq = 141; seq <= 141 + MAX_DECODE_QUEUE; seq += 1) push(seq, false);
  assert.equal(player.stats.queueDrops, 1, 'caught up: the limit holds again');
});
