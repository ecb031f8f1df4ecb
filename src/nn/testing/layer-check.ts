/**
 * A layer's backward, both halves, against central finite differences on the
 * float64 CPU reference. Objective: L = Σ y·R for a fixed random R, so
 * dL/dy = R. backwardWeight gets the same `saved` array backwardInput had (as
 * the stage passes it), so layers that rewrite it are checked as they run.
 */
import { expect } from 'vitest';
import { Rng } from '../../util/rng.ts';
import type { Tensor } from '../backend.ts';
import { CpuBackend } from '../cpu-backend.ts';
import type { Layer } from '../layers/layer.ts';
import { compareGrads, cpuData, dot, numericGrad, randomArray } from './gradcheck.ts';

export const be = new CpuBackend();
export const FD_STEP = 1e-5;
export const FD_TOL = 1e-6;

/** Checks dx (unless the input is integer) and every param grad of `layer` at input x. */
export async function checkLayer(layer: Layer, x: Tensor, seed: number): Promise<void> {
  const rng = new Rng(seed);
  const probe = await layer.forward(x, true);
  const R = randomArray(rng, probe.y.size);
  const dy = be.tensor(R, probe.y.shape);
  const objective = async () => dot(cpuData((await layer.forward(x, false)).y), R);

  if (x.dtype === 'f32') {
    const dx = cpuData(await layer.backwardInput(probe.saved, dy));
    const c = compareGrads(dx, await numericGrad(objective, cpuData(x), FD_STEP));
    expect(c.relErr, `${layer.name} dx`).toBeLessThan(FD_TOL);
    expect(c.worst, `${layer.name} dx, worst element`).toBeLessThan(1e-5);
  }
  for (const p of layer.params) be.fill(p.grad, 0);
  layer.backwardWeight?.(probe.saved, dy);
  for (const p of layer.params) {
    const c = compareGrads(cpuData(p.grad), await numericGrad(objective, cpuData(p.value), FD_STEP));
    expect(c.relErr, `${p.name} grad`).toBeLessThan(FD_TOL);
    expect(c.worst, `${p.name} grad, worst element`).toBeLessThan(1e-5);
    expect(c.norm, `${p.name} grad is not trivially zero`).toBeGreaterThan(1e-3);
  }
}

export function randomTensor(rng: Rng, shape: number[], scale = 1): Tensor {
  return be.tensor(randomArray(rng, shape.reduce((a, b) => a * b, 1), scale), shape);
}

/** Perturbs the non-trivial params so a check is not helped by init values (zero bias, unit gain). */
export function jitter(layer: Layer, rng: Rng, amount = 0.3): void {
  for (const p of layer.params) {
    const d = cpuData(p.value);
    for (let i = 0; i < d.length; i++) d[i] += amount * rng.normal();
  }
}
