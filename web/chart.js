// A live line chart of the server's frame rates over the last two minutes, fed
// one sample per /api/state poll (the server's own numbers, never estimates made
// here). A failed poll adds a gap, so an outage shows as a break in the lines.
//
// Runs on the main thread. The sample window and the plot geometry are pure
// functions (unit-tested in Tests/web/chart.test.mjs); FpsChart owns the canvas.

export const CHART_WINDOW_MS = 120000;
/** The y axis never goes below this many fps, so a still source doesn't look noisy. */
export const MIN_Y_MAX = 5;
export const GRID_LINES = 4;
/** The newest value's dot is this much wider than its line (radius, CSS px). */
export const END_DOT_EXTRA_PX = 1.5;
export const CHART_FONT_PX = 10;
export const CHART_PAD_PX = Object.freeze({ left: 26, right: 6, top: 6, bottom: 14 });

/**
 * The plotted series: key in /api/state "fps", label, colour, line width (CSS px).
 * In a healthy server the three lines coincide, so they are drawn widest first:
 * each stays visible as a band around the next.
 */
export const SERIES = Object.freeze([
  Object.freeze({ key: 'capture', label: 'Capture', color: '#35d07f', width: 1.5 }),
  Object.freeze({ key: 'processed', label: 'Processed', color: '#00e5ff', width: 3 }),
  Object.freeze({ key: 'sent', label: 'Sent', color: '#ffb020', width: 5 }),
]);
const DRAW_ORDER = Object.freeze([...SERIES].sort((a, b) => b.width - a.width));
const CHART_COLORS = Object.freeze({ grid: '#2a3140', axisText: '#9aa6b8', background: '#151922' });

/** One sample from an /api/state answer at time `t` (ms), or a gap when state is null. */
export function sampleFromState(state, t) {
  if (!state) return { t, gap: true };
  const sample = { t };
  for (const { key } of SERIES) {
    const value = state.fps?.[key];
    sample[key] = Number.isFinite(value) ? value : null;
  }
  return sample;
}

/** Samples newer than now - windowMs (one older one kept so the line reaches the left edge). */
export function pruneSamples(samples, now, windowMs = CHART_WINDOW_MS) {
  const start = now - windowMs;
  let first = samples.findIndex((s) => s.t >= start);
  if (first === -1) return samples.length ? samples.slice(-1) : [];
  if (first > 0) first -= 1;
  return samples.slice(first);
}

/** A round upper bound for the y axis: 1, 2, 2.5 or 5 times a power of ten, at least `floor`. */
export function niceCeiling(value, floor = MIN_Y_MAX) {
  const v = Math.max(floor, Number.isFinite(value) ? value : 0);
  const power = 10 ** Math.floor(Math.log10(v));
  for (const step of [1, 2, 2.5, 5, 10]) {
    if (step * power >= v - 1e-9) return step * power;
  }
  return 10 * power;
}

/** Largest plotted value in the samples (gaps and nulls ignored). */
export function maxValue(samples) {
  let max = 0;
  for (const sample of samples) {
    if (sample.gap) continue;
    for (const { key } of SERIES) if (Number.isFinite(sample[key])) max = Math.max(max, sample[key]);
  }
  return max;
}

/**
 * Polylines for one series inside a plot area {x, y, w, h}: time runs from
 * now - windowMs (left) to now (right), value from 0 (bottom) to yMax (top).
 * Gaps and missing values split the line. Returns an array of [[x, y], ...].
 */
export function seriesSegments(samples, key, now, windowMs, area, yMax) {
  const segments = [];
  let current = [];
  for (const sample of samples) {
    const value = sample.gap ? null : sample[key];
    if (!Number.isFinite(value)) {
      if (current.length) segments.push(current);
      current = [];
      continue;
    }
    const x = area.x + ((sample.t - (now - windowMs)) / windowMs) * area.w;
    const clamped = Math.min(Math.max(value, 0), yMax);
    const y = area.y + area.h - (clamped / yMax) * area.h;
    current.push([Math.max(area.x, x), y]);
  }
  if (current.length) segments.push(current);
  return segments;
}

export class FpsChart {
  /** @param {HTMLCanvasElement} canvas */
  constructor(canvas, { windowMs = CHART_WINDOW_MS, now = () => performance.now() } = {}) {
    this.canvas = canvas;
    this.ctx = canvas.getContext('2d');
    this.windowMs = windowMs;
    this.now = now;
    this.samples = [];
    this.dpr = 1;
    this.drawnSegments = 0;
    new ResizeObserver(([entry]) => {
      this.dpr = window.devicePixelRatio || 1;
      const w = Math.max(1, Math.round(entry.contentRect.width * this.dpr));
      const h = Math.max(1, Math.round(entry.contentRect.height * this.dpr));
      if (canvas.width !== w || canvas.height !== h) {
        canvas.width = w;
        canvas.height = h;
      }
      this.draw();
    }).observe(canvas);
  }

  /** Add the answer of one poll (null when the poll failed) and redraw. */
  push(state) {
    const t = this.now();
    this.samples.push(sampleFromState(state, t));
    this.samples = pruneSamples(this.samples, t, this.windowMs);
    this.draw();
    if (state) this.#describe(state);
  }

  #describe(state) {
    const parts = SERIES.map(({ key, label }) => {
      const value = state.fps?.[key];
      return `${label.toLowerCase()} ${Number.isFinite(value) ? value.toFixed(1) : 'unknown'}`;
    });
    this.canvas.setAttribute('aria-label', `Frame rates over the last two minutes; now ${parts.join(', ')} fps`);
  }

  draw() {
    const { ctx, canvas, dpr } = this;
    const now = this.now();
    ctx.setTransform(1, 0, 0, 1, 0, 0);
    ctx.fillStyle = CHART_COLORS.background;
    ctx.fillRect(0, 0, canvas.width, canvas.height);
    const pad = Object.fromEntries(Object.entries(CHART_PAD_PX).map(([k, v]) => [k, v * dpr]));
    const area = {
      x: pad.left,
      y: pad.top,
      w: Math.max(1, canvas.width - pad.left - pad.right),
      h: Math.max(1, canvas.height - pad.top - pad.bottom),
    };
    const yMax = niceCeiling(maxValue(this.samples) * 1.05);

    ctx.font = `${CHART_FONT_PX * dpr}px system-ui, sans-serif`;
    ctx.lineWidth = dpr;
    ctx.strokeStyle = CHART_COLORS.grid;
    ctx.fillStyle = CHART_COLORS.axisText;
    ctx.textAlign = 'right';
    ctx.textBaseline = 'middle';
    for (let i = 0; i <= GRID_LINES; i += 1) {
      const y = Math.round(area.y + (area.h * i) / GRID_LINES) + 0.5;
      ctx.beginPath();
      ctx.moveTo(area.x, y);
      ctx.lineTo(area.x + area.w, y);
      ctx.stroke();
      const value = yMax * (1 - i / GRID_LINES);
      ctx.fillText(Number.isInteger(value) ? String(value) : value.toFixed(1), area.x - 4 * dpr, y);
    }
    ctx.textBaseline = 'top';
    ctx.textAlign = 'left';
    ctx.fillText(`−${Math.round(this.windowMs / 1000)} s`, area.x, area.y + area.h + 2 * dpr);
    ctx.textAlign = 'right';
    ctx.fillText('now', area.x + area.w, area.y + area.h + 2 * dpr);

    let drawn = 0;
    ctx.lineJoin = 'round';
    ctx.lineCap = 'round';
    for (const { key, color, width } of DRAW_ORDER) {
      ctx.lineWidth = width * dpr;
      ctx.strokeStyle = color;
      ctx.fillStyle = color;
      for (const segment of seriesSegments(this.samples, key, now, this.windowMs, area, yMax)) {
        ctx.beginPath();
        if (segment.length === 1) {
          ctx.arc(segment[0][0], segment[0][1], width * dpr, 0, Math.PI * 2);
          ctx.fill();
        } else {
          ctx.moveTo(...segment[0]);
          for (const point of segment.slice(1)) ctx.lineTo(...point);
          ctx.stroke();
        }
        drawn += 1;
      }
    }
    // A dot on each line's newest value, so the present stands out of the history.
    const newest = this.samples[this.samples.length - 1];
    if (newest && !newest.gap) {
      for (const { key, color, width } of DRAW_ORDER) {
        const [segment] = seriesSegments([newest], key, now, this.windowMs, area, yMax);
        if (!segment) continue;
        ctx.fillStyle = color;
        ctx.beginPath();
        ctx.arc(segment[0][0], segment[0][1], (width / 2 + END_DOT_EXTRA_PX) * dpr, 0, Math.PI * 2);
        ctx.fill();
      }
    }
    this.drawnSegments = drawn;
  }
}
