/**
 * Every non-matmul op of the GPU backend against the float64 CPU reference,
 * on fresh random inputs of awkward sizes (seed in every failure message).
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { CpuBackend } from '../nn/cpu-backend.ts';
import { ACTIVATIONS, type Tensor } from '../nn/backend.ts';
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

const SHAPES: [number, number][] = [
  [1, 1],
  [7, 33],
  [33, 7],
  [129, 65],
  [4, 129],
];

/** The same values on both backends. */
function pair(data: number[], shape: number[], dtype: 'f32' | 'i32' = 'f32'): [Tensor, Tensor] {
  return [gpu.tensor(data, shape, dtype), cpu.tensor(dtype === 'f32' ? Array.from(Float32Array.from(data)) : data, shape, dtype)];
}

async function check(g: Tensor, c: Tensor, what: string, o?: { rel?: number; abs?: number }): Promise<void> {
  expect(g.shape, what).toEqual(c.shape);
  assertClose(await gpu.read(g), await cpu.read(c), what, seed, o);
}

describe('memory', () => {
  test('tensor / read round trip, f32 and i32, zeros, clone, fill, copyInto', async () => {
    const rng = makeRng(seed, 'memory');
    const data = randomArray(rng, 37, 100);
    const t = gpu.tensor(data, [37]);
    const back = await gpu.read(t);
    expect(back).toBeInstanceOf(Float32Array);
    assertClose(back, Float32Array.from(data), 'tensor round trip', seed, { rel: 0, abs: 0 });
    const ints = [0, -1, 2147483647, -2147483648, 42, 7];
    const ti = gpu.tensor(ints, [2, 3], 'i32');
    const backI = await gpu.read(ti);
    expect(backI).toBeInstanceOf(Int32Array);
    expect(Array.from(backI)).toEqual(ints);
    expect(Array.from(await gpu.read(gpu.zeros([5, 3])))).toEqual(new Array(15).fill(0));
    expect(Array.from(await gpu.read(gpu.zeros([4], 'i32')))).toEqual([0, 0, 0, 0]);
    const c = gpu.clone(t);
    gpu.fill(t, 0.25);
    expect(Array.from(await gpu.read(t))).toEqual(new Array(37).fill(0.25));
    assertClose(await gpu.read(c), Float32Array.from(data), 'clone kept the old values', seed, { rel: 0, abs: 0 });
    gpu.fill(t, -Infinity);
    expect(Array.from(await gpu.read(t))).toEqual(new Array(37).fill(-Infinity));
    gpu.fill(ti, -3);
    expect(Array.from(await gpu.read(ti))).toEqual(new Array(6).fill(-3));
    gpu.copyInto(t, c);
    assertClose(await gpu.read(t), Float32Array.from(data), 'copyInto', seed, { rel: 0, abs: 0 });
    const shaped = gpu.zeros([37, 1]);
    gpu.copyInto(shaped, c); // same size, other shape
    assertClose(await gpu.read(shaped), Float32Array.from(data), 'copyInto another shape', seed, { rel: 0, abs: 0 });
    // At an offset: into elements 3..5 of a zeroed [8] (f32 and i32, the i32 host copy too), the rest untouched.
    const packed = gpu.zeros([8]), packedI = gpu.zeros([8, 1], 'i32');
    gpu.copyInto(packed, gpu.tensor([1.5, -2, 7], [3]), 3);
    gpu.copyInto(packedI, gpu.tensor([4, 5, 6], [3], 'i32'), 5);
    expect(Array.from(await gpu.read(packed))).toEqual([0, 0, 0, 1.5, -2, 7, 0, 0]);
    expect(Array.from(await gpu.read(packedI))).toEqual([0, 0, 0, 0, 0, 4, 5, 6]);
    expect(Array.from(await gpu.read(gpu.embedding(gpu.tensor([10, 20, 30, 40, 50, 60, 70, 80], [8, 1]), packedI)))).toEqual([10, 10, 10, 10, 10, 50, 60, 70]);
    for (const x of [t, ti, c, shaped, packed, packedI]) gpu.dispose(x);
  });
});

describe('bias and activations', () => {
  test('biasAdd and colSumAcc', async () => {
    for (const [n, d] of SHAPES) {
      const rng = makeRng(seed, `bias:${n}x${d}`);
      const [gx, cx] = pair(randomArray(rng, n * d), [n, d]);
      const [gb, cb] = pair(randomArray(rng, d), [d]);
      await check(gpu.biasAdd(gx, gb), cpu.biasAdd(cx, cb), `biasAdd [${n}, ${d}]`);
      gpu.colSumAcc(gb, gx);
      gpu.colSumAcc(gb, gx);
      cpu.colSumAcc(cb, cx);
      cpu.colSumAcc(cb, cx);
      await check(gb, cb, `colSumAcc [${n}, ${d}] twice onto a random start`);
    }
  });

  test.each(ACTIVATIONS)('%s forward and backward', async (kind) => {
    for (const [n, d] of SHAPES) {
      const rng = makeRng(seed, `act:${kind}:${n}x${d}`);
      const xs = randomArray(rng, n * d, 4);
      // Some large magnitudes (saturation) and exact zeros (the ReLU kink). Not in a
      // single-element tensor: there the saturated derivative (~1e-16, exp's own
      // f32 accuracy) would be the whole norm.
      if (xs.length > 1) for (let i = 0; i < xs.length; i += 11) xs[i] = (i % 2 ? -1 : 1) * rng.uniform(10, 60);
      for (let i = 5; i < xs.length; i += 13) xs[i] = 0;
      const [gx, cx] = pair(xs, [n, d]);
      const [gd, cd] = pair(randomArray(rng, n * d), [n, d]);
      await check(gpu.activation(kind, gx), cpu.activation(kind, cx), `${kind} [${n}, ${d}]`);
      await check(gpu.activationBackward(kind, gx, gd), cpu.activationBackward(kind, cx, cd), `${kind} backward [${n}, ${d}]`);
    }
  });
});

describe('LayerNorm', () => {
  test('forward (y, mean, rstd), backward input, backward weights accumulating', async () => {
    for (const [n, d] of SHAPES) {
      const rng = makeRng(seed, `ln:${n}x${d}`);
      const xs = randomArray(rng, n * d, 3).map((v, i) => v + (i % 3)); // non-zero means
      const [gx, cx] = pair(xs, [n, d]);
      const [gg, cg] = pair(randomArray(rng, d).map((v) => 1 + v), [d]);
      const [gbeta, cbeta] = pair(randomArray(rng, d), [d]);
      const eps = 1e-5;
      const go = gpu.layerNorm(gx, gg, gbeta, eps);
      const co = cpu.layerNorm(cx, cg, cbeta, eps);
      await check(go.y, co.y, `layerNorm y [${n}, ${d}]`);
      await check(go.mean, co.mean, `layerNorm mean [${n}, ${d}]`, { abs: 1e-3 });
      await check(go.rstd, co.rstd, `layerNorm rstd [${n}, ${d}]`);
      const [gdy, cdy] = pair(randomArray(rng, n * d), [n, d]);
      await check(
        gpu.layerNormBackwardInput(gx, gg, go.mean, go.rstd, gdy),
        cpu.layerNormBackwardInput(cx, cg, co.mean, co.rstd, cdy),
        `layerNorm backward input [${n}, ${d}]`,
      );
      const start = randomArray(rng, 2 * d);
      const [gdg, cdg] = pair(start.slice(0, d), [d]);
      const [gdb, cdb] = pair(start.slice(d), [d]);
      gpu.layerNormBackwardWeightAcc(gdg, gdb, gx, go.mean, go.rstd, gdy);
      gpu.layerNormBackwardWeightAcc(gdg, gdb, gx, go.mean, go.rstd, gdy);
      cpu.layerNormBackwardWeightAcc(cdg, cdb, cx, co.mean, co.rstd, cdy);
      cpu.layerNormBackwardWeightAcc(cdg, cdb, cx, co.mean, co.rstd, cdy);
      await check(gdg, cdg, `layerNorm dgamma [${n}, ${d}]`);
      await check(gdb, cdb, `layerNorm dbeta [${n}, ${d}]`);
    }
  });
});

describe('embedding', () => {
  test('gather and race-free scatter-add with many repeated indices', async () => {
    const cases: [number, number, number, number][] = [
      // V, E, n, k
      [1, 1, 1, 1],
      [5, 7, 33, 3], // 99 positions into 5 rows: every row repeated many times
      [129, 33, 7, 4],
      [27, 16, 64, 8],
    ];
    for (const [V, E, n, k] of cases) {
      const rng = makeRng(seed, `emb:${V}:${E}:${n}:${k}`);
      const idx = Array.from({ length: n * k }, () => rng.int(V));
      idx[0] = V - 1;
      if (idx.length > 1) idx[idx.length - 1] = idx[0]; // a guaranteed repeat
      const [gt, ct] = pair(randomArray(rng, V * E), [V, E]);
      const [gi, ci] = pair(idx, [n, k], 'i32');
      await check(gpu.embedding(gt, gi), cpu.embedding(ct, ci), `embedding V=${V} E=${E} n=${n} k=${k}`);
      const [gdy, cdy] = pair(randomArray(rng, n * k * E), [n, k * E]);
      gpu.embeddingBackwardAcc(gt, gi, gdy);
      gpu.embeddingBackwardAcc(gt, gi, gdy);
      cpu.embeddingBackwardAcc(ct, ci, cdy);
      cpu.embeddingBackwardAcc(ct, ci, cdy);
      await check(gt, ct, `embeddingBackwardAcc V=${V} E=${E} n=${n} k=${k}`);
    }
  });
});

describe('softmax cross-entropy', () => {
  test('loss and gradient, ordinary and huge logits (stability)', async () => {
    const cases: [number, number, number][] = [
      [1, 1, 1],
      [7, 33, 1 / 7],
      [129, 10, 1 / 129],
      [33, 257, 0.5],
    ];
    for (const [n, c, scale] of cases) {
      for (const big of [false, true]) {
        const rng = makeRng(seed, `sx:${n}:${c}:${big}`);
        const logits = randomArray(rng, n * c, big ? 3000 : 3).map((v, i) => (big && i % 5 === 0 ? v + 8e4 : v));
        const labels = Array.from({ length: n }, () => rng.int(c));
        const [gl, cl] = pair(logits, [n, c]);
        const [gy, cy] = pair(labels, [n], 'i32');
        const g = gpu.softmaxCrossEntropy(gl, gy, scale);
        const r = cpu.softmaxCrossEntropy(cl, cy, scale);
        expect(g.loss.shape).toEqual([1]);
        const gLoss = (await gpu.read(g.loss))[0];
        expect(Number.isFinite(gLoss), `finite loss, n=${n} c=${c} big=${big}`).toBe(true);
        await check(g.loss, r.loss, `softmaxCrossEntropy loss n=${n} c=${c} big=${big}`);
        await check(g.dlogits, r.dlogits, `softmaxCrossEntropy dlogits n=${n} c=${c} big=${big}`);
      }
    }
  });
});

describe('arithmetic', () => {
  test('axpy and scale (also axpy(y, y))', async () => {
    for (const [n, d] of SHAPES) {
      const rng = makeRng(seed, `axpy:${n}x${d}`);
      const [gy, cy] = pair(randomArray(rng, n * d), [n, d]);
      const [gx, cx] = pair(randomArray(rng, n * d), [n, d]);
      const alpha = rng.uniform(-2, 2);
      gpu.axpy(gy, gx, alpha);
      cpu.axpy(cy, cx, alpha);
      gpu.scale(gy, -0.75);
      cpu.scale(cy, -0.75);
      await check(gy, cy, `axpy + scale [${n}, ${d}]`);
      gpu.axpy(gx, gx, 0.5);
      cpu.axpy(cx, cpu.clone(cx), 0.5);
      await check(gx, cx, `axpy(x, x) [${n}, ${d}]`);
    }
  });
});

describe('grids larger than one dispatch axis (65535 workgroups / rows)', () => {
  test('70000-row bias add, embedding and ragged matmul; a 4.3M-element axpy', async () => {
    const rng = makeRng(seed, 'big-grid');
    const n = 70_000;
    const [gx, cx] = pair(randomArray(rng, n * 2), [n, 2]);
    const [gb, cb] = pair(randomArray(rng, 2), [2]);
    await check(gpu.biasAdd(gx, gb), cpu.biasAdd(cx, cb), 'biasAdd [70000, 2]');
    const idx = Array.from({ length: n }, () => rng.int(3));
    const [gt, ct] = pair(randomArray(rng, 3), [3, 1]);
    const [gi, ci] = pair(idx, [n, 1], 'i32');
    await check(gpu.embedding(gt, gi), cpu.embedding(ct, ci), 'embedding of 70000 positions');
    const [ga, ca] = pair(randomArray(rng, n * 3), [n, 3]); // K = 3: A's rows are read by checked scalar loads
    const [gw, cw] = pair(randomArray(rng, 3), [3, 1]);
    await check(gpu.matmul(ga, gw), cpu.matmul(ca, cw), 'matmul [70000, 3] x [3, 1]');
    const big = 4_300_000; // > 65535 * 64 elements: the 1-D grid wraps into y
    const y = gpu.zeros([big]);
    const x = gpu.tensor(new Float32Array(big).fill(2), [big]);
    gpu.axpy(y, x, 1.5);
    const out = await gpu.read(y);
    expect(out[0]).toBe(3);
    expect(out[big - 1]).toBe(3);
    expect(out.every((v) => v === 3)).toBe(true);
    for (const t of [gx, gb, gt, gi, ga, gw, x, y]) gpu.dispose(t);
  });
});

describe('optimizers', () => {
  test('SGD with momentum and weight decay, several steps', async () => {
    for (const [n, d] of SHAPES) {
      const rng = makeRng(seed, `sgd:${n}x${d}`);
      const [gp, cp] = pair(randomArray(rng, n * d), [n, d]);
      const [gv, cv] = pair(new Array(n * d).fill(0), [n, d]);
      const o = { lr: 0.05, momentum: 0.9, weightDecay: 1e-2, gradScale: 0.5 };
      for (let step = 0; step < 5; step++) {
        const grad = randomArray(rng, n * d);
        const [gg, cg] = pair(grad, [n, d]);
        gpu.sgdStep(gp, gg, gv, o);
        cpu.sgdStep(cp, cg, cv, o);
        gpu.dispose(gg);
      }
      await check(gp, cp, `sgd param [${n}, ${d}]`);
      await check(gv, cv, `sgd velocity [${n}, ${d}]`);
    }
  });

  test('AdamW exactly as the contract writes it, several steps', async () => {
    for (const [n, d] of SHAPES) {
      const rng = makeRng(seed, `adamw:${n}x${d}`);
      const [gp, cp] = pair(randomArray(rng, n * d), [n, d]);
      const [gm, cm] = pair(new Array(n * d).fill(0), [n, d]);
      const [gv, cv] = pair(new Array(n * d).fill(0), [n, d]);
      for (let step = 1; step <= 6; step++) {
        const o = { lr: 1e-2, beta1: 0.9, beta2: 0.999, eps: 1e-8, weightDecay: 0.1, step, gradScale: 0.25 };
        const [gg, cg] = pair(randomArray(rng, n * d), [n, d]);
        gpu.adamwStep(gp, gg, gm, gv, o);
        cpu.adamwStep(cp, cg, cm, cv, o);
        gpu.dispose(gg);
      }
      await check(gp, cp, `adamw param [${n}, ${d}]`);
      await check(gm, cm, `adamw m [${n}, ${d}]`);
      await check(gv, cv, `adamw v [${n}, ${d}]`);
    }
  });
});
