// The clip demuxer and SEI reader (web/mp4.js, web/sei.js) on a real file: make_clip.py
// encodes 60 frames with libx264 and muxes them with libavformat's fragmented MP4 options,
// each access unit with its Sightline SEI. Cross-checked with ffprobe when it is there.
// Skips (saying why) without python3, PyAV or numpy. Run: node --test Tests/web/
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

import { demuxClip, readSightlineSEI, parseBoxes, keyframeBefore, nalUnits } from '../../web/clip.js';

const MAKE_CLIP = join(dirname(fileURLToPath(import.meta.url)), 'make_clip.py');
const FRAMES = 60;

let dir = null;
let made = null; // {bytes, manifest} or {skip: reason}

before(() => {
  dir = mkdtempSync(join(tmpdir(), 'sightline-clip-'));
  const path = join(dir, 'clip.mp4');
  const run = spawnSync('python3', [MAKE_CLIP, path, '--frames', String(FRAMES)], { encoding: 'utf8', timeout: 120000 });
  if (run.error?.code === 'ENOENT') {
    made = { skip: 'python3 not found: cannot make the test clip (Tests/web/make_clip.py)' };
  } else if (run.status !== 0 && /No module named '?(av|numpy)/.test(run.stderr)) {
    made = { skip: `make_clip.py needs PyAV and numpy (pip install av numpy): ${run.stderr.trim().split('\n').at(-1)}` };
  } else {
    assert.equal(run.status, 0, `make_clip.py failed:\n${run.stderr}`);
    made = { path, bytes: new Uint8Array(readFileSync(path)), manifest: JSON.parse(run.stdout) };
  }
});

after(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

test('the demuxer reads 60 samples whose SEI seq go 0..59, keyframes where libx264 put them', (t) => {
  if (made.skip) return t.skip(made.skip);
  const { bytes, manifest } = made;
  const clip = demuxClip(bytes);
  assert.equal(clip.samples.length, FRAMES);
  assert.equal(clip.truncated, false);
  assert.equal(clip.fragments, manifest.keyframes.length, 'frag_keyframe: one fragment per keyframe');
  assert.match(clip.codec, /^avc1\.64[0-9a-f]{4}$/, 'High profile');
  assert.equal(clip.description[0], 1, 'an AVCDecoderConfigurationRecord');
  assert.equal(clip.lengthSize, 4);
  assert.deepEqual([clip.width, clip.height], [manifest.width, manifest.height]);
  assert.equal(clip.samples[0].isKey, true, 'the first sample is a keyframe');
  assert.deepEqual(clip.samples.filter((s) => s.isKey).map((s) => s.index), manifest.keyframes);
  clip.samples.forEach((s, i) => {
    assert.ok(Math.abs(s.timestamp - i / manifest.fps) < 1e-6, `sample ${i} at ${s.timestamp}`);
  });
  const metas = clip.samples.map((s) => readSightlineSEI(s.data, clip.lengthSize));
  assert.deepEqual(metas.map((m) => m?.seq), Array.from({ length: FRAMES }, (_, i) => i));
  metas.forEach((meta, i) => {
    const [x, y] = manifest.squares[i];
    const box = meta.detections.find((d) => d.kind === 'template').box;
    assert.ok(Math.abs(box.x * manifest.width - x) < 1e-6 && Math.abs(box.y * manifest.height - y) < 1e-6, `frame ${i}'s box`);
    assert.ok(Math.abs(meta.capturedAt - (manifest.start + i / manifest.fps)) < 1e-6);
  });
  // Keyframes carry SPS and PPS inline, and every sample its SEI before the first slice.
  const types = (s) => nalUnits(s.data, clip.lengthSize).map((n) => n[0] & 0x1f);
  for (const key of clip.samples.filter((s) => s.isKey)) assert.deepEqual(types(key).slice(0, 2), [7, 8]);
  for (const s of clip.samples) {
    const list = types(s);
    assert.ok(list.indexOf(6) >= 0 && list.indexOf(6) < list.findIndex((n) => n === 1 || n === 5), `sample ${s.index}: ${list}`);
  }
  assert.equal(keyframeBefore(clip.samples, 45), 30);
});

test('ffprobe sees the same packets: count, sizes, times and keyframes', (t) => {
  if (made.skip) return t.skip(made.skip);
  const probe = spawnSync('ffprobe', ['-v', 'error', '-select_streams', 'v:0', '-show_packets', '-of', 'json', made.path],
    { encoding: 'utf8', timeout: 60000 });
  if (probe.error?.code === 'ENOENT') return t.skip('ffprobe not found: no cross-check (apt-get install ffmpeg)');
  assert.equal(probe.status, 0, probe.stderr);
  const packets = JSON.parse(probe.stdout).packets;
  const clip = demuxClip(made.bytes);
  assert.equal(packets.length, clip.samples.length);
  packets.forEach((packet, i) => {
    const sample = clip.samples[i];
    assert.equal(Number(packet.size), sample.size, `packet ${i} size`);
    assert.equal(Number(packet.pos), sample.offset, `packet ${i} position`);
    assert.ok(Math.abs(Number(packet.pts_time) - sample.timestamp) < 1e-5, `packet ${i} time`);
    assert.equal(packet.flags.startsWith('K'), sample.isKey, `packet ${i} keyflag`);
  });
});

test('a copy cut inside its last fragment gives the complete fragments only', (t) => {
  if (made.skip) return t.skip(made.skip);
  const top = parseBoxes(made.bytes);
  const moofs = top.filter((b) => b.type === 'moof');
  const lastMdat = top.filter((b) => b.type === 'mdat').at(-1);
  const cut = demuxClip(made.bytes.subarray(0, Math.floor((lastMdat.start + lastMdat.end) / 2)));
  assert.equal(cut.truncated, true);
  assert.equal(cut.samples.length, made.manifest.keyframes.at(-1), 'up to the last keyframe');
  assert.deepEqual(cut.samples.map((s) => readSightlineSEI(s.data)?.seq), cut.samples.map((_, i) => i));
  const inMoof = demuxClip(made.bytes.subarray(0, moofs.at(-1).start + 20));
  assert.equal(inMoof.samples.length, cut.samples.length);
  const moov = top.find((b) => b.type === 'moov');
  assert.equal(demuxClip(made.bytes.subarray(0, moov.end)).samples.length, 0);
});
