/**
 * Test helpers: central finite differences on the float64 CPU reference.
 * Not used by the app; no Node imports, so it also runs in a browser test.
 */
import type { Tensor } from '../backend.ts';
import { CpuTensor } from '../cpu-backend.ts';
import { Rng } from '../../util/rng.ts';

/** The float64 storage of a CPU tensor (to perturb it in place). */
export function cpuData(t: Tensor): Float64Array {
  if (!(t instanceof CpuTensor) || !(t.data instanceof Float64Array)) throw new Error('not a float CPU tensor');
  return t.data;
}

/** ∂f/∂x[i] for every i by central differences, x perturbed in place and restored. */
export async function numericGrad(f: () => number | Promise<number>, x: Float64Array, h = 1e-5): Promise<Float64Array> {
  const g = new Float64Array(x.length);
  for (let i = 0; i < x.length; i++) {
    const x0 = x[i];
    x[i] = x0 + h;
    const fp = await f();
    x[i] = x0 - h;
    const fm = await f();
    x[i] = x0;
    g[i] = (fp - fm) / (2 * h);
  }
  return g;
}

export interface GradComparison {
  /** ‖a − n‖ / max(‖a‖, ‖n‖). */
  relErr: number;
  /** Largest elementwise |a − n| / max(|a|, |n|, floor). */
  worst: number;
  norm: number;
}

export function compareGrads(analytic: ArrayLike<number>, numeric: ArrayLike<number>, floor = 1e-3): GradComparison {
  if (analytic.length !== numeric.length) throw new Error(`length ${analytic.length} vs ${numeric.length}`);
  let d2 = 0, a2 = 0, n2 = 0, worst = 0;
  for (let i = 0; i < analytic.length; i++) {
    const a = analytic[i], n = numeric[i];
    d2 += (a - n) ** 2;
    a2 += a * a;
    n2 += n * n;
    worst = Math.max(worst, Math.abs(a - n) / Math.max(Math.abs(a), Math.abs(n), floor));
  }
  const norm = Math.sqrt(Math.max(a2, n2));
  return { relErr: norm === 0 ? 0 : Math.sqrt(d2) / norm, worst, norm };
}

export function randomArray(rng: Rng, n: number, scale = 1): number[] {
  return Array.from({ length: n }, () => scale * rng.normal());
}

/** Σ y·r as a number, for an objective whose gradient with respect to y is r. */
export function dot(y: ArrayLike<number>, r: ArrayLike<number>): number {
  let s = 0;
  for (let i = 0; i < y.length; i++) s += y[i] * r[i];
  return s;
}
