/**
 * The MoE GPT on the WebGPU backend against the float64 reference: the whole model as one stage on a batch of
 * names (two micro-batches, so two routing groups), top-1 and top-2 with a capacity (factor 1), and
 * dropless: the loss, the aux loss, the routing counts per expert and micro-batch (exactly) and every gradient, then the weights after an SGD step (AdamW's first step would turn the float32 noise of the keys' bias gradient, zero in exact arithmetic, into ±lr). Same seeds and the
 * same float32-rounded weights on both; the routers' weights are scaled up so the routing is decisive (no two
 * experts within float32 rounding of each other), which makes the GPU's choices the CPU's.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BatchSampler, splitMicrobatches } from '../../data/batches.ts';
import { createDataset } from '../../data/datasets.ts';
import { targetCount } from '../../data/examples.ts';
import type { GpuBackend } from '../../gpu/gpu-backend.ts';
import { createTestBackend } from '../../gpu/testing/node-gpu.ts';
import { Rng } from '../../util/rng.ts';
import type { Backend } from '../backend.ts';
import { CpuBackend } from '../cpu-backend.ts';
import { buildModelSpec, defaultGptConfig } from '../model-config.ts';
import { createOptimizer } from '../optimizer.ts';
import { StageChain } from '../stage-chain.ts';
import { compareGrads } from '../testing/gradcheck.ts';
import { defaultTrainConfig, type TrainConfig } from '../train-config.ts';

let gpu: GpuBackend;
const cpu = new CpuBackend();
const TOL = 1e-4;

beforeAll(async () => {
  gpu = await createTestBackend();
});
afterAll(() => gpu?.destroy());

function close(what: string, g: ArrayLike<number>, c: ArrayLike<number>): void {
  const cmp = compareGrads(g, c);
  expect(cmp.relErr, `${what}: relative error`).toBeLessThan(TOL);
  expect(cmp.norm, `${what} is not trivially zero`).toBeGreaterThan(0);
}

describe('the MoE GPT on the GPU equals the CPU reference', () => {
  it.each([
    [1, 1],
    [2, 1],
    [2, 0],
  ])('top-%i, capacity factor %s: loss, aux loss, routing counts, every gradient, the weights after a step', async (topK, capacityFactor) => {
    const cfg: TrainConfig = { ...defaultTrainConfig('names'), ...defaultGptConfig(), layers: 2, heads: 2, width: 8, batchSize: 8, microbatches: 2, experts: 3, topK, capacityFactor, auxLossWeight: 0.1, optimizer: 'sgd' };
    const spec = buildModelSpec(cfg);
    const batch = new BatchSampler(createDataset(cfg).train, cfg.batchSize, 2).batch(0);
    const scale = 1 / targetCount(batch);
    const values: Record<string, number[]> = {};
    const r = new Rng(8);
    const run = async (be: Backend) => {
      const chain = new StageChain(be, spec, 1, 3);
      for (const p of chain.params) {
        values[p.name] ??= Array.from({ length: p.value.size }, () => Math.fround((p.name.endsWith('router.weight') ? 1 : 0.1) * r.normal() + (p.name.includes('ln_') && p.name.endsWith('weight') ? 1 : 0)));
      }
      chain.loadParams(values);
      chain.zeroGrads();
      let loss = 0;
      for (const [i, mb] of splitMicrobatches(batch, cfg.microbatches).entries()) loss += (await be.read(await chain.forwardBackward(i, mb, scale)))[0];
      const aux = be.zeros([1]);
      chain.takeAuxLoss(aux);
      const auxLoss = (await be.read(aux))[0];
      // The routing counts of each micro-batch and MoE layer, as the stage took them.
      const loads = [];
      for (const l of chain.takeRouteLoads()) {
        loads.push({ mb: l.mb, layer: l.layer, capacity: l.capacity, counts: Array.from(await be.read(l.counts)) });
        be.dispose(l.counts);
      }
      const grads = await chain.readGrads();
      const opt = createOptimizer(be, chain.params, cfg);
      opt.step(1);
      const after = await chain.readParams();
      opt.dispose();
      chain.dispose();
      return { loss, auxLoss, loads, grads, after };
    };
    const c = await run(cpu);
    const g = await run(gpu);
    expect(Math.abs(g.loss - c.loss) / c.loss).toBeLessThan(TOL);
    expect(c.auxLoss).toBeGreaterThan(0);
    expect(Math.abs(g.auxLoss - c.auxLoss) / c.auxLoss).toBeLessThan(TOL);
    // The routing counts: exactly the reference's (the choices are), 2 layers × 2 micro-batches, every token counted k times.
    expect(g.loads).toEqual(c.loads);
    expect(c.loads.map((l) => l.mb)).toEqual([0, 0, 1, 1]);
    for (const l of c.loads) expect(l.counts.filter((_, i) => i % 3 !== 2).reduce((a, b) => a + b, 0)).toBe(topK * 4 * (cfg.blockSize ?? NaN));
    expect(Object.keys(c.grads).filter((n) => n.endsWith('router.weight'))).toHaveLength(2);
    for (const n of Object.keys(c.grads)) close(n, g.grads[n], c.grads[n]);
    for (const n of Object.keys(c.after)) close(`${n} after the step`, g.after[n], c.after[n]);
  }, 60_000);
});
