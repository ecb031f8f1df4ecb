/**
 * Helpers for checking GPU results against the float64 CPU reference.
 *
 * Every test draws fresh inputs from a seed printed in its failure messages;
 * PIPELAB_SEED=<n> replays one.
 */
import { Rng } from '../../util/rng.ts';

export function testSeed(): number {
  const env = typeof process !== 'undefined' ? process.env.PIPELAB_SEED : undefined;
  if (env !== undefined && env !== '') return Number(env) >>> 0;
  const c = (globalThis as { crypto?: Crypto }).crypto;
  if (c?.getRandomValues) return c.getRandomValues(new Uint32Array(1))[0];
  return (Date.now() ^ Math.floor(Math.random() * 0x7fffffff)) >>> 0;
}

export function seedNote(seed: number): string {
  return `seed ${seed} (replay: PIPELAB_SEED=${seed} npx vitest run src/gpu)`;
}

export function randomArray(rng: Rng, n: number, scale = 1): number[] {
  const a = new Array<number>(n);
  for (let i = 0; i < n; i++) a[i] = rng.uniform(-scale, scale);
  return a;
}

export interface Errors {
  /** ||got - ref||_2 / ||ref||_2 (absolute when ||ref|| is 0). */
  rel: number;
  /** max |got - ref| */
  maxAbs: number;
  /** max |ref| */
  refMax: number;
  /** Index of the largest difference. */
  worst: number;
  /** A non-finite value where the reference is finite (or the other way round). */
  nonFinite: number;
}

export function compareArrays(got: ArrayLike<number>, ref: ArrayLike<number>): Errors {
  if (got.length !== ref.length) throw new Error(`length ${got.length} != reference length ${ref.length}`);
  let d2 = 0;
  let r2 = 0;
  let maxAbs = 0;
  let refMax = 0;
  let worst = -1;
  let nonFinite = -1;
  for (let i = 0; i < ref.length; i++) {
    const g = got[i];
    const r = ref[i];
    if (Number.isFinite(g) !== Number.isFinite(r)) {
      if (nonFinite < 0) nonFinite = i;
      continue;
    }
    const d = Math.abs(g - r);
    d2 += d * d;
    r2 += r * r;
    if (d > maxAbs) {
      maxAbs = d;
      worst = i;
    }
    refMax = Math.max(refMax, Math.abs(r));
  }
  const rel = r2 > 0 ? Math.sqrt(d2 / r2) : Math.sqrt(d2);
  return { rel, maxAbs, refMax, worst, nonFinite };
}

export interface CloseOptions {
  /** Norm-wise relative tolerance. Default 1e-4. */
  rel?: number;
  /** Max-abs tolerance, relative to max |ref| (with a floor of `absFloor`). Default 1e-4. */
  abs?: number;
  /** Below this, max |ref| counts as this for the max-abs check. Default 1e-6. */
  absFloor?: number;
}

/** Throws (with the seed and the worst element) unless got matches ref norm-wise and element-wise. */
export function assertClose(got: ArrayLike<number>, ref: ArrayLike<number>, what: string, seed: number, o: CloseOptions = {}): Errors {
  const e = compareArrays(got, ref);
  const relTol = o.rel ?? 1e-4;
  const absTol = (o.abs ?? 1e-4) * Math.max(e.refMax, o.absFloor ?? 1e-6);
  const where = e.worst >= 0 ? ` worst at [${e.worst}]: got ${got[e.worst]}, ref ${ref[e.worst]}` : '';
  if (e.nonFinite >= 0) {
    throw new Error(`${what}: non-finite mismatch at [${e.nonFinite}]: got ${got[e.nonFinite]}, ref ${ref[e.nonFinite]}; ${seedNote(seed)}`);
  }
  if (!(e.rel <= relTol)) {
    throw new Error(`${what}: relative error ${e.rel.toExponential(3)} > ${relTol};${where}; ${seedNote(seed)}`);
  }
  if (!(e.maxAbs <= absTol)) {
    throw new Error(`${what}: max abs error ${e.maxAbs.toExponential(3)} > ${absTol.toExponential(3)} (max |ref| ${e.refMax.toExponential(3)});${where}; ${seedNote(seed)}`);
  }
  return e;
}

export function makeRng(seed: number, label: string): Rng {
  return new Rng(seed).fork(label);
}
