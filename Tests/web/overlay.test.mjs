// Unit tests for the label text web/overlay.js draws beside each box. Run: node --test Tests/web/
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { detectionLabel } from '../../web/overlay.js';

test('a face label shows id, name, score, a smile from 0.5 and closed eyes', () => {
  const face = { kind: 'face', id: 3, name: 'Ada', score: 0.91, smile: 0.72, eyesClosed: true };
  assert.equal(detectionLabel(face), '#3 Ada 0.91 smiling eyes closed');
  assert.equal(detectionLabel({ ...face, smile: 0.49, eyesClosed: false }), '#3 Ada 0.91');
  assert.equal(detectionLabel({ kind: 'face', id: 7, score: 0.5, smile: 0.5 }), '#7 0.50 smiling');
});

test('attributes that were not measured are left out of the label', () => {
  assert.equal(detectionLabel({ kind: 'face', id: 1, score: 0.8 }), '#1 0.80');
});

test('a template label shows its name and score', () => {
  assert.equal(detectionLabel({ kind: 'template', label: 'logo', score: 0.834 }), 'logo 0.83');
});
