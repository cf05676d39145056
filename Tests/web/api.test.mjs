// Unit tests for the pure parts of web/api.js, web/faces.js and web/sources.js. Run: node --test Tests/web/
import { test } from 'node:test';
import assert from 'node:assert/strict';

import {
  ApiError,
  describeError,
  sanitizeTemplateName,
  isValidTemplateName,
  imageContentType,
  pathName,
  MAX_TEMPLATE_NAME_LENGTH,
  FALLBACK_TEMPLATE_NAME,
} from '../../web/api.js';
import { normalizePeople, faceRects, enrollmentDetail, detectorSummary } from '../../web/faces.js';
import { sourceLabel } from '../../web/sources.js';

test('sanitizeTemplateName: base name without extension, allowed characters only', () => {
  assert.equal(sanitizeTemplateName('opencv-logo.png'), 'opencv-logo');
  assert.equal(sanitizeTemplateName('C:\\\\pics\\\\My Logo (v2).jpeg'), 'My Logo _v2');
  assert.equal(sanitizeTemplateName('/home/ada/box_in.scene.png'), 'box_in.scene');
  assert.equal(sanitizeTemplateName('../../etc/passwd'), 'passwd');
  assert.equal(sanitizeTemplateName('..png'), FALLBACK_TEMPLATE_NAME);
  assert.equal(sanitizeTemplateName('.hidden'), 'hidden');
  assert.equal(sanitizeTemplateName('Ünïcødé logo.png'), 'n_c_d_ logo');
  assert.equal(sanitizeTemplateName(''), FALLBACK_TEMPLATE_NAME);
  assert.equal(sanitizeTemplateName(undefined), FALLBACK_TEMPLATE_NAME);
  assert.equal(sanitizeTemplateName(`${'x'.repeat(100)}.png`).length, MAX_TEMPLATE_NAME_LENGTH);
});

test('sanitizeTemplateName always yields a name isValidTemplateName accepts', () => {
  const samples = ['a.png', '  spaced  out .jpg', 'semi;colon<script>.png', '%2e%2e.png', 'a/b\\\\c.png', '....', '-dash.png'];
  for (const sample of samples) assert.ok(isValidTemplateName(sanitizeTemplateName(sample)), sample);
});

test('isValidTemplateName: the server rules', () => {
  assert.ok(isValidTemplateName('logo'));
  assert.ok(isValidTemplateName('Logo 2_final-v1.0'));
  assert.ok(!isValidTemplateName(''));
  assert.ok(!isValidTemplateName(' logo'));
  assert.ok(!isValidTemplateName('a/b'));
  assert.ok(!isValidTemplateName('..'));
  assert.ok(!isValidTemplateName('.hidden'));
  assert.ok(!isValidTemplateName('trailing '));
  assert.ok(!isValidTemplateName('x'.repeat(MAX_TEMPLATE_NAME_LENGTH + 1)));
  // A global regex with .test() keeps state between calls; make sure repeated calls agree.
  for (let i = 0; i < 3; i += 1) assert.ok(!isValidTemplateName('bad?name'));
});

test('imageContentType: browser type first, else the extension', () => {
  assert.equal(imageContentType({ name: 'a.png', type: 'image/png' }), 'image/png');
  assert.equal(imageContentType({ name: 'a.JPG', type: '' }), 'image/jpeg');
  assert.equal(imageContentType({ name: 'a.jpeg' }), 'image/jpeg');
  assert.equal(imageContentType({ name: 'a.tiff', type: '' }), 'application/octet-stream');
});

test('ApiError.fromResponseBody keeps the server error, detail and Retry-After', () => {
  const err = ApiError.fromResponseBody(415, '{"error":"unsupported media type","detail":"not JPEG or PNG"}', null, 'Upload');
  assert.equal(err.status, 415);
  assert.equal(err.error, 'unsupported media type');
  assert.equal(err.detail, 'not JPEG or PNG');
  assert.equal(err.retryAfter, null);
  const limited = ApiError.fromResponseBody(429, '{"error":"too many failed attempts"}', '7', '');
  assert.equal(limited.retryAfter, 7);
  const html = ApiError.fromResponseBody(502, '<html>bad gateway</html>', null);
  assert.equal(html.error, '<html>bad gateway</html>');
  assert.equal(html.detail, '');
});

test('describeError: one sentence with the server words and advice', () => {
  const refused = new ApiError({ status: 422, error: 'template has no texture', detail: 'stddev 0.4 < 4', action: 'Upload of "flat" refused' });
  assert.equal(describeError(refused), 'Upload of "flat" refused: template has no texture — stddev 0.4 < 4 (HTTP 422).');
  const unauthorized = new ApiError({ status: 401, error: 'unauthorized', detail: 'missing bearer token' });
  assert.match(describeError(unauthorized), /unauthorized — missing bearer token \(HTTP 401\)\. Sign in under Access\./);
  const limited = new ApiError({ status: 429, error: 'slow down', retryAfter: 2.2 });
  assert.match(describeError(limited), /Try again in 3 s\./);
  const offline = new ApiError({ status: 0, error: 'Failed to fetch', action: 'Switching refused' });
  assert.equal(describeError(offline), 'Switching refused: the server could not be reached (Failed to fetch).');
  assert.equal(describeError(new ApiError({ status: 500 })), 'refused (HTTP 500).');
  assert.equal(describeError(new Error('boom')), 'boom');
});

test('pathName encodes names for URL paths', () => {
  assert.equal(pathName('my logo'), 'my%20logo');
  assert.equal(pathName('a/b'), 'a%2Fb');
});

test('normalizePeople accepts the list shapes a server might send', () => {
  assert.deepEqual(normalizePeople(['Ada', 'Bob']), [{ name: 'Ada', detail: '' }, { name: 'Bob', detail: '' }]);
  assert.deepEqual(normalizePeople({ people: [{ name: 'Ada', samples: 3 }, { name: 'Bob', samples: 1 }] }),
    [{ name: 'Ada', detail: '3 samples' }, { name: 'Bob', detail: '1 sample' }]);
  assert.deepEqual(normalizePeople({ people: ['Grace'] }), [{ name: 'Grace', detail: '' }]);
  assert.deepEqual(normalizePeople({ people: [{ nope: 1 }, null, { name: 'Ada' }] }), [{ name: 'Ada', detail: '' }]);
  assert.deepEqual(normalizePeople(null), []);
  assert.deepEqual(normalizePeople({ people: 'Ada' }), []);
});

test('faceRects: only face boxes with an id can be picked', () => {
  const drawn = { rects: [{ kind: 'face', id: 3, x: 0, y: 0, w: 1, h: 1 }, { kind: 'template', x: 0, y: 0, w: 1, h: 1 },
    { kind: 'face', x: 0, y: 0, w: 1, h: 1 }] };
  assert.deepEqual(faceRects(drawn).map((r) => r.id), [3]);
  assert.deepEqual(faceRects(null), []);
});

test('sourceLabel: label plus kind unless the label says it already', () => {
  assert.equal(sourceLabel({ spec: 'demo', label: 'Demo scene', kind: 'demo' }), 'Demo scene');
  assert.equal(sourceLabel({ spec: 'file:/x/vtest.avi', label: 'vtest.avi', kind: 'file' }), 'vtest.avi · file');
  assert.equal(sourceLabel({ spec: 'rtsp://cam/1' }), 'rtsp://cam/1');
});

test('enrollmentDetail summarises what the server learned', () => {
  assert.equal(enrollmentDetail({ id: 1, name: 'Ada', learned: 3, samples: 5 }), ' (learned 3 pictures; Ada has 5)');
  assert.equal(enrollmentDetail({ id: 1, name: 'Ada', learned: 1 }), ' (learned 1 picture)');
  assert.equal(enrollmentDetail(null), '');
  assert.equal(enrollmentDetail({ ok: true }), '');
});

test('detectorSummary names the face detector from /api/state, or says detection is off', () => {
  assert.equal(detectorSummary({ detector: 'yunet-320', refineLandmarks: true, maxFaces: 10, detectEvery: 1 }),
    'Detector: YuNet (320 input), refined landmarks, up to 10 faces.');
  assert.equal(detectorSummary({ detector: 'haar', refineLandmarks: false, maxFaces: 4 }),
    'Detector: Haar cascades (no face model set), up to 4 faces.');
  assert.equal(detectorSummary(undefined), 'Face detection is off on this server.');
  assert.equal(detectorSummary({}), 'Face detection is off on this server.');
});

test('accessSummary: who is signed in and what that role may do', async () => {
  const { accessSummary } = await import('../../web/access.js');
  assert.match(accessSummary({ signedIn: true, name: 'ops', role: 'admin', mayChange: true }), /“ops” \(admin\): you may watch, upload/);
  assert.match(accessSummary({ signedIn: true, name: 'tv', role: 'viewer', mayChange: false }), /\(viewer\): you may watch; uploads, naming and switching need an admin token/);
  assert.match(accessSummary({ signedIn: false, viewOpen: true }), /watching is open here/);
  assert.match(accessSummary({ signedIn: false, viewOpen: false }), /needs a token to watch/);
  assert.match(accessSummary(null), /Checking/);
});
