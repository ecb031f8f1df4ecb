/**
 * Every layer's backward, both halves, against central finite differences on
 * the float64 CPU reference. Objective: L = Σ y·R for a fixed random R, so
 * dL/dy = R.
 */
import { describe, expect, it } from 'vitest';
import { Rng } from '../util/rng.ts';
import type { Activation } from './backend.ts';
import { ActivationLayer } from './layers/activation-layer.ts';
import { Embedding } from './layers/embedding.ts';
import { LayerNorm } from './layers/layer-norm.ts';
import { Linear } from './layers/linear.ts';
import { SoftmaxCrossEntropy } from './layers/loss.ts';
import { compareGrads, cpuData, numericGrad } from './testing/gradcheck.ts';
import { be, checkLayer, FD_STEP, FD_TOL, jitter, randomTensor } from './testing/layer-check.ts';

const H = FD_STEP;
const TOL = FD_TOL;

describe('Linear', () => {
  it('dx = dy·Wᵀ, dW += xᵀ·dy, db += Σ dy match finite differences', async () => {
    const rng = new Rng(1);
    const layer = new Linear(be, 'l', { kind: 'linear', name: 'linear', in: 4, out: 3, init: { kind: 'normal', std: 0.5 } }, 7);
    jitter(layer, rng);
    await checkLayer(layer, randomTensor(rng, [5, 4]), 2);
  });

  it('backwardWeight accumulates (+=) rather than overwrites', async () => {
    const rng = new Rng(2);
    const layer = new Linear(be, 'l', { kind: 'linear', name: 'linear', in: 3, out: 2, init: { kind: 'normal', std: 0.5 } }, 7);
    const x = randomTensor(rng, [4, 3]);
    const { saved } = await layer.forward(x, true);
    const dy = randomTensor(rng, [4, 2]);
    layer.backwardWeight(saved, dy);
    const once = Array.from(cpuData(layer.W.grad));
    layer.backwardWeight(saved, dy);
    cpuData(layer.W.grad).forEach((v, i) => expect(v).toBeCloseTo(2 * once[i], 12));
  });
});

describe('LayerNorm', () => {
  it('dx, dgamma, dbeta match finite differences', async () => {
    const rng = new Rng(3);
    const layer = new LayerNorm(be, 'ln', { kind: 'layernorm', name: 'layernorm', dim: 6, eps: 1e-5 }, 7);
    jitter(layer, rng);
    await checkLayer(layer, randomTensor(rng, [4, 6], 2), 4);
  });
});

describe('Activation', () => {
  for (const fn of ['tanh', 'gelu', 'relu', 'identity'] as Activation[]) {
    it(`${fn}: dx matches finite differences`, async () => {
      const rng = new Rng(5);
      const x = randomTensor(rng, [4, 5], 1.5);
      // relu: keep every input well away from the kink at 0.
      const d = cpuData(x);
      for (let i = 0; i < d.length; i++) if (Math.abs(d[i]) < 0.05) d[i] = d[i] < 0 ? -0.1 : 0.1;
      await checkLayer(new ActivationLayer(be, `act-${fn}`, fn), x, 6);
    });
  }
});

describe('Embedding', () => {
  it('dTable matches finite differences, with repeated indices accumulating', async () => {
    const rng = new Rng(7);
    const layer = new Embedding(be, 'emb', { kind: 'embedding', name: 'embedding', vocab: 5, dim: 3, context: 3, init: { kind: 'normal', std: 1 } }, 7);
    // Index 0 repeats inside rows and across rows; index 4 never appears.
    const idx = be.tensor([0, 0, 1, 2, 0, 3, 1, 1, 1, 0, 2, 3], [4, 3], 'i32');
    await checkLayer(layer, idx, 8);
    const g = cpuData(layer.table.grad);
    expect(Array.from(g.slice(12, 15))).toEqual([0, 0, 0]);
  });

  it('has no input gradient, and says so', async () => {
    const layer = new Embedding(be, 'block0.embedding', { kind: 'embedding', name: 'embedding', vocab: 5, dim: 3, context: 2, init: { kind: 'normal', std: 1 } }, 7);
    expect(() => layer.backwardInput()).toThrow(/block0\.embedding backwardInput = "called": an embedding has no input gradient/);
  });
});

describe('softmax cross-entropy', () => {
  it('dlogits matches finite differences of the scaled loss', async () => {
    const rng = new Rng(9);
    const loss = new SoftmaxCrossEntropy(be, 'loss');
    const logits = randomTensor(rng, [6, 4], 2);
    const labels = be.tensor([0, 3, 1, 1, 2, 3], [6], 'i32');
    const scale = 1 / 6;
    const { dlogits } = await loss.forward(logits, labels, scale);
    const f = () => cpuData(loss.forward(logits, labels, scale).loss)[0];
    const c = compareGrads(cpuData(dlogits), await numericGrad(f, cpuData(logits), H));
    expect(c.relErr).toBeLessThan(TOL);
    expect(c.worst).toBeLessThan(1e-5);
  });

  it('loss equals an independent log-sum-exp computation', async () => {
    const loss = new SoftmaxCrossEntropy(be, 'loss');
    const L = [1, 2, 3, -1, 0, 1000];
    const { loss: v } = await loss.forward(be.tensor(L, [2, 3]), be.tensor([2, 0], [2], 'i32'), 0.5);
    const row0 = Math.log(Math.exp(1) + Math.exp(2) + Math.exp(3)) - 3;
    const row1 = 1000 + Math.log(1 + Math.exp(-1000) + Math.exp(-1001)) - -1;
    expect(cpuData(v)[0]).toBeCloseTo(0.5 * (row0 + row1), 9);
  });
});
