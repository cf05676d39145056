// Pure geometry for the overlay: normalized frame coordinates -> canvas pixels.
//
// Nothing here touches the DOM, so every function is unit-tested under Node
// (Tests/web/geometry.test.mjs). All results are in the same pixel space as the
// `fit` they were given (the canvas backing store, i.e. device pixels).
//
// Conventions (from the /ws contract): normalized coordinates are [0, 1] of the
// frame as sent, origin top-left, y down. `roll` is degrees, clockwise positive in
// image coordinates; `yaw` is degrees in [-90, 90], positive when the face turns
// towards the image's right.

/** Largest yaw the cue shows; the contract bounds yaw to this anyway. */
export const MAX_YAW_DEGREES = 90;
/** The yaw cue's inner outline, as a fraction of the face box, when facing the camera. */
export const YAW_INNER_RATIO = 0.6;
/** Arrowhead length as a fraction of the face box width (never below MIN_ARROW_HEAD_PX). */
export const ARROW_HEAD_RATIO = 0.12;
export const MIN_ARROW_HEAD_PX = 4;
/** Arrowhead half-angle, degrees. */
export const ARROW_HEAD_ANGLE_DEGREES = 28;

const EMPTY_FIT = Object.freeze({ scale: 0, offsetX: 0, offsetY: 0, width: 0, height: 0 });

/**
 * Fit a srcW x srcH image inside a dstW x dstH area, keeping its aspect ratio
 * (CSS object-fit: contain). Bars go left/right when the area is wider than the
 * image, top/bottom when it is taller; the image is centred.
 * @returns {{scale:number, offsetX:number, offsetY:number, width:number, height:number}}
 */
export function fitContain(srcW, srcH, dstW, dstH) {
  if (!(srcW > 0 && srcH > 0 && dstW > 0 && dstH > 0)) return EMPTY_FIT;
  const scale = Math.min(dstW / srcW, dstH / srcH);
  const width = srcW * scale;
  const height = srcH * scale;
  return { scale, offsetX: (dstW - width) / 2, offsetY: (dstH - height) / 2, width, height };
}

/** A normalized point [x, y] -> canvas pixels [x, y]. */
export function pointToCanvas(point, fit) {
  return [fit.offsetX + point[0] * fit.width, fit.offsetY + point[1] * fit.height];
}

/** A normalized box {x, y, w, h} -> canvas-pixel rect {x, y, w, h}. */
export function boxToCanvas(box, fit) {
  return {
    x: fit.offsetX + box.x * fit.width,
    y: fit.offsetY + box.y * fit.height,
    w: box.w * fit.width,
    h: box.h * fit.height,
  };
}

/** Centre [x, y] of a rect {x, y, w, h}. */
export function rectCenter(rect) {
  return [rect.x + rect.w / 2, rect.y + rect.h / 2];
}

export function degreesToRadians(degrees) {
  return (degrees * Math.PI) / 180;
}

/**
 * Rotate point [x, y] about centre [cx, cy] by `degrees`, clockwise positive on a
 * y-down surface. This is the same rotation canvas `rotate()` applies.
 */
export function rotatePoint(point, center, degrees) {
  const a = degreesToRadians(degrees);
  const cos = Math.cos(a);
  const sin = Math.sin(a);
  const dx = point[0] - center[0];
  const dy = point[1] - center[1];
  return [center[0] + dx * cos - dy * sin, center[1] + dx * sin + dy * cos];
}

/**
 * Corners of `rect` rotated by `rollDegrees` about its centre, in the order the
 * unrotated rect has them: top-left, top-right, bottom-right, bottom-left.
 * @returns {Array<[number, number]>}
 */
export function rotatedCorners(rect, rollDegrees) {
  const center = rectCenter(rect);
  const corners = [
    [rect.x, rect.y],
    [rect.x + rect.w, rect.y],
    [rect.x + rect.w, rect.y + rect.h],
    [rect.x, rect.y + rect.h],
  ];
  return corners.map((p) => rotatePoint(p, center, rollDegrees || 0));
}

/** Axis-aligned bounding rect {x, y, w, h} of a list of points. */
export function boundingRect(points) {
  const xs = points.map((p) => p[0]);
  const ys = points.map((p) => p[1]);
  const x = Math.min(...xs);
  const y = Math.min(...ys);
  return { x, y, w: Math.max(...xs) - x, h: Math.max(...ys) - y };
}

function clamp(value, lo, hi) {
  return Math.min(hi, Math.max(lo, value));
}

/**
 * Yaw cue for a face box of size w x h, in the box's own frame: origin at the box
 * centre, x along the box's (unrolled) horizontal axis. Draw it after
 * translate(centre) + rotate(roll), so it turns with the box.
 *
 * - `inner`: an outline that narrows with cos(yaw) and slides towards the side the
 *   face turns to, like a head seen turning (a rect {x, y, w, h}).
 * - `arrow`: from the centre towards the turn direction, its length proportional
 *   to sin(yaw); `head` is the two arrowhead barb points. Both are null when the
 *   face looks straight at the camera (|yaw| too small to draw).
 */
export function yawCue(w, h, yawDegrees) {
  const yaw = clamp(Number.isFinite(yawDegrees) ? yawDegrees : 0, -MAX_YAW_DEGREES, MAX_YAW_DEGREES);
  const a = degreesToRadians(yaw);
  const baseW = w * YAW_INNER_RATIO;
  const innerW = baseW * Math.cos(a);
  const innerH = h * YAW_INNER_RATIO;
  const shift = (baseW / 2) * Math.sin(a);
  const inner = { x: shift - innerW / 2, y: -innerH / 2, w: innerW, h: innerH };
  const length = (w / 2) * Math.sin(a);
  const headLength = Math.max(MIN_ARROW_HEAD_PX, w * ARROW_HEAD_RATIO);
  if (Math.abs(length) < headLength / 2) return { yaw, inner, arrow: null, head: null };
  const from = [0, 0];
  const to = [length, 0];
  return { yaw, inner, arrow: { from, to }, head: arrowHead(from, to, headLength) };
}

/**
 * The two barb points of an arrowhead at `to` for an arrow from `from`.
 * @returns {[[number, number], [number, number]]}
 */
export function arrowHead(from, to, length) {
  const angle = Math.atan2(to[1] - from[1], to[0] - from[0]);
  const spread = degreesToRadians(ARROW_HEAD_ANGLE_DEGREES);
  const barb = (sign) => [
    to[0] - length * Math.cos(angle + sign * spread),
    to[1] - length * Math.sin(angle + sign * spread),
  ];
  return [barb(1), barb(-1)];
}

/**
 * Where to put a label box of size labelW x labelH for a shape whose bounding rect
 * is `bounds`: just above it, or just below when there is no room above, with the
 * left edge aligned and the whole label kept inside the canvas (canvasW x canvasH).
 * @returns {{x:number, y:number}} top-left of the label box
 */
export function labelPosition(bounds, labelW, labelH, canvasW, canvasH) {
  const above = bounds.y - labelH;
  const y = above >= 0 ? above : bounds.y + bounds.h;
  return {
    x: clamp(bounds.x, 0, Math.max(0, canvasW - labelW)),
    y: clamp(y, 0, Math.max(0, canvasH - labelH)),
  };
}

/**
 * Is `point` [x, y] inside `rect` {x, y, w, h} rotated by `rollDegrees` about its
 * centre (the face box as drawn)? `margin` grows the box on every side, in the same
 * pixels, so thin boxes stay easy to hit. Edges count as inside.
 */
export function pointInRotatedBox(point, rect, rollDegrees = 0, margin = 0) {
  if (!(rect && Number.isFinite(rect.w) && Number.isFinite(rect.h))) return false;
  const center = rectCenter(rect);
  // Undo the roll: rotate the point the other way and test against the upright box.
  const [x, y] = rotatePoint(point, center, -(rollDegrees || 0));
  const halfW = Math.abs(rect.w) / 2 + margin;
  const halfH = Math.abs(rect.h) / 2 + margin;
  return Math.abs(x - center[0]) <= halfW && Math.abs(y - center[1]) <= halfH;
}

/**
 * The topmost box hit by `point` among drawn `rects` ({x, y, w, h, roll}, later
 * ones drawn on top), or null. Among nested hits the smallest box wins, so a face
 * inside a larger box stays selectable.
 */
export function hitTest(point, rects, margin = 0) {
  let best = null;
  for (let i = rects.length - 1; i >= 0; i -= 1) {
    const rect = rects[i];
    if (!pointInRotatedBox(point, rect, rect.roll, margin)) continue;
    if (!best || Math.abs(rect.w * rect.h) < Math.abs(best.w * best.h)) best = rect;
  }
  return best;
}

/** A pointer event's client position -> canvas backing-store pixels. */
export function clientToCanvas(clientX, clientY, bounds, canvasW, canvasH) {
  if (!(bounds.width > 0 && bounds.height > 0)) return [NaN, NaN];
  return [((clientX - bounds.left) * canvasW) / bounds.width, ((clientY - bounds.top) * canvasH) / bounds.height];
}
