// The one overlay class: draws a decoded frame and that same frame's detections
// onto one canvas in one go, so boxes can never land on a neighbouring frame.
//
// Runs on the main thread. Geometry comes from geometry.js (pure, unit-tested);
// this file only owns canvas state and styling.

import {
  fitContain,
  boxToCanvas,
  pointToCanvas,
  rectCenter,
  rotatedCorners,
  boundingRect,
  yawCue,
  labelPosition,
  degreesToRadians,
} from './geometry.js';

/** Colours, in CSS pixels unless named *_PX (those are multiplied by devicePixelRatio). */
export const COLORS = Object.freeze({
  background: '#0b0d10',
  face: '#ffd21f',
  selectedFace: '#ffffff',
  faceCue: 'rgba(255, 210, 31, 0.75)',
  template: '#00e5ff',
  groundTruth: '#ff4fd8',
  landmark: '#ff5a36',
  labelText: '#0b0d10',
});
export const LINE_WIDTH_PX = 3;
/** The face picked in the Faces panel is drawn this much thicker, in white. */
export const SELECTED_LINE_WIDTH_PX = 5;
export const CUE_LINE_WIDTH_PX = 2;
export const LANDMARK_RADIUS_PX = 3;
export const LABEL_FONT_PX = 13;
export const LABEL_PAD_PX = 4;
export const GROUND_TRUTH_DASH_PX = [6, 4];
/** Landmark names in drawing order (subject's point of view, as the contract names them). */
export const LANDMARK_NAMES = Object.freeze(['rightEye', 'leftEye', 'nose', 'mouthRight', 'mouthLeft']);

const FACE = 'face';
const TEMPLATE = 'template';

function formatScore(score) {
  return Number.isFinite(score) ? score.toFixed(2) : '';
}

/** Label text for a detection; plain text drawn with fillText, never HTML. */
export function detectionLabel(det) {
  if (det.kind === FACE) {
    const parts = [];
    if (det.id !== undefined) parts.push(`#${det.id}`);
    if (det.name) parts.push(det.name);
    parts.push(formatScore(det.score));
    if (det.smile !== undefined && det.smile >= 0.5) parts.push('smiling');
    if (det.eyesClosed === true) parts.push('eyes closed');
    return parts.filter(Boolean).join(' ');
  }
  return [det.label || det.kind || '?', formatScore(det.score)].filter(Boolean).join(' ');
}

export class Overlay {
  /**
   * @param {HTMLCanvasElement} canvas
   * @param {{landmarks?: boolean, groundTruth?: boolean, labels?: boolean, transparent?: boolean}} options
   *   transparent: a canvas laid over a <video> (clipvideo.js): boxes only, frames given with bitmap null
   */
  constructor(canvas, options = {}) {
    this.canvas = canvas;
    this.transparent = !!options.transparent;
    this.ctx = canvas.getContext('2d', { alpha: this.transparent });
    this.options = { landmarks: false, groundTruth: false, labels: true, selectedFaceId: null, ...options };
    this.dpr = 1;
    this.frame = null; // {meta, bitmap} currently on screen
    this.lastDrawn = null; // frozen record for the debug hook
  }

  setOptions(options) {
    this.options = { ...this.options, ...options };
    this.redraw();
  }

  /** Set the backing-store size in device pixels; redraws the current frame. */
  resize(deviceWidth, deviceHeight, dpr) {
    const w = Math.max(1, Math.round(deviceWidth));
    const h = Math.max(1, Math.round(deviceHeight));
    this.dpr = dpr || 1;
    if (this.canvas.width !== w || this.canvas.height !== h) {
      this.canvas.width = w;
      this.canvas.height = h;
    }
    this.redraw();
  }

  /**
   * Show a new frame ({meta, bitmap, format}; bitmap an ImageBitmap or a VideoFrame);
   * takes ownership of its bitmap and releases the previous one. `probe`, when
   * given, is called with (ctx, fit) right after the picture is drawn and before
   * any box, to read the painted picture back (the debug paint log).
   */
  show(frame, probe = null) {
    if (this.frame && this.frame.bitmap !== frame.bitmap) this.frame.bitmap?.close?.();
    this.frame = frame;
    this.redraw(probe);
  }

  redraw(probe = null) {
    const { ctx, canvas } = this;
    ctx.setTransform(1, 0, 0, 1, 0, 0);
    if (this.transparent) ctx.clearRect(0, 0, canvas.width, canvas.height);
    else {
      ctx.fillStyle = COLORS.background;
      ctx.fillRect(0, 0, canvas.width, canvas.height);
    }
    if (!this.frame) return;
    const { meta, bitmap } = this.frame;
    const srcW = meta.width || bitmap?.displayWidth || bitmap?.width || canvas.width;
    const srcH = meta.height || bitmap?.displayHeight || bitmap?.height || canvas.height;
    const fit = fitContain(srcW, srcH, canvas.width, canvas.height);
    if (bitmap) {
      ctx.imageSmoothingEnabled = true;
      ctx.imageSmoothingQuality = 'high';
      ctx.drawImage(bitmap, fit.offsetX, fit.offsetY, fit.width, fit.height);
    }
    if (probe) probe(ctx, fit);

    const rects = [];
    const truthRects = [];
    if (this.options.groundTruth) {
      for (const truth of meta.groundTruth || []) {
        const drawn = this.#drawGroundTruth(truth, fit);
        if (drawn) truthRects.push(Object.freeze(drawn));
      }
    }
    for (const det of meta.detections || []) {
      if (!det || !det.box) continue;
      rects.push(det.kind === FACE ? this.#drawFace(det, fit) : this.#drawBox(det, fit));
    }
    this.lastDrawn = Object.freeze({
      seq: meta.seq,
      format: this.frame.format || 'jpeg',
      width: srcW,
      height: srcH,
      // The decoded picture's own size (an H.264 rendition may be smaller than the source).
      picture: Object.freeze(bitmap ? { width: bitmap.displayWidth ?? bitmap.width, height: bitmap.displayHeight ?? bitmap.height }
        : { width: srcW, height: srcH }),
      detections: meta.detections || [],
      groundTruth: meta.groundTruth || [],
      truthRects: Object.freeze(truthRects),
      canvas: Object.freeze({ width: canvas.width, height: canvas.height, dpr: this.dpr }),
      fit: Object.freeze(fit),
      rects: Object.freeze(rects.map((rect) => Object.freeze(rect))),
      drawnAt: performance.now(),
    });
  }

  #px(cssPixels) {
    return cssPixels * this.dpr;
  }

  #drawBox(det, fit) {
    const { ctx } = this;
    const rect = boxToCanvas(det.box, fit);
    const color = det.kind === TEMPLATE ? COLORS.template : COLORS.face;
    ctx.save();
    ctx.strokeStyle = color;
    ctx.lineWidth = this.#px(LINE_WIDTH_PX);
    ctx.strokeRect(rect.x, rect.y, rect.w, rect.h);
    ctx.restore();
    this.#drawLabel(detectionLabel(det), rect, color);
    return {
      kind: det.kind,
      label: det.label,
      ...rect,
      roll: 0,
      color,
      transform: { translate: rectCenter(rect), rotateDegrees: 0 },
      corners: rotatedCorners(rect, 0),
    };
  }

  #drawFace(det, fit) {
    const { ctx } = this;
    const rect = boxToCanvas(det.box, fit);
    const roll = Number.isFinite(det.roll) ? det.roll : 0;
    const [cx, cy] = rectCenter(rect);
    const corners = rotatedCorners(rect, roll);
    const selected = det.id !== undefined && det.id === this.options.selectedFaceId;
    const color = selected ? COLORS.selectedFace : COLORS.face;

    ctx.save();
    ctx.translate(cx, cy);
    ctx.rotate(degreesToRadians(roll));
    ctx.strokeStyle = color;
    ctx.lineWidth = this.#px(selected ? SELECTED_LINE_WIDTH_PX : LINE_WIDTH_PX);
    ctx.strokeRect(-rect.w / 2, -rect.h / 2, rect.w, rect.h);
    if (Number.isFinite(det.yaw)) this.#drawYawCue(rect, det.yaw);
    ctx.restore();

    if (this.options.landmarks && det.landmarks) this.#drawLandmarks(det.landmarks, fit);
    this.#drawLabel(detectionLabel(det), boundingRect(corners), color);
    return {
      kind: FACE,
      id: det.id,
      ...rect,
      roll,
      yaw: det.yaw,
      selected,
      color,
      transform: { translate: [cx, cy], rotateDegrees: roll },
      corners,
    };
  }

  /** Called inside the face's translate/rotate, so the cue turns with the box. */
  #drawYawCue(rect, yaw) {
    const { ctx } = this;
    const cue = yawCue(rect.w, rect.h, yaw);
    ctx.strokeStyle = COLORS.faceCue;
    ctx.lineWidth = this.#px(CUE_LINE_WIDTH_PX);
    ctx.beginPath();
    ctx.ellipse(
      cue.inner.x + cue.inner.w / 2, cue.inner.y + cue.inner.h / 2,
      Math.max(cue.inner.w / 2, 0.5), cue.inner.h / 2, 0, 0, Math.PI * 2);
    ctx.stroke();
    if (!cue.arrow) return;
    ctx.beginPath();
    ctx.moveTo(...cue.arrow.from);
    ctx.lineTo(...cue.arrow.to);
    ctx.moveTo(...cue.head[0]);
    ctx.lineTo(...cue.arrow.to);
    ctx.lineTo(...cue.head[1]);
    ctx.stroke();
  }

  #drawLandmarks(landmarks, fit) {
    const { ctx } = this;
    ctx.save();
    ctx.fillStyle = COLORS.landmark;
    for (const name of LANDMARK_NAMES) {
      const point = landmarks[name];
      if (!Array.isArray(point)) continue;
      const [x, y] = pointToCanvas(point, fit);
      ctx.beginPath();
      ctx.arc(x, y, this.#px(LANDMARK_RADIUS_PX), 0, Math.PI * 2);
      ctx.fill();
    }
    ctx.restore();
  }

  /** A truth box, turned by its roll when it has one (the demo's face). */
  #drawGroundTruth(truth, fit) {
    if (!truth || !truth.box) return null;
    const { ctx } = this;
    const rect = boxToCanvas(truth.box, fit);
    const roll = Number.isFinite(truth.roll) ? truth.roll : 0;
    const [cx, cy] = rectCenter(rect);
    ctx.save();
    ctx.translate(cx, cy);
    ctx.rotate(degreesToRadians(roll));
    ctx.strokeStyle = COLORS.groundTruth;
    ctx.lineWidth = this.#px(CUE_LINE_WIDTH_PX);
    ctx.setLineDash(GROUND_TRUTH_DASH_PX.map((d) => this.#px(d)));
    ctx.strokeRect(-rect.w / 2, -rect.h / 2, rect.w, rect.h);
    ctx.restore();
    return { label: truth.label, ...rect, roll, corners: rotatedCorners(rect, roll) };
  }

  #drawLabel(text, bounds, color) {
    if (!this.options.labels || !text) return;
    const { ctx, canvas } = this;
    const pad = this.#px(LABEL_PAD_PX);
    ctx.save();
    ctx.font = `600 ${this.#px(LABEL_FONT_PX)}px system-ui, sans-serif`;
    ctx.textBaseline = 'top';
    const labelW = ctx.measureText(text).width + 2 * pad;
    const labelH = this.#px(LABEL_FONT_PX) + 2 * pad;
    // Leave the box's own stroke visible: start the label half a line above it.
    const lift = this.#px(LINE_WIDTH_PX) / 2;
    const box = { x: bounds.x - lift, y: bounds.y - lift, w: bounds.w + 2 * lift, h: bounds.h + 2 * lift };
    const { x, y } = labelPosition(box, labelW, labelH, canvas.width, canvas.height);
    ctx.fillStyle = color;
    ctx.fillRect(x, y, labelW, labelH);
    ctx.fillStyle = COLORS.labelText;
    ctx.fillText(text, x + pad, y + pad);
    ctx.restore();
  }
}
