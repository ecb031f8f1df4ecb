/**
 * The attention kernels (shaders/attention.wgsl) and the residual add against
 * the float64 CPU reference on fresh random inputs of awkward sizes (T not a
 * power of two, odd head widths, several heads), and the padded-target rule of
 * the softmax cross-entropy (label −1: no loss, zero gradient row).
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { CpuBackend } from '../nn/cpu-backend.ts';
import type { Tensor } from '../nn/backend.ts';
import type { GpuBackend } from './gpu-backend.ts';
import { createTestBackend } from './testing/node-gpu.ts';
import { assertClose, makeRng, randomArray, testSeed } from './testing/compare.ts';

let gpu: GpuBackend;
const cpu = new CpuBackend();
const seed = testSeed();

beforeAll(async () => {
  gpu = await createTestBackend();
});
afterAll(() => gpu?.destroy());

function pair(data: number[], shape: number[], dtype: 'f32' | 'i32' = 'f32'): [Tensor, Tensor] {
  return [gpu.tensor(data, shape, dtype), cpu.tensor(dtype === 'f32' ? Array.from(Float32Array.from(data)) : data, shape, dtype)];
}

async function check(g: Tensor, c: Tensor, what: string): Promise<void> {
  expect(g.shape, what).toEqual(c.shape);
  assertClose(await gpu.read(g), await cpu.read(c), what, seed);
}

// B, T, H, D
const SIZES: [number, number, number, number][] = [
  [1, 1, 1, 1],
  [2, 7, 3, 5],
  [3, 13, 2, 3],
  [1, 16, 4, 16],
  [2, 17, 1, 9],
];

describe('attention kernels equal the float64 reference', () => {
  test.each(SIZES)('B=%i T=%i H=%i D=%i: scores, causal softmax, weighted sum and their backward', async (B, T, H, D) => {
    const C = H * D;
    const rng = makeRng(seed, `attn:${B}:${T}:${H}:${D}`);
    const scale = 1 / Math.sqrt(D);
    const [gq, cq] = pair(randomArray(rng, B * T * 3 * C, 2), [B * T, 3 * C]);
    const gs = gpu.attentionScores(gq, H, T, scale);
    const cs = cpu.attentionScores(cq, H, T, scale);
    await check(gs, cs, 'scores');
    // Large scores too: the softmax must subtract the row max.
    const big = randomArray(rng, B * H * T * T, 60);
    const [gbig, cbig] = pair(big, [B * H * T, T]);
    await check(gpu.causalSoftmax(gbig), cpu.causalSoftmax(cbig), 'causal softmax of scores up to ±60');
    const gp = gpu.causalSoftmax(gs);
    const cp = cpu.causalSoftmax(cs);
    await check(gp, cp, 'probs');
    await check(gpu.attentionValues(gp, gq, H), cpu.attentionValues(cp, cq, H), 'weighted sum');
    const [gdy, cdy] = pair(randomArray(rng, B * T * C), [B * T, C]);
    const gdp = gpu.attentionProbsGrad(gq, gdy, H, T);
    const cdp = cpu.attentionProbsGrad(cq, cdy, H, T);
    await check(gdp, cdp, 'dProbs');
    const gds = gpu.causalSoftmaxBackward(gp, gdp);
    const cds = cpu.causalSoftmaxBackward(cp, cdp);
    await check(gds, cds, 'dScores');
    await check(gpu.attentionQkvGrad(gq, gp, gds, gdy, H, scale), cpu.attentionQkvGrad(cq, cp, cds, cdy, H, scale), 'dqkv');
  });

  test('residual add', async () => {
    const rng = makeRng(seed, 'add');
    const [ga, ca] = pair(randomArray(rng, 7 * 33), [7, 33]);
    const [gb, cb] = pair(randomArray(rng, 7 * 33), [7, 33]);
    await check(gpu.add(ga, gb), cpu.add(ca, cb), 'add');
  });

  test('softmax cross-entropy: a label of -1 (padded target) adds no loss and a zero gradient row', async () => {
    const rng = makeRng(seed, 'ignore');
    const n = 9, c = 28;
    const logits = randomArray(rng, n * c, 3);
    const labels = [3, -1, 0, 27, -1, -1, 5, 1, -1];
    const [gl, cl] = pair(logits, [n, c]);
    const [gy, cy] = pair(labels, [n], 'i32');
    const g = gpu.softmaxCrossEntropy(gl, gy, 0.25);
    const r = cpu.softmaxCrossEntropy(cl, cy, 0.25);
    await check(g.loss, r.loss, 'loss');
    await check(g.dlogits, r.dlogits, 'dlogits');
    // The reference itself, from the definition: only the valid rows count.
    let want = 0;
    labels.forEach((y, i) => {
      if (y < 0) return;
      const row = Float32Array.from(logits.slice(i * c, (i + 1) * c));
      const mx = Math.max(...row);
      want += mx + Math.log(row.reduce((s, v) => s + Math.exp(v - mx), 0)) - row[y];
    });
    expect(Math.abs((await cpu.read(r.loss))[0] - 0.25 * want)).toBeLessThan(1e-12);
    const dl = await cpu.read(r.dlogits);
    for (const i of [1, 4, 5, 8]) for (let j = 0; j < c; j++) expect(dl[i * c + j]).toBe(0);
  });

  test('bad shapes are refused naming the field and the rule', () => {
    const q = gpu.zeros([6, 9]);
    expect(() => gpu.attentionScores(q, 2, 3, 1)).toThrow(/heads = 2: must divide the width C = 3/);
    expect(() => gpu.attentionScores(q, 1, 4, 1)).toThrow(/qkv.shape\[0\] = 6: must be B·T, a multiple of T = 4/);
    expect(() => cpu.attentionScores(cpu.zeros([6, 8]), 1, 3, 1)).toThrow(/qkv.shape\[1\] = 8: must be 3·C/);
  });
});
