// Unit tests for the camera path mapping (web/camera.js) and the Cameras card's
// pure helpers (web/cameras.js). Under Node there is no `location`, so the page's
// own camera is none and every path constant stays unprefixed; camera_page.test.mjs
// checks the constants with a chosen camera.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  pathForCamera, cameraPath, cameraFromSearch, cameraPageHref, CURRENT_CAMERA, CAMERAS_PATH,
} from '../../web/camera.js';
import { cameraSummary, shownCameraName, sameCameras } from '../../web/cameras.js';

test('without a camera every path stays as it is', () => {
  for (const path of ['/ws', '/ws?video=h264', '/api/state', '/api/templates/a%20b.png', '/api/session', '/', '/stream.mjpg']) {
    assert.equal(pathForCamera(path, null), path);
    assert.equal(pathForCamera(path, ''), path);
    assert.equal(pathForCamera(path, undefined), path);
  }
});

test('under Node the page has no camera and cameraPath changes nothing', () => {
  assert.equal(CURRENT_CAMERA, null);
  assert.equal(cameraPath('/api/events'), '/api/events');
  assert.equal(cameraPath('/ws'), '/ws');
});

test('a camera\'s stream routes go under /cam/NAME/', () => {
  assert.equal(pathForCamera('/ws', 'yard'), '/cam/yard/ws');
  assert.equal(pathForCamera('/ws?video=h264', 'yard'), '/cam/yard/ws?video=h264');
  assert.equal(pathForCamera('/stream.mjpg', 'yard'), '/cam/yard/stream.mjpg');
  assert.equal(pathForCamera('/snapshot.jpg', 'yard'), '/cam/yard/snapshot.jpg');
  assert.equal(pathForCamera('/metrics', 'yard'), '/cam/yard/metrics');
});

test('a camera\'s API goes under /api/cameras/NAME/', () => {
  assert.equal(pathForCamera('/api/state', 'yard'), '/api/cameras/yard/state');
  assert.equal(pathForCamera('/api/templates', 'yard'), '/api/cameras/yard/templates');
  assert.equal(pathForCamera('/api/templates?name=a%20b', 'yard'), '/api/cameras/yard/templates?name=a%20b');
  assert.equal(pathForCamera('/api/templates/logo.png', 'yard'), '/api/cameras/yard/templates/logo.png');
  assert.equal(pathForCamera('/api/events?kind=face&limit=30', 'yard'), '/api/cameras/yard/events?kind=face&limit=30');
  assert.equal(pathForCamera('/api/events/e1/clip.mp4', 'yard'), '/api/cameras/yard/events/e1/clip.mp4');
  assert.equal(pathForCamera('/api/events/e1/snapshot.jpg', 'yard'), '/api/cameras/yard/events/e1/snapshot.jpg');
  assert.equal(pathForCamera('/api/faces/3/name', 'yard'), '/api/cameras/yard/faces/3/name');
  assert.equal(pathForCamera('/api/people', 'yard'), '/api/cameras/yard/people');
  assert.equal(pathForCamera('/api/sources', 'yard'), '/api/cameras/yard/sources');
  assert.equal(pathForCamera('/api/source', 'yard'), '/api/cameras/yard/source');
});

test('server-wide paths, camera paths and the page\'s files are never prefixed', () => {
  assert.equal(pathForCamera('/api/session', 'yard'), '/api/session');
  assert.equal(pathForCamera('/api/session?x=1', 'yard'), '/api/session?x=1');
  assert.equal(pathForCamera(CAMERAS_PATH, 'yard'), '/api/cameras');
  assert.equal(pathForCamera('/api/cameras/front/state', 'yard'), '/api/cameras/front/state');
  assert.equal(pathForCamera('/cam/front/ws', 'yard'), '/cam/front/ws');
  assert.equal(pathForCamera('/', 'yard'), '/');
  assert.equal(pathForCamera('/app.js', 'yard'), '/app.js');
  // Only whole segments count: these are a camera's API, not the server-wide routes.
  assert.equal(pathForCamera('/api/sessions', 'yard'), '/api/cameras/yard/sessions');
  assert.equal(pathForCamera('/api/camerasX', 'yard'), '/api/cameras/yard/camerasX');
  assert.equal(pathForCamera('/wsx', 'yard'), '/wsx');
});

test('names are percent-encoded as one path segment', () => {
  assert.equal(pathForCamera('/ws', 'back yard'), '/cam/back%20yard/ws');
  assert.equal(pathForCamera('/api/state', 'a/b'), '/api/cameras/a%2Fb/state');
  assert.equal(pathForCamera('/api/state', 'x?y#z'), '/api/cameras/x%3Fy%23z/state');
  assert.equal(pathForCamera('/api/state', 'Küche'), '/api/cameras/K%C3%BCche/state');
  assert.equal(pathForCamera('/api/state', '100%'), '/api/cameras/100%25/state');
});

test('the camera comes from ?camera= of the page URL', () => {
  assert.equal(cameraFromSearch('?camera=yard'), 'yard');
  assert.equal(cameraFromSearch('?video=jpeg&camera=back%20yard'), 'back yard');
  assert.equal(cameraFromSearch('?camera=a+b'), 'a b');
  assert.equal(cameraFromSearch('?camera='), null);
  assert.equal(cameraFromSearch(''), null);
  assert.equal(cameraFromSearch(undefined), null);
});

test('a camera\'s page keeps the other parameters', () => {
  assert.equal(cameraPageHref('yard', ''), '?camera=yard');
  assert.equal(cameraPageHref('yard', '?video=jpeg&camera=front'), '?video=jpeg&camera=yard');
  assert.equal(cameraFromSearch(cameraPageHref('back yard & co', '')), 'back yard & co');
});

test('a tile says the state and the processed frame rate', () => {
  assert.equal(cameraSummary({ state: 'live', fps: { processed: 9.83, capture: 10 } }), 'live · 9.8 fps');
  assert.equal(cameraSummary({ state: 'noSignal', fps: {} }), 'noSignal');
  assert.equal(cameraSummary({}), '–');
});

test('the main view shows the chosen camera, else the first', () => {
  const cameras = [{ name: 'front' }, { name: 'yard' }];
  assert.equal(shownCameraName(cameras, null), 'front');
  assert.equal(shownCameraName(cameras, 'yard'), 'yard');
  assert.equal(shownCameraName([], null), null);
});

test('tiles are rebuilt only when the cameras change', () => {
  const a = [{ name: 'front', paths: { ws: '/cam/front/ws' }, fps: { processed: 1 } }, { name: 'yard', paths: { ws: '/cam/yard/ws' } }];
  const b = [{ name: 'front', paths: { ws: '/cam/front/ws' }, fps: { processed: 9 } }, { name: 'yard', paths: { ws: '/cam/yard/ws' } }];
  assert.equal(sameCameras(a, b), true);
  assert.equal(sameCameras(a, [...b].reverse()), false);
  assert.equal(sameCameras(a, a.slice(0, 1)), false);
  assert.equal(sameCameras([], undefined), true);
});
