// With ?camera=NAME in the page's URL every path a panel uses is that camera's
// (web/camera.js). This file pretends to be such a page: it sets `location`
// before importing the panels (node --test runs each file in its own process,
// so the other files still see no camera).
import { test } from 'node:test';
import assert from 'node:assert/strict';

globalThis.location = { search: '?camera=back%20yard', protocol: 'http:', host: '127.0.0.1:8080' };

const camera = await import('../../web/camera.js');
const events = await import('../../web/events.js');
const templates = await import('../../web/templates.js');
const faces = await import('../../web/faces.js');
const sources = await import('../../web/sources.js');
const access = await import('../../web/access.js');
const video = await import('../../web/video.js');

test('the page\'s camera comes from its URL', () => {
  assert.equal(camera.CURRENT_CAMERA, 'back yard');
  assert.equal(camera.cameraPath('/ws'), '/cam/back%20yard/ws');
  assert.equal(video.videoWebSocketPath(video.VideoMode.H264, camera.cameraPath('/ws')), '/cam/back%20yard/ws?video=h264');
  assert.equal(camera.cameraPath('/api/state'), '/api/cameras/back%20yard/state');
});

test('every tool panel uses the camera\'s API', () => {
  assert.equal(templates.TEMPLATES_PATH, '/api/cameras/back%20yard/templates');
  assert.equal(faces.FACES_PATH, '/api/cameras/back%20yard/faces');
  assert.equal(faces.PEOPLE_PATH, '/api/cameras/back%20yard/people');
  assert.equal(sources.SOURCES_PATH, '/api/cameras/back%20yard/sources');
  assert.equal(sources.SOURCE_PATH, '/api/cameras/back%20yard/source');
  assert.equal(events.EVENTS_PATH, '/api/cameras/back%20yard/events');
});

test('events, their clips and pictures are the camera\'s', () => {
  assert.equal(events.eventsQuery({ kind: 'face', text: 'Ada' }), '/api/cameras/back%20yard/events?kind=face&name=Ada&limit=30');
  assert.equal(events.clipURL('e 1'), '/api/cameras/back%20yard/events/e%201/clip.mp4');
});

test('signing in stays server-wide', () => {
  assert.equal(access.SESSION_PATH, '/api/session');
});
