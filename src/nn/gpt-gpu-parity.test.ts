/**
 * The GPT on the WebGPU backend against the float64 CPU reference: a whole
 * transformer block as a middle stage (output, the input gradient sent back
 * across the boundary, every parameter gradient), and the whole model as one
 * stage (loss over the non-padded targets, all gradients). Same seeds, so the
 * same float32-rounded weights on both; tolerance 1e-4 relative.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BatchSampler } from '../data/batches.ts';
import { createDataset } from '../data/datasets.ts';
import { targetCount } from '../data/examples.ts';
import type { GpuBackend } from '../gpu/gpu-backend.ts';
import { createTestBackend } from '../gpu/testing/node-gpu.ts';
import { Rng } from '../util/rng.ts';
import type { Backend, Tensor } from './backend.ts';
import { CpuBackend } from './cpu-backend.ts';
import { buildModelSpec, defaultGptConfig, type ModelConfig } from './model-config.ts';
import { Stage } from './stage.ts';
import { compareGrads } from './testing/gradcheck.ts';
import { defaultTrainConfig } from './train-config.ts';

let gpu: GpuBackend;
const cpu = new CpuBackend();
const TOL = 1e-4;

beforeAll(async () => {
  gpu = await createTestBackend();
});
afterAll(() => gpu?.destroy());

// 3 heads of width 5 (odd), T = 16.
const cfg: ModelConfig = { ...defaultGptConfig(), layers: 2, heads: 3, width: 15 };
const spec = buildModelSpec(cfg);

async function expectClose(what: string, g: ArrayLike<number>, c: ArrayLike<number>): Promise<void> {
  const cmp = compareGrads(g, c);
  expect(cmp.relErr, `${what}: relative error`).toBeLessThan(TOL);
  expect(cmp.norm, `${what} is not trivially zero`).toBeGreaterThan(0);
}

describe('GPT on the GPU equals the CPU reference', () => {
  it('a whole transformer block (middle stage): output, input gradient, all 12 parameter gradients', async () => {
    const rng = new Rng(4);
    const B = 3, T = 16, C = 15;
    const x = Array.from({ length: B * T * C }, () => Math.fround(rng.normal()));
    const dy = Array.from({ length: B * T * C }, () => Math.fround(rng.normal()));
    const run = async (be: Backend) => {
      const st = new Stage(be, spec, 1, [1, 2], 9);
      // Non-trivial LayerNorm gains and biases.
      const vals: Record<string, number[]> = {};
      const r = new Rng(5);
      for (const p of st.params) vals[p.name] = Array.from({ length: p.value.size }, () => Math.fround(0.2 * r.normal() + (p.name.endsWith('ln_1.weight') || p.name.endsWith('ln_2.weight') ? 1 : 0)));
      st.loadParams(vals);
      const y = await be.read(await st.forward(0, be.tensor(x, [B * T, C])));
      const dx = await be.read((await st.backwardInput(0, be.tensor(dy, [B * T, C]))) as Tensor);
      st.backwardWeight(0);
      const grads = await st.readGrads();
      st.dispose();
      return { y, dx, grads };
    };
    const g = await run(gpu);
    const c = await run(cpu);
    await expectClose('block output', g.y, c.y);
    await expectClose('block input gradient', g.dx, c.dx);
    expect(Object.keys(g.grads)).toHaveLength(12);
    for (const n of Object.keys(c.grads)) await expectClose(n, g.grads[n], c.grads[n]);
  });

  it('the whole model as one stage on a batch of names: loss and every gradient, with and without recomputation', async () => {
    const train = { ...defaultTrainConfig('names'), ...cfg };
    const batch = new BatchSampler(createDataset(train).train, 6, 2).batch(0);
    const scale = 1 / targetCount(batch);
    const run = async (be: Backend, recompute: boolean) => {
      const st = new Stage(be, spec, 0, [0, spec.blocks.length], 3, { recompute });
      const labels = be.tensor(batch.labels, [batch.labels.length], 'i32');
      const loss = await be.read(await st.forward(0, be.tensor(batch.inputs, [batch.n, batch.inputCols], 'i32'), labels, scale));
      be.dispose(labels);
      await st.backward(0, null);
      const grads = await st.readGrads();
      st.dispose();
      return { loss: loss[0], grads };
    };
    const c = await run(cpu, false);
    expect(Math.abs(c.loss - Math.log(28))).toBeLessThan(0.1);
    for (const recompute of [false, true]) {
      const g = await run(gpu, recompute);
      expect(Math.abs(g.loss - c.loss) / c.loss, `loss, recompute ${recompute}`).toBeLessThan(TOL);
      for (const n of Object.keys(c.grads)) await expectClose(`${n}, recompute ${recompute}`, g.grads[n], c.grads[n]);
    }
  });
});
