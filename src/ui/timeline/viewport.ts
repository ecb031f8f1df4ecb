/**
 * The visible time window of a timeline view and the pure arithmetic of
 * zooming (about a point) and panning, clamped so the data never leaves the
 * view entirely and the zoom stays within sensible bounds.
 */
export interface Viewport {
  /** Time at the left and right edge of the plot area. */
  a: number;
  b: number;
}

export interface Bounds {
  /** Data extent. */
  t0: number;
  t1: number;
}

/** Smallest window, as a fraction of the data extent. */
const MIN_SPAN_FRACTION = 1e-5;
/** Room allowed beyond the data either side, as a fraction of the extent. */
const MARGIN = 0.05;

function extent(bounds: Bounds): number {
  return Math.max(bounds.t1 - bounds.t0, 1e-9);
}

/** The whole data with a little room either side. */
export function fitViewport(bounds: Bounds): Viewport {
  const span = extent(bounds);
  return { a: bounds.t0 - span * 0.01, b: bounds.t1 + span * 0.01 };
}

export function clampViewport(v: Viewport, bounds: Bounds): Viewport {
  const full = extent(bounds);
  const maxSpan = full * (1 + 2 * MARGIN);
  const minSpan = full * MIN_SPAN_FRACTION;
  let span = Math.min(Math.max(v.b - v.a, minSpan), maxSpan);
  if (!Number.isFinite(span)) span = maxSpan;
  let a = Number.isFinite(v.a) ? v.a : bounds.t0;
  const lo = bounds.t0 - full * MARGIN;
  const hi = bounds.t1 + full * MARGIN;
  if (a < lo) a = lo;
  if (a + span > hi) a = hi - span;
  return { a, b: a + span };
}

/** Zooms by `factor` (< 1 zooms in) keeping time `at` under the same pixel. */
export function zoomAbout(v: Viewport, at: number, factor: number, bounds: Bounds): Viewport {
  const a = at - (at - v.a) * factor;
  const b = at + (v.b - at) * factor;
  return clampViewport({ a, b }, bounds);
}

/** Pans by `dt` time units (positive moves the window later). */
export function panBy(v: Viewport, dt: number, bounds: Bounds): Viewport {
  return clampViewport({ a: v.a + dt, b: v.b + dt }, bounds);
}

/** Time at pixel x of a plot `width` pixels wide. */
export function timeAt(v: Viewport, x: number, width: number): number {
  return v.a + (x / Math.max(width, 1)) * (v.b - v.a);
}

/** Pixel of time t. */
export function xOf(v: Viewport, t: number, width: number): number {
  return ((t - v.a) / (v.b - v.a)) * width;
}

/** Wheel delta (pixels) to a zoom factor: smooth and symmetric (in then out returns). */
export function wheelZoomFactor(deltaY: number): number {
  return Math.exp(Math.max(-2, Math.min(2, deltaY * 0.0015)));
}

/**
 * Where a long timeline opens: from its start to the last end of an action (F, B, I, W) of a micro-batch below
 * `microbatches` (a stream's first steps); null when that is all of it or there is none.
 */
export function openingBounds(intervals: readonly { op: string; mb: number; end: number }[], microbatches: number, bounds: Bounds): Bounds | null {
  let end = -Infinity;
  for (const iv of intervals) if (iv.op !== 'comm' && iv.op !== 'collective' && iv.mb < microbatches && iv.end > end) end = iv.end;
  return Number.isFinite(end) && end > bounds.t0 && end < bounds.t1 ? { t0: bounds.t0, t1: end } : null;
}
