// Unit tests for web/geometry.js. Run: node --test Tests/web/
import { test } from 'node:test';
import assert from 'node:assert/strict';

import {
  fitContain,
  pointToCanvas,
  boxToCanvas,
  rectCenter,
  rotatePoint,
  rotatedCorners,
  boundingRect,
  yawCue,
  arrowHead,
  labelPosition,
  pointInRotatedBox,
  hitTest,
  clientToCanvas,
  YAW_INNER_RATIO,
} from '../../web/geometry.js';

const EPS = 1e-9;

function near(actual, expected, eps = EPS, what = '') {
  assert.ok(Math.abs(actual - expected) <= eps, `${what} expected ${expected}, got ${actual}`);
}

function nearPoint(actual, expected, eps = EPS) {
  near(actual[0], expected[0], eps, 'x');
  near(actual[1], expected[1], eps, 'y');
}

function nearRect(actual, expected, eps = EPS) {
  for (const key of Object.keys(expected)) near(actual[key], expected[key], eps, key);
}

test('fitContain: wider area puts bars left and right', () => {
  const fit = fitContain(640, 480, 1400, 600);
  nearRect(fit, { scale: 1.25, width: 800, height: 600, offsetX: 300, offsetY: 0 });
});

test('fitContain: taller area puts bars top and bottom', () => {
  const fit = fitContain(640, 480, 600, 1000);
  nearRect(fit, { scale: 0.9375, width: 600, height: 450, offsetX: 0, offsetY: 275 });
});

test('fitContain: same aspect fills exactly, and downscales', () => {
  nearRect(fitContain(1920, 1080, 1280, 720), { scale: 2 / 3, width: 1280, height: 720, offsetX: 0, offsetY: 0 });
});

test('fitContain: HiDPI backing store doubles everything', () => {
  const css = fitContain(640, 480, 700, 300);
  const device = fitContain(640, 480, 1400, 600);
  for (const key of ['scale', 'offsetX', 'offsetY', 'width', 'height']) near(device[key], css[key] * 2, EPS, key);
});

test('fitContain: degenerate sizes give an empty fit instead of NaN/Infinity', () => {
  for (const args of [[0, 480, 100, 100], [640, 480, 0, 100], [640, -1, 100, 100], [NaN, 1, 1, 1]]) {
    assert.deepEqual({ ...fitContain(...args) }, { scale: 0, offsetX: 0, offsetY: 0, width: 0, height: 0 });
  }
});

test('boxToCanvas maps a normalized box through the letterbox', () => {
  const fit = fitContain(640, 480, 1400, 600); // 800x600 image at x=300
  nearRect(boxToCanvas({ x: 0.1, y: 0.55, w: 0.2, h: 0.15 }, fit), { x: 380, y: 330, w: 160, h: 90 });
  const tall = fitContain(640, 480, 600, 1000); // 600x450 image at y=275
  nearRect(boxToCanvas({ x: 0.1, y: 0.55, w: 0.2, h: 0.15 }, tall), { x: 60, y: 522.5, w: 120, h: 67.5 });
});

test('boxToCanvas: the full frame is exactly the image area', () => {
  const fit = fitContain(640, 480, 600, 1000);
  nearRect(boxToCanvas({ x: 0, y: 0, w: 1, h: 1 }, fit), { x: 0, y: 275, w: 600, h: 450 });
});

test('pointToCanvas and rectCenter', () => {
  const fit = fitContain(640, 480, 1400, 600);
  nearPoint(pointToCanvas([0.5, 0.5], fit), [700, 300]);
  nearPoint(pointToCanvas([0, 1], fit), [300, 600]);
  nearPoint(rectCenter({ x: 10, y: 20, w: 30, h: 40 }), [25, 40]);
});

test('rotatePoint: +90 degrees is clockwise on a y-down surface', () => {
  // A point to the right of the centre goes below it (screen clockwise).
  nearPoint(rotatePoint([10, 0], [0, 0], 90), [0, 10], 1e-12);
  nearPoint(rotatePoint([0, 10], [0, 0], 90), [-10, 0], 1e-12);
  nearPoint(rotatePoint([15, 5], [5, 5], -90), [5, -5], 1e-12);
});

test('rotatedCorners: zero roll returns the rect corners in TL, TR, BR, BL order', () => {
  const corners = rotatedCorners({ x: 10, y: 20, w: 40, h: 30 }, 0);
  [[10, 20], [50, 20], [50, 50], [10, 50]].forEach((p, i) => nearPoint(corners[i], p));
});

test('rotatedCorners: 90 degrees swaps the extents about the centre', () => {
  // Centre (30, 35); a 40x30 box rotated by 90 becomes 30 wide and 40 tall.
  const corners = rotatedCorners({ x: 10, y: 20, w: 40, h: 30 }, 90);
  nearPoint(corners[0], [45, 15], 1e-9); // top-left went to the top-right
  nearPoint(corners[1], [45, 55], 1e-9);
  nearPoint(corners[2], [15, 55], 1e-9);
  nearPoint(corners[3], [15, 15], 1e-9);
  nearRect(boundingRect(corners), { x: 15, y: 15, w: 30, h: 40 }, 1e-9);
});

test('rotatedCorners: 30 degrees keeps the centre and side lengths, turns the top edge clockwise', () => {
  const rect = { x: 100, y: 100, w: 80, h: 40 };
  const corners = rotatedCorners(rect, 30);
  const cx = corners.reduce((s, p) => s + p[0], 0) / 4;
  const cy = corners.reduce((s, p) => s + p[1], 0) / 4;
  nearPoint([cx, cy], [140, 120], 1e-9);
  near(Math.hypot(corners[1][0] - corners[0][0], corners[1][1] - corners[0][1]), 80, 1e-9);
  near(Math.hypot(corners[3][0] - corners[0][0], corners[3][1] - corners[0][1]), 40, 1e-9);
  // Top edge direction is (cos 30, sin 30): going right it goes down.
  const angle = Math.atan2(corners[1][1] - corners[0][1], corners[1][0] - corners[0][0]);
  near(angle, Math.PI / 6, 1e-12);
  // Exact corner: TL offset (-40, -20) rotated by 30 degrees.
  const c = Math.cos(Math.PI / 6);
  const s = Math.sin(Math.PI / 6);
  nearPoint(corners[0], [140 + (-40 * c + 20 * s), 120 + (-40 * s - 20 * c)], 1e-9);
  near(corners[0][0], 115.35898384862247, 1e-9);
  near(corners[0][1], 82.67949192431123, 1e-9);
});

test('rotatedCorners: roll of -180 < r <= 180 and missing roll', () => {
  const rect = { x: 0, y: 0, w: 20, h: 10 };
  const flipped = rotatedCorners(rect, 180);
  nearPoint(flipped[0], [20, 10], 1e-9);
  nearPoint(flipped[2], [0, 0], 1e-9);
  nearPoint(rotatedCorners(rect, undefined)[1], [20, 0]);
});

test('yawCue: facing the camera gives a centred inner outline and no arrow', () => {
  const cue = yawCue(100, 120, 0);
  nearRect(cue.inner, { x: -30, y: -36, w: 60, h: 72 });
  assert.equal(cue.arrow, null);
  assert.equal(cue.head, null);
});

test('yawCue: positive yaw narrows the outline and points right', () => {
  const cue = yawCue(100, 120, 60);
  const innerW = 100 * YAW_INNER_RATIO * 0.5; // cos 60 = 0.5
  near(cue.inner.w, innerW, 1e-9, 'inner width');
  const shift = 30 * Math.sin(Math.PI / 3); // half the base width, times sin 60
  near(cue.inner.x + cue.inner.w / 2, shift, 1e-9, 'inner centre');
  assert.ok(shift > 0);
  nearPoint(cue.arrow.from, [0, 0]);
  nearPoint(cue.arrow.to, [50 * Math.sin(Math.PI / 3), 0], 1e-9);
  // Barbs sit behind the tip (to its left) and on both sides of the axis.
  for (const barb of cue.head) assert.ok(barb[0] < cue.arrow.to[0]);
  near(cue.head[0][1], -cue.head[1][1], 1e-9, 'barbs symmetric');
});

test('yawCue: negative yaw mirrors positive yaw', () => {
  const right = yawCue(80, 80, 35);
  const left = yawCue(80, 80, -35);
  near(left.inner.x + left.inner.w / 2, -(right.inner.x + right.inner.w / 2), 1e-9);
  near(left.inner.w, right.inner.w, 1e-9);
  near(left.arrow.to[0], -right.arrow.to[0], 1e-9);
  assert.ok(left.arrow.to[0] < 0);
});

test('yawCue: yaw is clamped to +-90 and non-numbers count as 0', () => {
  const cue = yawCue(100, 100, 140);
  assert.equal(cue.yaw, 90);
  near(cue.inner.w, 0, 1e-9);
  near(cue.arrow.to[0], 50, 1e-9);
  assert.equal(yawCue(100, 100, undefined).yaw, 0);
  assert.equal(yawCue(100, 100, NaN).arrow, null);
});

test('arrowHead: barbs of a rightward arrow at the given length and angle', () => {
  const [a, b] = arrowHead([0, 0], [10, 0], 4);
  const angle = (28 * Math.PI) / 180;
  nearPoint(a, [10 - 4 * Math.cos(angle), -4 * Math.sin(angle)], 1e-9);
  nearPoint(b, [10 - 4 * Math.cos(angle), 4 * Math.sin(angle)], 1e-9);
  near(Math.hypot(a[0] - 10, a[1]), 4, 1e-9);
});

test('labelPosition: above the box, below when at the top, clamped inside', () => {
  assert.deepEqual(labelPosition({ x: 50, y: 100, w: 40, h: 40 }, 60, 20, 800, 600), { x: 50, y: 80 });
  assert.deepEqual(labelPosition({ x: 50, y: 5, w: 40, h: 40 }, 60, 20, 800, 600), { x: 50, y: 45 });
  assert.deepEqual(labelPosition({ x: 780, y: 100, w: 40, h: 40 }, 60, 20, 800, 600), { x: 740, y: 80 });
  assert.deepEqual(labelPosition({ x: -30, y: 590, w: 40, h: 40 }, 60, 20, 800, 600), { x: 0, y: 570 });
});

// --- hit-testing the rotated face boxes ------------------------------------------

test('pointInRotatedBox: upright box contains its centre and edges, not outside points', () => {
  const rect = { x: 100, y: 50, w: 40, h: 80 };
  assert.ok(pointInRotatedBox([120, 90], rect, 0));
  assert.ok(pointInRotatedBox([100, 50], rect, 0), 'corner counts as inside');
  assert.ok(pointInRotatedBox([140, 130], rect, 0));
  assert.ok(!pointInRotatedBox([99, 90], rect, 0));
  assert.ok(!pointInRotatedBox([120, 131], rect, 0));
});

test('pointInRotatedBox: a box rolled 90 degrees swaps its extents', () => {
  const rect = { x: 100, y: 50, w: 40, h: 80 }; // centre (120, 90)
  // Upright it reaches y = 55, x only to 135; rolled 90 it reaches x = 155, y only to 70.
  assert.ok(pointInRotatedBox([120, 55], rect, 0));
  assert.ok(!pointInRotatedBox([120, 55], rect, 90));
  assert.ok(!pointInRotatedBox([155, 90], rect, 0));
  assert.ok(pointInRotatedBox([155, 90], rect, 90));
  assert.ok(pointInRotatedBox([155, 90], rect, -90));
});

test('pointInRotatedBox: agrees with the drawn corners at 30 degrees', () => {
  const rect = { x: 0, y: 0, w: 100, h: 40 };
  const roll = 30;
  const corners = rotatedCorners(rect, roll);
  const center = rectCenter(rect);
  for (const corner of corners) {
    // Just inside each drawn corner (towards the centre) is inside; just beyond it is not.
    const inward = [corner[0] + (center[0] - corner[0]) * 0.02, corner[1] + (center[1] - corner[1]) * 0.02];
    const outward = [corner[0] - (center[0] - corner[0]) * 0.02, corner[1] - (center[1] - corner[1]) * 0.02];
    assert.ok(pointInRotatedBox(inward, rect, roll), `inside near ${corner}`);
    assert.ok(!pointInRotatedBox(outward, rect, roll), `outside near ${corner}`);
  }
  // The unrotated top-left corner lies outside the rolled box.
  assert.ok(!pointInRotatedBox([1, 1], rect, roll));
});

test('pointInRotatedBox: rotation about the centre, clockwise positive (y down)', () => {
  const rect = { x: -50, y: -5, w: 100, h: 10 }; // a thin horizontal bar centred at the origin
  // Clockwise 45 degrees on a y-down surface sends the right end (50, 0) to (35.4, 35.4).
  assert.ok(pointInRotatedBox([35, 35], rect, 45));
  assert.ok(!pointInRotatedBox([35, -35], rect, 45));
  assert.ok(pointInRotatedBox([35, -35], rect, -45));
});

test('pointInRotatedBox: margin grows the box on every side; junk is never hit', () => {
  const rect = { x: 10, y: 10, w: 20, h: 20 };
  assert.ok(!pointInRotatedBox([33, 20], rect, 0));
  assert.ok(pointInRotatedBox([33, 20], rect, 0, 4));
  assert.ok(pointInRotatedBox([20, 6], rect, 0, 4));
  assert.ok(!pointInRotatedBox([20, 5], rect, 0, 4));
  assert.ok(!pointInRotatedBox([20, 20], null, 0));
  assert.ok(!pointInRotatedBox([20, 20], { x: 0, y: 0 }, 0));
  assert.ok(pointInRotatedBox([20, 20], rect, undefined), 'missing roll means upright');
});

test('hitTest: picks the box under the point, the smaller one when nested, honours roll', () => {
  const big = { id: 1, x: 0, y: 0, w: 200, h: 200, roll: 0 };
  const small = { id: 2, x: 50, y: 50, w: 40, h: 40, roll: 0 };
  const tilted = { id: 3, x: 300, y: 0, w: 100, h: 20, roll: 90 }; // centre (350, 10)
  const rects = [small, big, tilted];
  assert.equal(hitTest([70, 70], rects).id, 2);
  assert.equal(hitTest([150, 150], rects).id, 1);
  assert.equal(hitTest([350, 50], rects).id, 3, 'inside the rolled box, outside its unrolled rect');
  assert.equal(hitTest([390, 10], rects), null, 'inside the unrolled rect, outside the rolled box');
  assert.equal(hitTest([500, 500], rects), null);
  assert.equal(hitTest([10, 10], []), null);
});

test('clientToCanvas: CSS pixels of a scaled canvas -> backing-store pixels', () => {
  const bounds = { left: 10, top: 20, width: 500, height: 250 };
  nearPoint(clientToCanvas(10, 20, bounds, 1000, 500), [0, 0]);
  nearPoint(clientToCanvas(260, 145, bounds, 1000, 500), [500, 250]);
  nearPoint(clientToCanvas(510, 270, bounds, 1000, 500), [1000, 500]);
  assert.ok(Number.isNaN(clientToCanvas(0, 0, { left: 0, top: 0, width: 0, height: 0 }, 10, 10)[0]));
});
