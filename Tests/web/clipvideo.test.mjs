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

// --- VideoClipPlayer against a stand-in <video> ------------------------------------------------

import { VideoClipPlayer } from '../../web/clipvideo.js';

const UUID = [0x1c, 0x90, 0x42, 0xa8, 0x85, 0x63, 0x40, 0x4c, 0xb2, 0xa4, 0xf8, 0xdd, 0x70, 0x7b, 0x1b, 0xbd];

/** A length-prefixed access unit holding only a Sightline SEI with `json` (short: one size byte). */
function seiSample(json) {
  const text = [...new TextEncoder().encode(JSON.stringify(json))];
  const nal = [0x06, 5, UUID.length + text.length, ...UUID, ...text, 0x80];
  return Uint8Array.from([0, 0, 0, nal.length, ...nal]);
}

function demo(count = 6) {
  const step = 0.033;
  const samples = Array.from({ length: count }, (_, i) => ({
    index: i, timestamp: i === 0 ? 0 : 0.123 + (i - 1) * step, duration: i === 0 ? 0.123 : step, isKey: i === 0,
    data: seiSample({ seq: 100 + i, width: 320, height: 240,
      detections: [{ kind: 'template', label: 'x', box: { x: i / 10, y: 0.1, w: 0.1, h: 0.1 } }] }),
  }));
  return { samples, timescale: 16000, width: 320, height: 240, lengthSize: 4, codec: 'avc1.64001f' };
}

function fakeContext() {
  return new Proxy({}, {
    get: (target, key) => (key in target ? target[key] : () => ({ width: 20 })),
    set: (target, key, value) => { target[key] = value; return true; },
  });
}

/** A <video> that seeks a moment after currentTime is set, plays and pauses, and reports pictures through requestVideoFrameCallback. */
class FakeVideo extends EventTarget {
  constructor() {
    super();
    this.paused = true;
    this.seeking = false;
    this.ended = false;
    this.time = 0;
    this.callbacks = new Map();
    this.nextId = 1;
    this.attrs = {};
  }
  get currentTime() { return this.time; }
  set currentTime(t) {
    this.time = t;
    this.seeking = true;
    setTimeout(() => {
      this.seeking = false;
      this.dispatchEvent(new Event('seeked'));
    }, 1);
  }
  set src(url) {
    this.attrs.src = url;
    setTimeout(() => this.dispatchEvent(new Event('loadeddata')), 1);
  }
  getAttribute(name) { return this.attrs[name] ?? null; }
  removeAttribute(name) { delete this.attrs[name]; }
  load() {}
  play() { this.paused = false; this.dispatchEvent(new Event('play')); return Promise.resolve(); }
  pause() {
    if (this.paused) return;
    this.paused = true;
    setTimeout(() => this.dispatchEvent(new Event('pause')), 0);
  }
  requestVideoFrameCallback(fn) { const id = this.nextId++; this.callbacks.set(id, fn); return id; }
  cancelVideoFrameCallback(id) { this.callbacks.delete(id); }
  /** The compositor presents the picture at mediaTime. */
  present(mediaTime) {
    const pending = [...this.callbacks.values()];
    this.callbacks.clear();
    for (const fn of pending) fn(0, { mediaTime, presentedFrames: 1, width: 320, height: 240 });
  }
}

const tick = (ms = 5) => new Promise((resolve) => setTimeout(resolve, ms));

async function loaded() {
  const video = new FakeVideo();
  const canvas = { width: 0, height: 0, dataset: {}, getContext: () => fakeContext() };
  const player = new VideoClipPlayer({ video, canvas });
  const clip = demo();
  assert.equal(await player.load(clip, new Uint8Array(8)), true);
  return { video, canvas, player, clip };
}

test('the <video> player: a seek lands half a frame into the sample and draws its own boxes', async () => {
  const { video, canvas, player, clip } = await loaded();
  assert.equal(await player.seek(3), true);
  assert.equal(video.currentTime, seekTime(clip.samples, 3));
  assert.equal(canvas.dataset.clipIndex, '3');
  assert.equal(canvas.dataset.seq, '103');
  assert.equal(JSON.parse(canvas.dataset.boxes)[0].x, 0.3 * 320);
  assert.equal(await player.step(1), true);
  assert.equal(canvas.dataset.seq, '104');
  assert.equal(await player.step(-1), true);
  assert.equal(canvas.dataset.seq, '103');
  assert.equal(canvas.dataset.playing, 'false');
  player.close();
  assert.equal(canvas.dataset.seq, undefined);
});

test('the <video> player: while playing each presented picture gets the boxes of the sample at its mediaTime, exactly', async () => {
  const { video, canvas, player, clip } = await loaded();
  await player.seek(0);
  player.play();
  assert.equal(canvas.dataset.playing, 'true');
  for (const i of [1, 2, 3]) {
    video.present(clip.samples[i].timestamp);
    assert.equal(canvas.dataset.seq, String(100 + i));
  }
  video.present(0.14); // between two samples: no sample, so no boxes (never a neighbour's)
  assert.equal(canvas.dataset.clipIndex, '-1');
  assert.equal(JSON.parse(canvas.dataset.boxes).length, 0);
  video.present(clip.samples[4].timestamp);
  assert.equal(canvas.dataset.seq, '104');
  // Paused with the clock already in the next sample: it settles on the picture last presented.
  video.time = clip.samples[5].timestamp + 0.01;
  player.pause();
  for (let i = 0; i < 20 && (video.seeking || canvas.dataset.playing !== 'false' || player.wanted !== null); i += 1) await tick();
  await tick();
  assert.equal(canvas.dataset.seq, '104');
  assert.equal(video.currentTime, seekTime(clip.samples, 4));
  assert.equal(player.state.playing, false);
});

test('the <video> player: a seek while playing plays on from there', async () => {
  const { video, canvas, player } = await loaded();
  await player.seek(1);
  player.play();
  assert.equal(await player.seek(4), true);
  assert.equal(canvas.dataset.seq, '104');
  assert.equal(player.playing, true);
  assert.equal(video.paused, false);
});
