/**
 * The α–β model of a ring all-reduce, fitted to measured times: over n workers
 * a vector of `bytes` takes t = 2(n − 1) · α + 2(n − 1)/n · bytes / β (α the
 * latency of one chunk exchange, β the bandwidth of a link), the model the
 * simulator uses for a data-parallel step. Weighted least squares (relative
 * error) on the times of one ring size; both parameters are kept non-negative.
 */
import { ringAllReduceTime } from '../schedule/allreduce-cost.ts';

export interface AlphaBeta {
  /** Latency per chunk exchange, ms. */
  latencyMs: number;
  /** Link bandwidth, bytes per ms (= kB/s). */
  bytesPerMs: number;
}

/** The model's time of an all-reduce of `bytes` over `n` workers, ms. */
export function ringTimeMs(m: AlphaBeta, bytes: number, n: number): number {
  return ringAllReduceTime(bytes, n, m.latencyMs, m.bytesPerMs);
}

/** Fits α and β to `(bytes, ms)` points of one ring of n workers. */
export function fitAlphaBeta(points: readonly { bytes: number; ms: number }[], n: number): AlphaBeta {
  if (n < 2) throw new Error(`fitAlphaBeta: a ring needs at least 2 workers (n = ${n})`);
  if (points.length < 2) throw new Error(`fitAlphaBeta: needs at least 2 points (got ${points.length})`);
  // t = a · x + b with x = 2(n − 1)/n · bytes, a = 1/β, b = 2(n − 1) · α, fitted
  // in relative terms (weights 1/t²) so the small vectors, where α rules,
  // count as much as the large ones, where β does.
  const xs = points.map((p) => ((2 * (n - 1)) / n) * p.bytes);
  const ys = points.map((p) => p.ms);
  const ws = ys.map((y) => 1 / Math.max(y, 1e-9) ** 2);
  const sw = ws.reduce((s, w) => s + w, 0);
  const mx = xs.reduce((s, x, i) => s + ws[i] * x, 0) / sw;
  const my = ys.reduce((s, y, i) => s + ws[i] * y, 0) / sw;
  let sxy = 0, sxx = 0;
  xs.forEach((x, i) => {
    sxy += ws[i] * (x - mx) * (ys[i] - my);
    sxx += ws[i] * (x - mx) ** 2;
  });
  const a = sxx > 0 ? Math.max(sxy / sxx, 1e-12) : 1e-12;
  const b = Math.max(0, my - a * mx);
  return { latencyMs: b / (2 * (n - 1)), bytesPerMs: 1 / a };
}

/**
 * α and β from measured all-reduces only where they can be told apart: at least two vectors whose sizes are at least
 * 2× apart (one size, or sizes close together, fit a line through noise); null otherwise, for the caller to read all
 * of the time as bandwidth.
 */
export function fitWhereSizesDiffer(points: readonly { bytes: number; ms: number }[], n: number): AlphaBeta | null {
  const usable = points.filter((p) => p.bytes > 0 && p.ms > 0);
  if (usable.length < 2) return null;
  const sizes = usable.map((p) => p.bytes);
  return Math.max(...sizes) >= 2 * Math.min(...sizes) ? fitAlphaBeta(usable, n) : null;
}
