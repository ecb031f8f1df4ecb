/**
 * Every layer's backward, both halves, against central finite differences on
 * the float64 CPU reference. Objective: L = Σ y·R for a fixed random R, so
 * dL/dy = R.
 */
import { describe, expect, it } from 'vitest';
import { Rng } from '../util/rng.ts';
import type { Activation, Tensor } from './backend.ts';
import { CpuBackend } from './cpu-backend.ts';
import { ActivationLayer } from './layers/activation-layer.ts';
import { Embedding } from './layers/embedding.ts';
import type { Layer } from './layers/layer.ts';
import { LayerNorm } from './layers/layer-norm.ts';
import { Linear } from './layers/linear.ts';
import { SoftmaxCrossEntropy } from './layers/loss.ts';
import { compareGrads, cpuData, dot, numericGrad, randomArray } from './testing/gradcheck.ts';

const be = new CpuBackend();
const H = 1e-5;
const TOL = 1e-6;

/** Checks dx (unless the input is integer) and every param grad of `layer` at input x. */
function checkLayer(layer: Layer, x: Tensor, seed: number): void {
  const rng = new Rng(seed);
  const probe = layer.forward(x, true);
  const R = randomArray(rng, probe.y.size);
  const dy = be.tensor(R, probe.y.shape);
  const objective = () => dot(cpuData(layer.forward(x, false).y), R);

  if (x.dtype === 'f32') {
    const dx = cpuData(layer.backwardInput(probe.saved, dy));
    const c = compareGrads(dx, numericGrad(objective, cpuData(x), H));
    expect(c.relErr, `${layer.name} dx`).toBeLessThan(TOL);
    expect(c.worst, `${layer.name} dx, worst element`).toBeLessThan(1e-5);
  }
  for (const p of layer.params) be.fill(p.grad, 0);
  layer.backwardWeight?.(probe.saved, dy);
  for (const p of layer.params) {
    const c = compareGrads(cpuData(p.grad), numericGrad(objective, cpuData(p.value), H));
    expect(c.relErr, `${p.name} grad`).toBeLessThan(TOL);
    expect(c.worst, `${p.name} grad, worst element`).toBeLessThan(1e-5);
    expect(c.norm, `${p.name} grad is not trivially zero`).toBeGreaterThan(1e-3);
  }
}

function randomTensor(rng: Rng, shape: number[], scale = 1): Tensor {
  return be.tensor(randomArray(rng, shape.reduce((a, b) => a * b, 1), scale), shape);
}

/** Perturbs the non-trivial params so a check is not helped by init values (zero bias, unit gain). */
function jitter(layer: Layer, rng: Rng): void {
  for (const p of layer.params) {
    const d = cpuData(p.value);
    for (let i = 0; i < d.length; i++) d[i] += 0.3 * rng.normal();
  }
}

describe('Linear', () => {
  it('dx = dy·Wᵀ, dW += xᵀ·dy, db += Σ dy match finite differences', () => {
    const rng = new Rng(1);
    const layer = new Linear(be, 'l', { kind: 'linear', name: 'linear', in: 4, out: 3, init: { kind: 'normal', std: 0.5 } }, 7);
    jitter(layer, rng);
    checkLayer(layer, randomTensor(rng, [5, 4]), 2);
  });

  it('backwardWeight accumulates (+=) rather than overwrites', () => {
    const rng = new Rng(2);
    const layer = new Linear(be, 'l', { kind: 'linear', name: 'linear', in: 3, out: 2, init: { kind: 'normal', std: 0.5 } }, 7);
    const x = randomTensor(rng, [4, 3]);
    const { saved } = layer.forward(x, true);
    const dy = randomTensor(rng, [4, 2]);
    layer.backwardWeight(saved, dy);
    const once = Array.from(cpuData(layer.W.grad));
    layer.backwardWeight(saved, dy);
    cpuData(layer.W.grad).forEach((v, i) => expect(v).toBeCloseTo(2 * once[i], 12));
  });
});

describe('LayerNorm', () => {
  it('dx, dgamma, dbeta match finite differences', () => {
    const rng = new Rng(3);
    const layer = new LayerNorm(be, 'ln', { kind: 'layernorm', name: 'layernorm', dim: 6, eps: 1e-5 }, 7);
    jitter(layer, rng);
    checkLayer(layer, randomTensor(rng, [4, 6], 2), 4);
  });
});

describe('Activation', () => {
  for (const fn of ['tanh', 'gelu', 'relu', 'identity'] as Activation[]) {
    it(`${fn}: dx matches finite differences`, () => {
      const rng = new Rng(5);
      const x = randomTensor(rng, [4, 5], 1.5);
      // relu: keep every input well away from the kink at 0.
      const d = cpuData(x);
      for (let i = 0; i < d.length; i++) if (Math.abs(d[i]) < 0.05) d[i] = d[i] < 0 ? -0.1 : 0.1;
      checkLayer(new ActivationLayer(be, `act-${fn}`, fn), x, 6);
    });
  }
});

describe('Embedding', () => {
  it('dTable matches finite differences, with repeated indices accumulating', () => {
    const rng = new Rng(7);
    const layer = new Embedding(be, 'emb', { kind: 'embedding', name: 'embedding', vocab: 5, dim: 3, context: 3, init: { kind: 'normal', std: 1 } }, 7);
    // Index 0 repeats inside rows and across rows; index 4 never appears.
    const idx = be.tensor([0, 0, 1, 2, 0, 3, 1, 1, 1, 0, 2, 3], [4, 3], 'i32');
    checkLayer(layer, idx, 8);
    const g = cpuData(layer.table.grad);
    expect(Array.from(g.slice(12, 15))).toEqual([0, 0, 0]);
  });

  it('has no input gradient, and says so', () => {
    const layer = new Embedding(be, 'block0.embedding', { kind: 'embedding', name: 'embedding', vocab: 5, dim: 3, context: 2, init: { kind: 'normal', std: 1 } }, 7);
    expect(() => layer.backwardInput()).toThrow(/block0\.embedding backwardInput = "called": an embedding has no input gradient/);
  });
});

describe('softmax cross-entropy', () => {
  it('dlogits matches finite differences of the scaled loss', () => {
    const rng = new Rng(9);
    const loss = new SoftmaxCrossEntropy(be, 'loss');
    const logits = randomTensor(rng, [6, 4], 2);
    const labels = be.tensor([0, 3, 1, 1, 2, 3], [6], 'i32');
    const scale = 1 / 6;
    const { dlogits } = loss.forward(logits, labels, scale);
    const f = () => cpuData(loss.forward(logits, labels, scale).loss)[0];
    const c = compareGrads(cpuData(dlogits), numericGrad(f, cpuData(logits), H));
    expect(c.relErr).toBeLessThan(TOL);
    expect(c.worst).toBeLessThan(1e-5);
  });

  it('loss equals an independent log-sum-exp computation', () => {
    const loss = new SoftmaxCrossEntropy(be, 'loss');
    const L = [1, 2, 3, -1, 0, 1000];
    const { loss: v } = loss.forward(be.tensor(L, [2, 3]), be.tensor([2, 0], [2], 'i32'), 0.5);
    const row0 = Math.log(Math.exp(1) + Math.exp(2) + Math.exp(3)) - 3;
    const row1 = 1000 + Math.log(1 + Math.exp(-1000) + Math.exp(-1001)) - -1;
    expect(cpuData(v)[0]).toBeCloseTo(0.5 * (row0 + row1), 9);
  });
});
