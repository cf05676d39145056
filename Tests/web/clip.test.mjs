// Unit tests for the event clip player's pure parts and its stepping logic: the fMP4
// demuxer (web/mp4.js) on MP4 bytes written here by a tiny box writer, the Sightline SEI
// reader (web/sei.js), the codec string, and web/clip.js's ClipPlayer against a fake
// WebCodecs decoder and the real Overlay on a fake canvas. Run: node --test Tests/web/
import { test } from 'node:test';
import assert from 'node:assert/strict';

import {
  demuxClip, parseAvcC, codecString, ClipFormatError, readSightlineSEI, removeEmulationPrevention, seiMessages,
  nalUnits, SIGHTLINE_SEI_UUID, ClipPlayer, isEventBox, keyframeBefore, decodePlan, eventSpan, bestSample, sampleAt, formatClipTime,
} from '../../web/clip.js';

// --- a tiny MP4 box writer -------------------------------------------------------------------

const ascii = (text) => [...text].map((c) => c.charCodeAt(0));
const u8 = (v) => [v & 0xff];
const u16 = (v) => [(v >>> 8) & 0xff, v & 0xff];
const u32 = (v) => [(v >>> 24) & 0xff, (v >>> 16) & 0xff, (v >>> 8) & 0xff, v & 0xff];
const u64 = (v) => [...u32(Math.floor(v / 2 ** 32)), ...u32(v % 2 ** 32)];
const zeros = (n) => new Array(n).fill(0);

/** Bytes from numbers, arrays and Uint8Arrays, nested to any depth. */
function bytesOf(parts) {
  const list = [];
  const add = (p) => {
    if (typeof p === 'number') list.push(p);
    else for (const q of p) add(q);
  };
  add(parts);
  return Uint8Array.from(list);
}

function box(type, ...parts) {
  const body = bytesOf(parts);
  return bytesOf([u32(8 + body.length), ascii(type), body]);
}

function fullBox(type, version, flags, ...parts) {
  return box(type, [version, (flags >>> 16) & 0xff, (flags >>> 8) & 0xff, flags & 0xff], ...parts);
}

/** A box with a 64-bit size (size field 1). */
function largeBox(type, ...parts) {
  const body = bytesOf(parts);
  return bytesOf([u32(1), ascii(type), u64(16 + body.length), body]);
}

const SPS = [0x67, 0x64, 0x00, 0x1f, 0xac, 0xd9, 0x40];
const PPS = [0x68, 0xeb, 0xe3, 0xcb];
const AVCC = bytesOf([1, 0x64, 0x00, 0x1f, 0xfc | 3, 0xe0 | 1, u16(SPS.length), SPS, 1, u16(PPS.length), PPS]);
const UUID = Uint8Array.from(SIGHTLINE_SEI_UUID.replace(/-/g, '').match(/../g), (h) => parseInt(h, 16));
const NON_SYNC = 0x00010000;
const SYNC_FLAGS = 0x02000000; // depends on no other sample
const DELTA_FLAGS = 0x01010000;

function videoTrack({ trackId = 1, timescale = 90000, width = 320, height = 240, entry = 'avc1', trex = {} } = {}) {
  const avc1 = box(entry, zeros(6), u16(1), zeros(16), u16(width), u16(height), u32(0x00480000), u32(0x00480000),
    zeros(4), u16(1), zeros(32), u16(0x18), u16(0xffff), box('avcC', AVCC));
  const stbl = box('stbl', fullBox('stsd', 0, 0, u32(1), avc1), fullBox('stts', 0, 0, u32(0)),
    fullBox('stsc', 0, 0, u32(0)), fullBox('stsz', 0, 0, u32(0), u32(0)), fullBox('stco', 0, 0, u32(0)));
  const trak = box('trak',
    fullBox('tkhd', 0, 3, u32(0), u32(0), u32(trackId), zeros(4), u32(0), zeros(52), u32(width << 16), u32(height << 16)),
    box('mdia',
      fullBox('mdhd', 0, 0, u32(0), u32(0), u32(timescale), u32(0), u16(0x55c4), u16(0)),
      fullBox('hdlr', 0, 0, u32(0), ascii('vide'), zeros(12), ascii('VideoHandler'), [0]),
      box('minf', fullBox('vmhd', 0, 1, zeros(8)), stbl)));
  const { duration = 0, size = 0, flags = 0 } = trex;
  const mvex = box('mvex', fullBox('trex', 0, 0, u32(trackId), u32(1), u32(duration), u32(size), u32(flags)));
  return { trak, mvex };
}

function header(options = {}) {
  const { trak, mvex } = videoTrack(options);
  return bytesOf([
    box('ftyp', ascii('isom'), u32(512), ascii('isom'), ascii('iso6'), ascii('mp41')),
    box('moov', fullBox('mvhd', 0, 0, zeros(96)), trak, options.noMvex ? [] : mvex),
  ]);
}

/**
 * One moof+mdat for `samples` ({data, duration, key}) the way libavformat writes them with
 * default_base_moof: tfhd with default-base-is-moof, tfdt, one trun with a data offset from
 * the moof. `style` picks which fields carry durations and flags.
 */
function fragment(sequence, baseDts, samples, { trackId = 1, style = 'trun', large = false } = {}) {
  const build = (dataOffset) => {
    let tfhdFlags = 0x020000;
    const tfhdFields = [u32(trackId)];
    let trunFlags = 0x000001 | 0x000200; // data offset, sizes
    const perSample = [];
    if (style === 'trun') {
      trunFlags |= 0x000100 | 0x000400; // durations, flags per sample
      for (const s of samples) perSample.push(u32(s.duration), u32(s.data.length), u32(s.key ? SYNC_FLAGS : DELTA_FLAGS));
    } else if (style === 'tfhd') {
      // libavformat's usual shape: default duration and flags in tfhd, the first sample's flags in trun.
      tfhdFlags |= 0x000008 | 0x000020;
      tfhdFields.push(u32(samples[0].duration), u32(DELTA_FLAGS));
      trunFlags |= 0x000004;
      for (const s of samples) perSample.push(u32(s.data.length));
    } else {
      for (const s of samples) perSample.push(u32(s.data.length)); // durations and flags from trex
    }
    const first = style === 'tfhd' ? [u32(samples[0].key ? SYNC_FLAGS : DELTA_FLAGS)] : [];
    return box('moof', fullBox('mfhd', 0, 0, u32(sequence)),
      box('traf', fullBox('tfhd', 0, tfhdFlags, ...tfhdFields), fullBox('tfdt', 1, 0, u64(baseDts)),
        fullBox('trun', 0, trunFlags, u32(samples.length), u32(dataOffset), ...first, ...perSample)));
  };
  const mdatHeader = large ? 16 : 8;
  const moof = build(build(0).length + mdatHeader);
  const data = bytesOf(samples.map((s) => s.data));
  return bytesOf([moof, large ? largeBox('mdat', data) : box('mdat', data)]);
}

/** A length-prefixed access unit: the given NAL units, each with a 4-byte length. */
function accessUnit(...nals) {
  return bytesOf(nals.map((nal) => [u32(nal.length), nal]));
}

function addEmulationPrevention(rbsp) {
  const out = [];
  let zeroRun = 0;
  for (const b of rbsp) {
    if (zeroRun >= 2 && b <= 3) {
      out.push(3);
      zeroRun = 0;
    }
    out.push(b);
    zeroRun = b === 0 ? zeroRun + 1 : 0;
  }
  return out;
}

const coded = (value) => [...new Array(Math.floor(value / 255)).fill(0xff), value % 255];

/** An SEI NAL unit holding `messages` ([{type, payload}]), with emulation prevention. */
function seiNal(messages) {
  const rbsp = messages.flatMap(({ type, payload }) => [...coded(type), ...coded(payload.length), ...payload]);
  return bytesOf([0x06, addEmulationPrevention([...rbsp, 0x80])]);
}

const sightlineMessage = (json) => ({ type: 5, payload: bytesOf([UUID, [...new TextEncoder().encode(JSON.stringify(json))]]) });

function frameJson(seq) {
  return { seq, capturedAt: 1000 + seq / 30, width: 320, height: 240,
    detections: [
      { kind: 'face', id: 3, score: 0.8, roll: 0, box: { x: 0.8, y: 0.8, w: 0.1, h: 0.1 } },
      { kind: 'template', label: 'sq', score: 0.9, box: { x: seq / 20, y: 0.25, w: 0.1, h: 0.2 } },
    ] };
}

/** A sample: SEI with its JSON, then an IDR (key) or non-IDR slice whose bytes say its index. */
function sample(index, key, duration = 3000) {
  const slice = key ? [0x65, 0x88, index, 0x11] : [0x41, 0x9a, index, 0x22];
  const data = accessUnit(...(key ? [SPS, PPS] : []), seiNal([sightlineMessage(frameJson(index))]), slice);
  return { data, duration, key, index };
}

/** `count` samples of 1/30 s at 90 kHz, keyframes every `gop`, in fragments starting at each keyframe. */
function clipBytes(count = 6, gop = 3, options = {}) {
  const samples = Array.from({ length: count }, (_, i) => sample(i, i % gop === 0));
  const parts = [header(options)];
  for (let start = 0, n = 1; start < count; start += gop, n += 1) {
    parts.push(fragment(n, start * 3000, samples.slice(start, start + gop), options));
  }
  return { bytes: bytesOf(parts), samples, fragmentEnds: parts.map((_, i) => bytesOf(parts.slice(0, i + 1)).length) };
}

// --- demuxer ---------------------------------------------------------------------------------

test('the demuxer lists every sample with its time, duration, size, keyflag and bytes', () => {
  for (const style of ['trun', 'tfhd', 'trex']) {
    const options = style === 'trex' ? { style, trex: { duration: 3000, flags: DELTA_FLAGS } } : { style };
    if (style === 'trex') options.trex.flags = SYNC_FLAGS; // every sample a keyframe by default
    const { bytes, samples } = clipBytes(6, 3, options);
    const clip = demuxClip(bytes);
    assert.equal(clip.samples.length, 6, style);
    assert.equal(clip.timescale, 90000);
    assert.equal(clip.fragments, 2);
    assert.equal(clip.truncated, false);
    assert.deepEqual(clip.samples.map((s) => s.timestamp), [0, 1, 2, 3, 4, 5].map((i) => (i * 3000) / 90000));
    assert.ok(clip.samples.every((s) => s.duration === 3000 / 90000), style);
    assert.deepEqual(clip.samples.map((s) => s.size), samples.map((s) => s.data.length));
    const expectedKeys = style === 'trex' ? [true, true, true, true, true, true] : [true, false, false, true, false, false];
    assert.deepEqual(clip.samples.map((s) => s.isKey), expectedKeys, style);
    clip.samples.forEach((s, i) => assert.deepEqual([...s.data], [...samples[i].data], `${style} sample ${i}`));
    assert.ok(Math.abs(clip.duration - 0.2) < 1e-9);
  }
});

test('the demuxer reads the track: codec string, avcC description, size, NAL length size', () => {
  const clip = demuxClip(clipBytes().bytes);
  assert.equal(clip.codec, 'avc1.64001f');
  assert.deepEqual([...clip.description], [...AVCC]);
  assert.equal(clip.width, 320);
  assert.equal(clip.height, 240);
  assert.equal(clip.lengthSize, 4);
  assert.equal(clip.trackId, 1);
});

test('a truncated last fragment is ignored, wherever the cut falls', () => {
  const { bytes, fragmentEnds } = clipBytes(9, 3);
  const [headerEnd, first, second, third] = fragmentEnds;
  // In the moof's header, in the middle of the moof, in the mdat, one byte short of the end.
  for (const cut of [second + 4, second + 40, third - 20, third - 1]) {
    const clip = demuxClip(bytes.subarray(0, cut));
    assert.equal(clip.samples.length, 6, `cut at ${cut}`);
    assert.equal(clip.truncated, true, `cut at ${cut}`);
  }
  const whole = demuxClip(bytes.subarray(0, second));
  assert.equal(whole.samples.length, 6);
  assert.equal(whole.truncated, false);
  const none = demuxClip(bytes.subarray(0, headerEnd));
  assert.equal(none.samples.length, 0, 'a clip with no fragment yet has no samples');
  assert.equal(none.duration, 0);
  assert.equal(demuxClip(bytes.subarray(0, first + 3)).samples.length, 3);
});

test('an mfra at the end, free boxes and 64-bit box sizes are read past', () => {
  const samples = [sample(0, true), sample(1, false)];
  const bytes = bytesOf([header(), box('free', zeros(5)), fragment(1, 0, samples, { large: true }),
    box('mfra', fullBox('tfra', 1, 0, zeros(12)), fullBox('mfro', 0, 0, u32(16)))]);
  const clip = demuxClip(bytes);
  assert.equal(clip.samples.length, 2);
  assert.equal(clip.truncated, false);
  assert.deepEqual([...clip.samples[1].data], [...samples[1].data]);
});

test('files that are not fragmented H.264 MP4 get a clear error', () => {
  const notMp4 = [
    new Uint8Array(0),
    Uint8Array.from([0xff, 0xd8, 0xff, 0xe0, 0, 16, 0x4a, 0x46, 0x49, 0x46, 0, 1]), // a JPEG
    new TextEncoder().encode('{"error": "not found"}'),
    Uint8Array.from({ length: 64 }, (_, i) => (i * 37) & 0xff),
  ];
  for (const bytes of notMp4) {
    assert.throws(() => demuxClip(bytes), (e) => e instanceof ClipFormatError && /not an MP4/.test(e.message));
  }
  assert.throws(() => demuxClip(header({ noMvex: true })), /not a fragmented MP4/);
  assert.throws(() => demuxClip(header({ entry: 'hev1' })), /not H\.264/);
  const ftypOnly = box('ftyp', ascii('isom'), u32(0));
  assert.throws(() => demuxClip(ftypOnly), /no complete moov/);
});

test('the codec string comes from the SPS profile, constraint and level bytes', () => {
  assert.equal(codecString(Uint8Array.from([0x67, 0x64, 0x00, 0x28, 0xac])), 'avc1.640028');
  assert.equal(codecString(Uint8Array.from([0x27, 0x42, 0xe0, 0x0d])), 'avc1.42e00d');
  assert.throws(() => codecString(Uint8Array.from([0x67, 0x64])), ClipFormatError);
  const avcC = parseAvcC(AVCC);
  assert.equal(avcC.codec, 'avc1.64001f');
  assert.equal(avcC.lengthSize, 4);
  assert.deepEqual([...avcC.sps[0]], SPS);
  assert.deepEqual([...avcC.pps[0]], PPS);
  const noSps = parseAvcC(Uint8Array.from([1, 0x4d, 0x40, 0x1e, 0xfd, 0xe0, 0]));
  assert.equal(noSps.codec, 'avc1.4d401e');
  assert.equal(noSps.lengthSize, 2);
});

// --- SEI -------------------------------------------------------------------------------------

test('emulation prevention bytes are removed only after two zeros', () => {
  const raw = [0, 0, 3, 1, 7, 0, 0, 3, 0, 0, 3, 3, 0, 3, 0, 0];
  assert.deepEqual([...removeEmulationPrevention(Uint8Array.from(raw))], [0, 0, 1, 7, 0, 0, 0, 0, 3, 0, 3, 0, 0]);
  const rbsp = [0, 0, 0, 0, 1, 0, 0, 2, 0, 0, 3, 5];
  assert.deepEqual([...removeEmulationPrevention(Uint8Array.from(addEmulationPrevention(rbsp)))], rbsp);
});

test('the Sightline SEI is found among other messages, NAL units and UUIDs', () => {
  const json = frameJson(42);
  const foreignUuid = { type: 5, payload: Uint8Array.from({ length: 40 }, () => 0) }; // zeros: needs emulation prevention
  const timing = { type: 1, payload: Uint8Array.from([0, 0, 0, 1]) };
  const unit = accessUnit(SPS, PPS, seiNal([foreignUuid]), seiNal([timing, foreignUuid, sightlineMessage(json)]),
    [0x65, 0x88, 0, 0]);
  assert.deepEqual(readSightlineSEI(unit), json);
  assert.equal(readSightlineSEI(accessUnit(seiNal([foreignUuid]), [0x65, 0x88])), null, 'no Sightline UUID');
  assert.equal(readSightlineSEI(accessUnit([0x65, 0x88], seiNal([sightlineMessage(json)]))), null,
    'an SEI after the first slice is not the frame\'s');
  const broken = { type: 5, payload: bytesOf([UUID, [...new TextEncoder().encode('{"seq": ')]]) };
  assert.equal(readSightlineSEI(accessUnit(seiNal([broken]), [0x41])), null, 'JSON that does not parse');
});

test('payload sizes of 255 and more are coded with 0xFF bytes', () => {
  const long = { ...frameJson(7), note: 'x'.repeat(600) };
  const message = sightlineMessage(long);
  assert.ok(message.payload.length > 510);
  const nal = seiNal([message]);
  assert.deepEqual([...nal.subarray(1, 4)], [5, 0xff, 0xff], 'type 5, then a size of two 0xFF bytes and a last one');
  assert.deepEqual(readSightlineSEI(accessUnit(nal, [0x65])), long);
  // A size of exactly 255: coded 0xFF 0x00.
  const exact = { seq: 1, pad: '' };
  exact.pad = 'y'.repeat(255 - 16 - JSON.stringify(exact).length);
  const exactMessage = sightlineMessage(exact);
  assert.equal(exactMessage.payload.length, 255);
  const messages = seiMessages(removeEmulationPrevention(seiNal([exactMessage]).subarray(1)));
  assert.equal(messages.length, 1);
  assert.equal(messages[0].payload.length, 255);
  assert.deepEqual(readSightlineSEI(accessUnit(seiNal([exactMessage]), [0x65])), exact);
});

test('NAL units of other length sizes, and a length that runs past the end', () => {
  const two = bytesOf([u16(3), [0x06, 0x05, 0x00], u16(2), [0x65, 0x88]]);
  assert.deepEqual(nalUnits(two, 2).map((n) => [...n]), [[0x06, 0x05, 0x00], [0x65, 0x88]]);
  const cut = bytesOf([u32(2), [0x65, 0x88], u32(50), [0x41]]);
  assert.deepEqual(nalUnits(cut).map((n) => [...n]), [[0x65, 0x88]]);
});

// --- timeline helpers --------------------------------------------------------------------------

const timed = (keys, step = 1 / 30) => keys.map((isKey, i) => ({ isKey, timestamp: 5 + i * step, duration: step }));

test('keyframes, decode plans and the sample at a time', () => {
  const samples = timed([true, false, false, true, false, false]);
  assert.equal(keyframeBefore(samples, 2), 0);
  assert.equal(keyframeBefore(samples, 3), 3);
  assert.equal(keyframeBefore(samples, 5), 3);
  assert.deepEqual(decodePlan(samples, 2, -1, true), { reset: false, from: 0 }, 'from nothing: the keyframe');
  assert.deepEqual(decodePlan(samples, 2, 1, false), { reset: false, from: 2 }, 'the next frame: just it');
  assert.deepEqual(decodePlan(samples, 5, 1, false), { reset: false, from: 3 }, 'past a keyframe: from it');
  assert.deepEqual(decodePlan(samples, 4, 3, true), { reset: false, from: 3 }, 'after a flush: from the keyframe');
  assert.deepEqual(decodePlan(samples, 1, 2, false), { reset: true, from: 0 }, 'back: afresh from the keyframe');
  assert.deepEqual(decodePlan(samples, 2, 2, false), { reset: true, from: 0 }, 'the same frame: afresh');
  assert.equal(sampleAt(samples, 0), 0);
  assert.equal(sampleAt(samples, 0.05), 1);
  assert.equal(sampleAt(samples, 2 / 30), 2);
  assert.equal(sampleAt(samples, 99), 5);
  assert.equal(formatClipTime(4.267), '0:04.27');
  assert.equal(formatClipTime(75.5), '1:15.50');
});

test('the event span and the best frame on the clip', () => {
  const samples = timed(new Array(31).fill(false).map((_, i) => i % 10 === 0), 0.1); // 0 .. 3 s
  const clipStart = 1000;
  const span = eventSpan(samples, clipStart, { startTime: 1000.5, endTime: 1002.0 });
  assert.deepEqual(span, { first: 5, last: 20, from: 5 / 30, to: 20 / 30 });
  assert.deepEqual(eventSpan(samples, clipStart, { startTime: 1001, endTime: null }), { first: 10, last: 30, from: 1 / 3, to: 1 });
  assert.equal(eventSpan(samples, clipStart, { startTime: 1010, endTime: 1011 }), null);
  const metas = samples.map((_, i) => ({ seq: 100 + i }));
  assert.equal(bestSample(samples, metas, clipStart, { best: { seq: 117, time: 0 } }), 17, 'by seq first');
  assert.equal(bestSample(samples, [], clipStart, { best: { seq: 117, time: 1001.26 } }), 13, 'else by time');
  assert.equal(bestSample(samples, [], clipStart, { startTime: 1000.5, endTime: 1001 }), 5, 'else the span');
});

test('the event\'s own box among a frame\'s boxes', () => {
  const face = { kind: 'face', id: 4 };
  const logo = { kind: 'template', label: 'logo' };
  assert.equal(isEventBox(face, { kind: 'face', trackId: 4 }), true);
  assert.equal(isEventBox(face, { kind: 'face', trackId: 5 }), false);
  assert.equal(isEventBox(face, { kind: 'face' }), true, 'a face event without a track id: any face');
  assert.equal(isEventBox(logo, { kind: 'template', label: 'logo' }), true);
  assert.equal(isEventBox(logo, { kind: 'template', label: 'other' }), false);
  assert.equal(isEventBox(logo, { kind: 'face', trackId: 4 }), false);
  assert.equal(isEventBox(logo, null), false);
});

// --- ClipPlayer --------------------------------------------------------------------------------

/** A 2D context that accepts every call and records nothing (the Overlay's geometry is what counts). */
function fakeContext() {
  const state = {};
  return new Proxy(state, {
    get: (target, key) => (key in target ? target[key] : () => ({ width: 20 })),
    set: (target, key, value) => {
      target[key] = value;
      return true;
    },
  });
}

function fakeCanvas() {
  const context = fakeContext();
  return { width: 0, height: 0, dataset: {}, getContext: () => context };
}

class FakeFrame {
  static open = new Set();
  constructor(timestamp) {
    this.timestamp = timestamp;
    this.displayWidth = 320;
    this.displayHeight = 240;
    FakeFrame.open.add(this);
  }
  close() {
    FakeFrame.open.delete(this);
  }
}

class FakeChunk {
  constructor({ type, timestamp, data }) {
    Object.assign(this, { type, timestamp, data });
  }
}

/**
 * A VideoDecoder stand-in with Chromium's rules: a key chunk is needed after configure()
 * and after flush(). `buffered`: pictures come out only on flush (a decoder that holds
 * them back); otherwise each comes out a moment after its chunk.
 */
class FakeDecoder {
  static made = [];
  static buffered = false;
  static failAt = null; // the chunk timestamp whose decode fails
  constructor({ output, error }) {
    this.output = output;
    this.error = error;
    this.state = 'unconfigured';
    this.fed = []; // timestamps decoded, in order
    this.calls = []; // configure / reset / flush, in order
    this.held = [];
    this.keyRequired = true;
    FakeDecoder.made.push(this);
  }
  configure(config) {
    this.config = config;
    this.state = 'configured';
    this.keyRequired = true;
    this.calls.push('configure');
  }
  reset() {
    this.state = 'unconfigured';
    this.held = [];
    this.calls.push('reset');
  }
  decode(chunk) {
    if (this.state !== 'configured') throw new Error('InvalidStateError: not configured');
    if (this.keyRequired && chunk.type !== 'key') throw new Error('DataError: a key frame is required');
    this.keyRequired = false;
    this.fed.push(chunk.timestamp);
    if (chunk.timestamp === FakeDecoder.failAt) queueMicrotask(() => this.fail());
    else if (FakeDecoder.buffered) this.held.push(chunk.timestamp);
    else queueMicrotask(() => this.state === 'configured' && this.output(new FakeFrame(chunk.timestamp)));
  }
  async flush() {
    this.calls.push('flush');
    for (const t of this.held.splice(0)) this.output(new FakeFrame(t));
    this.keyRequired = true;
  }
  close() {
    this.state = 'closed';
  }
  fail() {
    this.state = 'closed';
    this.error(new Error('EncodingError from the fake'));
  }
}

function setupPlayer({ count = 10, gop = 4, buffered = false } = {}) {
  FakeDecoder.made = [];
  FakeDecoder.buffered = buffered;
  FakeDecoder.failAt = null;
  FakeFrame.open.clear();
  const clip = demuxClip(clipBytes(count, gop).bytes);
  const canvas = fakeCanvas();
  const errors = [];
  let clock = 0;
  const slept = [];
  const player = new ClipPlayer({
    canvas,
    VideoDecoder: FakeDecoder,
    EncodedVideoChunk: FakeChunk,
    onError: (error) => errors.push(error),
    now: () => clock,
    sleep: async (ms) => {
      slept.push(ms);
      clock += ms;
    },
    outputWaitMs: 5,
  });
  player.load(clip, { kind: 'template', label: 'sq', startTime: 1000 });
  return { player, canvas, errors, slept, decoder: () => FakeDecoder.made.at(-1), tick: (ms) => { clock += ms; } };
}

/** The template box drawn on the canvas, from its dataset, as [x, y, w, h] in pixels. */
function drawnBox(canvas) {
  const box = JSON.parse(canvas.dataset.boxes).find((b) => b.kind === 'template');
  return [box.x, box.y, box.w, box.h];
}

test('seeking decodes from the keyframe before and shows only the wanted frame, with its own boxes', async () => {
  const { player, canvas, decoder } = setupPlayer();
  assert.equal(canvas.width, 320, 'the canvas takes the video size');
  assert.equal(await player.seek(6), true);
  assert.deepEqual(decoder().fed, [4, 5, 6]);
  assert.equal(decoder().config.codec, 'avc1.64001f');
  assert.deepEqual([...decoder().config.description], [...AVCC]);
  assert.equal(player.index, 6);
  assert.equal(canvas.dataset.clipIndex, '6');
  assert.equal(canvas.dataset.seq, '6', 'the SEI of sample 6');
  assert.deepEqual(drawnBox(canvas), [6 / 20 * 320, 60, 32, 48], 'sample 6\'s own box, in canvas pixels');
  assert.equal(canvas.dataset.box, '96.0,60.0 128.0,60.0 128.0,108.0 96.0,108.0', 'the event\'s own box');
  assert.equal(JSON.parse(canvas.dataset.boxes).length, 2, 'every box of the frame is drawn');
  assert.equal(FakeFrame.open.size, 1, 'frames 4 and 5 were closed; 6 is on screen');
  assert.equal([...FakeFrame.open][0].timestamp, 6);
});

test('stepping forward feeds one frame; stepping back starts again from the keyframe', async () => {
  const { player, canvas, decoder } = setupPlayer();
  await player.seek(5);
  const fedBefore = decoder().fed.length;
  await player.step(1);
  assert.deepEqual(decoder().fed.slice(fedBefore), [6], 'only the next frame');
  assert.equal(canvas.dataset.seq, '6');
  await player.step(-1);
  assert.equal(canvas.dataset.seq, '5');
  assert.deepEqual(decoder().calls.slice(-2), ['reset', 'configure']);
  assert.deepEqual(decoder().fed.slice(-2), [4, 5], 'back to 5: from keyframe 4, afresh');
  await player.step(-1);
  await player.step(-1);
  assert.equal(player.index, 3);
  assert.deepEqual(decoder().fed.slice(-4), [0, 1, 2, 3], 'across a keyframe: from the one before');
  assert.deepEqual(drawnBox(canvas), [3 / 20 * 320, 60, 32, 48]);
  await player.step(-1);
  await player.step(-1);
  await player.step(-1);
  assert.equal(player.index, 0);
  assert.equal(await player.step(-1), false, 'nothing before the first frame');
  assert.equal(player.index, 0);
  assert.equal(FakeDecoder.made.length, 1, 'one decoder throughout');
  assert.equal(FakeFrame.open.size, 1);
});

test('steps asked in a row land where they add up to, skipping what was superseded', async () => {
  const { player, canvas } = setupPlayer();
  await player.seek(1);
  const steps = [player.step(1), player.step(1), player.step(1)];
  await Promise.all(steps);
  assert.equal(player.index, 4);
  assert.equal(canvas.dataset.seq, '4');
  assert.equal(FakeFrame.open.size, 1);
});

test('a decoder that holds pictures back is flushed, and then starts again on a keyframe', async () => {
  const { player, canvas, decoder } = setupPlayer({ buffered: true });
  await player.seek(2);
  assert.equal(canvas.dataset.seq, '2');
  assert.deepEqual(decoder().fed, [0, 1, 2]);
  assert.equal(player.stats.flushes, 1);
  await player.step(1);
  assert.equal(canvas.dataset.seq, '3');
  assert.deepEqual(decoder().fed.slice(3), [0, 1, 2, 3], 'after a flush the chain starts at the keyframe');
  assert.equal(FakeFrame.open.size, 1);
});

test('play goes frame by frame, paced by the timestamps, and stops at the end', async () => {
  const { player, canvas, slept } = setupPlayer({ count: 8 });
  await player.seek(0);
  const shown = [];
  player.onChange = (state) => {
    if (shown.at(-1) !== state.index) shown.push(state.index);
  };
  player.play();
  assert.equal(canvas.dataset.playing, 'true');
  while (player.playing) await new Promise((resolve) => setTimeout(resolve, 1));
  assert.deepEqual(shown, [0, 1, 2, 3, 4, 5, 6, 7]);
  assert.equal(canvas.dataset.playing, 'false');
  const total = slept.reduce((a, b) => a + b, 0);
  assert.ok(Math.abs(total - (7 * 1000) / 30) < 1, `slept ${total} ms for 7 frames at 30 fps`);
  assert.ok(slept.every((ms) => Math.abs(ms - 1000 / 30) < 1), slept.join(', '));
  assert.equal(FakeFrame.open.size, 1);
  // Play at the end starts again from the first frame.
  shown.length = 0;
  player.play();
  while (player.playing) await new Promise((resolve) => setTimeout(resolve, 1));
  assert.deepEqual(shown, [7, 0, 1, 2, 3, 4, 5, 6, 7]);
});

test('pause stops on the frame shown; step and seek pause a playing clip', async () => {
  const { player, canvas } = setupPlayer({ count: 10 });
  await player.seek(0);
  player.onChange = (state) => {
    if (state.index === 3 && state.playing) player.pause();
  };
  player.play();
  await new Promise((resolve) => setTimeout(resolve, 20));
  assert.equal(player.playing, false);
  assert.equal(player.index, 3);
  player.onChange = () => {};
  player.play();
  await player.step(1);
  assert.equal(player.playing, false, 'a step pauses');
  const at = player.index;
  await new Promise((resolve) => setTimeout(resolve, 10));
  assert.equal(player.index, at, 'nothing moves while paused');
  assert.equal(canvas.dataset.clipIndex, String(at));
  assert.equal(FakeFrame.open.size, 1);
});

test('a decode error is reported; the next seek gets a new decoder', async () => {
  const { player, errors, decoder, canvas } = setupPlayer();
  await player.seek(2);
  const first = decoder();
  FakeDecoder.failAt = 3;
  assert.equal(await player.step(1), false);
  assert.equal(errors.length, 1);
  assert.equal(canvas.dataset.seq, '2', 'the last good picture stays');
  FakeDecoder.failAt = null;
  assert.equal(await player.seek(7), true);
  assert.notEqual(decoder(), first);
  assert.deepEqual(decoder().fed, [4, 5, 6, 7]);
  assert.equal(canvas.dataset.seq, '7');
});

test('close frees the decoder and the picture on screen and forgets the clip', async () => {
  const { player, canvas, decoder, errors } = setupPlayer({ buffered: true });
  await player.seek(3);
  const cut = player.step(1); // waiting for a picture the buffered decoder holds back
  await new Promise((resolve) => setTimeout(resolve, 1));
  player.close();
  assert.equal(await cut, false);
  assert.deepEqual(errors, [], 'a decode cut short by close is not an error');
  assert.equal(decoder().state, 'closed');
  assert.equal(FakeFrame.open.size, 0);
  assert.equal(canvas.dataset.seq, undefined);
  assert.equal(player.length, 0);
});
