/**
 * The MoE MLP and the MoE transformer block against central finite differences on the float64 reference: dx and
 * every parameter's gradient through the split backward, top-1 and top-2, with tokens over capacity and dropless,
 * with the aux loss's gradient (objective Σ y·R + w·aux) and without.
 */
import { describe, expect, it } from 'vitest';
import { Rng } from '../../util/rng.ts';
import type { Tensor } from '../backend.ts';
import { GptMoeBlock } from '../layers/gpt-moe-block.ts';
import { MoeMlp } from '../layers/moe-mlp.ts';
import { compareGrads, cpuData, dot, numericGrad, randomArray } from '../testing/gradcheck.ts';
import { be, checkLayer, FD_STEP, FD_TOL, jitter, randomTensor } from '../testing/layer-check.ts';
import type { GptMoeBlockSpec } from './moe-spec.ts';

const init = { kind: 'normal', std: 0.5 } as const;

describe('MoeMlp matches finite differences, aux loss included', () => {
  it.each([
    // k, capacityFactor, aux weight
    [1, 1, 0.7],
    [2, 1, 0.7],
    [1, 0, 0.3],
    [2, 0, 0],
  ])('top-%i, capacity factor %s, aux weight %s', async (k, capacityFactor, w) => {
    const rng = new Rng(40 + k);
    const S = 8, C = 3, E = 4;
    const moe = new MoeMlp(be, { prefix: 'h.mlp', dim: C, experts: E, topK: k, capacityFactor, init, projInit: init }, 9);
    const u = randomTensor(rng, [S, C], 1.5);
    const R = be.tensor(randomArray(rng, S * C), [S, C]);
    const objective = async () => {
      const f = await moe.forward(u, false, true);
      return dot(cpuData(f.out), cpuData(R)) + w * cpuData((f.aux as { loss: Tensor }).loss)[0];
    };
    const f = await moe.forward(u, true, true);
    // With a capacity, some choices are over it (so the drops' backward is checked too).
    if (capacityFactor > 0) expect(Array.from(await be.read(f.saved[3])).some((v) => v < 0)).toBe(true);
    const aux = f.aux as { loss: Tensor; dProbs: Tensor };
    const du = await moe.backwardInput(f.saved, R, { dProbs: aux.dProbs, scale: w });
    const c = compareGrads(cpuData(du), await numericGrad(objective, cpuData(u), FD_STEP));
    expect(c.relErr, 'du').toBeLessThan(FD_TOL);
    for (const p of moe.params) be.fill(p.grad, 0);
    moe.backwardWeight(f.saved);
    for (const p of moe.params) {
      const g = compareGrads(cpuData(p.grad), await numericGrad(objective, cpuData(p.value), FD_STEP));
      expect(g.relErr, p.name).toBeLessThan(FD_TOL);
      expect(g.norm, `${p.name} is not trivially zero`).toBeGreaterThan(1e-3);
    }
  });

  it('a capacity of one row per expert drops tokens, and a dropped token gets nothing from that expert', async () => {
    const rng = new Rng(7);
    const S = 8, C = 3, E = 2;
    const moe = new MoeMlp(be, { prefix: 'h.mlp', dim: C, experts: E, topK: 1, capacityFactor: 0.25, init, projInit: init }, 9);
    expect(moe.capacity(S)).toBe(1);
    const u = randomTensor(rng, [S, C]);
    const f = await moe.forward(u, true, false);
    const slot = Array.from(await be.read(f.saved[3]));
    const out = cpuData(f.out);
    expect(slot.filter((v) => v >= 0).length).toBeLessThanOrEqual(2);
    slot.forEach((r, s) => {
      if (r < 0) for (let c = 0; c < C; c++) expect(out[s * C + c]).toBe(0);
    });
  });
});

function spec(k: number, capacityFactor: number, auxLossWeight: number, T: number, heads: number, C: number): GptMoeBlockSpec {
  return { kind: 'gpt-moe-block', name: 'transformer', prefix: 'transformer.h.1', dim: C, heads, blockSize: T, init, projInit: init, experts: 3, topK: k, capacityFactor, auxLossWeight, stepTokens: 4 * T };
}

describe('GptMoeBlock matches finite differences', () => {
  it.each([
    [1, 1.5, 2, 4, 2, 2],
    [2, 1, 1, 5, 1, 3],
    [2, 0, 2, 3, 2, 2],
  ])('top-%i, capacity factor %s, B=%i T=%i heads=%i D=%i: dx and every parameter (aux weight 0)', async (k, cf, B, T, heads, D) => {
    const rng = new Rng(200 + T);
    const layer = new GptMoeBlock(be, 'block1.transformer', spec(k, cf, 0, T, heads, heads * D), 11);
    jitter(layer, rng, 0.2);
    expect(layer.params.map((p) => p.name).slice(-3)).toEqual(['transformer.h.1.mlp.router.weight', 'transformer.h.1.mlp.experts.c_fc.weight', 'transformer.h.1.mlp.experts.c_proj.weight']);
    await checkLayer(layer, randomTensor(rng, [B * T, heads * D], 1.5), 12);
  });

  it('with the aux loss: dx and the router against Σ y·R + w·aux, and auxLoss holds w·aux', async () => {
    const rng = new Rng(31);
    const B = 2, T = 4, C = 4;
    const layer = new GptMoeBlock(be, 'b', spec(2, 1, 0.5, T, 2, C), 5);
    jitter(layer, rng, 0.2);
    const x = randomTensor(rng, [B * T, C]);
    const R = be.tensor(randomArray(rng, B * T * C), [B * T, C]);
    const w = layer.auxWeight(B * T);
    expect(w).toBeCloseTo((0.5 * B * T) / (4 * T), 15);
    /** Σ y·R + (what one backward adds to auxLoss), read from the layer's own accumulator. */
    const objective = async () => {
      const f = await layer.forward(x, true);
      const zero = be.zeros([B * T, C]);
      await layer.backwardInput(f.saved, zero);
      const a = cpuData(layer.auxLoss)[0];
      be.fill(layer.auxLoss, 0);
      return dot(cpuData(f.y), cpuData(R)) + a;
    };
    const f = await layer.forward(x, true);
    const dx = await layer.backwardInput(f.saved, R);
    const auxTaken = cpuData(layer.auxLoss)[0];
    expect(auxTaken).toBeGreaterThan(0);
    be.fill(layer.auxLoss, 0);
    for (const p of layer.params) be.fill(p.grad, 0);
    layer.backwardWeight(f.saved, R);
    expect(compareGrads(cpuData(dx), await numericGrad(objective, cpuData(x), FD_STEP)).relErr).toBeLessThan(FD_TOL);
    const router = layer.params.find((p) => p.name.endsWith('router.weight'));
    if (!router) throw new Error('no router');
    expect(compareGrads(cpuData(router.grad), await numericGrad(objective, cpuData(router.value), FD_STEP)).relErr).toBeLessThan(FD_TOL);
  });
});
