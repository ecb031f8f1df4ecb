/**
 * Synthetic 2-D classification sets, seeded. Points lie roughly in [-1.5, 1.5]².
 *
 * - spiral: 3 interleaved arms (the CS231n spiral); noise is Gaussian on the
 *   angle, in radians (0.2 is the classic setting).
 * - moons: two interleaving half circles (scikit-learn's make_moons, centred
 *   and scaled); noise is Gaussian on each coordinate.
 * - circles: a ring of radius 1 around one of radius 0.5; Gaussian
 *   coordinate noise.
 * - xor: uniform points in [-1, 1]², class = sign(x) xor sign(y), computed
 *   before the Gaussian coordinate noise is added (so noise flips some labels
 *   near the axes).
 *
 * Points are spread evenly over the classes (the first n % classes classes
 * get one more; xor's labels follow the drawn position, so its classes are
 * balanced only on average) and come out grouped; the batch sampler shuffles.
 */
import { ConfigError, requireFinite, requireInt, requireOneOf } from '../util/errors.ts';
import { Rng } from '../util/rng.ts';
import type { Examples } from './examples.ts';

export type TwoDName = 'spiral' | 'moons' | 'circles' | 'xor';
export const TWO_D_SETS: readonly TwoDName[] = ['spiral', 'moons', 'circles', 'xor'];

export const TWO_D_CLASSES: Readonly<Record<TwoDName, number>> = { spiral: 3, moons: 2, circles: 2, xor: 2 };

/** A typical noise level per set, the one the default configurations use. */
export const TWO_D_DEFAULT_NOISE: Readonly<Record<TwoDName, number>> = { spiral: 0.2, moons: 0.1, circles: 0.05, xor: 0.05 };

export function makeTwoD(name: TwoDName, points: number, noise: number, seed: number): Examples {
  requireOneOf('dataset', name, TWO_D_SETS);
  const classes = TWO_D_CLASSES[name];
  requireInt('points', points, classes);
  requireFinite('noise', noise, { min: 0 });
  if (noise > 1) throw new ConfigError('noise', noise, 'must be at most 1');
  const rng = new Rng(seed).fork(`two-d:${name}`);
  const x = new Float32Array(points * 2);
  const y = new Int32Array(points);
  let row = 0;
  for (let c = 0; c < classes; c++) {
    const count = Math.floor(points / classes) + (c < points % classes ? 1 : 0);
    for (let i = 0; i < count; i++, row++) {
      const [px, py, label] = point(name, c, count > 1 ? i / (count - 1) : 0, noise, rng);
      x[row * 2] = px;
      x[row * 2 + 1] = py;
      y[row] = label;
    }
  }
  return { n: points, inputs: x, inputCols: 2, inputDType: 'f32', labels: y };
}

/** One point of class c (xor: of the label its clean position gives) at arm position t in [0, 1]. */
function point(name: TwoDName, c: number, t: number, noise: number, rng: Rng): [number, number, number] {
  switch (name) {
    case 'spiral': {
      const r = t;
      const a = c * 4 + t * 4 + noise * rng.normal();
      return [r * Math.sin(a), r * Math.cos(a), c];
    }
    case 'moons': {
      const a = Math.PI * t;
      // make_moons: outer (1 - ...) moon and inner moon, then centred on 0.
      const px = c === 0 ? Math.cos(a) : 1 - Math.cos(a);
      const py = c === 0 ? Math.sin(a) : 0.5 - Math.sin(a);
      return [px - 0.5 + noise * rng.normal(), py - 0.25 + noise * rng.normal(), c];
    }
    case 'circles': {
      const a = 2 * Math.PI * rng.next();
      const r = c === 0 ? 1 : 0.5;
      return [r * Math.cos(a) + noise * rng.normal(), r * Math.sin(a) + noise * rng.normal(), c];
    }
    case 'xor': {
      const px = rng.uniform(-1, 1);
      const py = rng.uniform(-1, 1);
      return [px + noise * rng.normal(), py + noise * rng.normal(), px > 0 !== py > 0 ? 1 : 0];
    }
  }
}
