/**
 * The offloaded optimizer's float32 CPU arithmetic (host-optimizer.ts) against the WGSL kernels it mirrors
 * (shaders/optimizer.wgsl, through the GpuBackend on Dawn): every update, from the same float32 state on both, equal
 * within 1e-6 relative (norm-wise and element by element against the update's largest value), for SGD with momentum
 * and weight decay and for AdamW over several steps (bias corrections of each), on awkward sizes. And its float64
 * path is the CPU reference's own expression: bit for bit.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { CpuBackend } from './cpu-backend.ts';
import type { GpuBackend } from '../gpu/gpu-backend.ts';
import { createTestBackend } from '../gpu/testing/node-gpu.ts';
import { assertClose, makeRng, randomArray, testSeed } from '../gpu/testing/compare.ts';
import { hostAdamwStep, hostSgdStep } from './host-optimizer.ts';

let gpu: GpuBackend;
const seed = testSeed();
const SIZES = [1, 7, 129, 1000];

beforeAll(async () => {
  gpu = await createTestBackend();
});
afterAll(() => gpu?.destroy());

/** The GPU's values of `t` as float32. */
async function read32(t: Parameters<GpuBackend['read']>[0]): Promise<Float32Array> {
  return Float32Array.from(await gpu.read(t));
}

const close = (got: Float32Array, ref: Float32Array, what: string) => assertClose(got, ref, what, seed, { rel: 1e-6, abs: 1e-6 });

describe('the offloaded optimizer’s float32 arithmetic equals the GPU kernel per update', () => {
  test('SGD with momentum and weight decay', async () => {
    for (const n of SIZES) {
      const rng = makeRng(seed, `host-sgd:${n}`);
      const p = gpu.tensor(randomArray(rng, n), [n]);
      const v = gpu.tensor(randomArray(rng, n, 0.1), [n]);
      const o = { lr: 0.05, momentum: 0.9, weightDecay: 1e-2, gradScale: 0.25 };
      for (let step = 0; step < 4; step++) {
        // The same float32 inputs on both sides, each update compared on its own.
        const hp = await read32(p), hv = await read32(v);
        const grad = Float32Array.from(randomArray(rng, n));
        const g = gpu.tensor(grad, [n]);
        gpu.sgdStep(p, g, v, o);
        hostSgdStep(hp, grad, hv, o);
        close(hp, await read32(p), `sgd param [${n}] step ${step}`);
        close(hv, await read32(v), `sgd velocity [${n}] step ${step}`);
        gpu.dispose(g);
      }
      gpu.dispose(p);
      gpu.dispose(v);
    }
  });

  test('AdamW (decoupled decay, bias corrections of steps 1 to 5)', async () => {
    for (const n of SIZES) {
      const rng = makeRng(seed, `host-adamw:${n}`);
      const p = gpu.tensor(randomArray(rng, n), [n]);
      const m = gpu.zeros([n]);
      const v = gpu.zeros([n]);
      for (let step = 1; step <= 5; step++) {
        const o = { lr: 1e-2, beta1: 0.9, beta2: 0.999, eps: 1e-8, weightDecay: 0.1, step, gradScale: 0.5 };
        const hp = await read32(p), hm = await read32(m), hv = await read32(v);
        const grad = Float32Array.from(randomArray(rng, n));
        const g = gpu.tensor(grad, [n]);
        gpu.adamwStep(p, g, m, v, o);
        hostAdamwStep(hp, grad, hm, hv, o);
        close(hp, await read32(p), `adamw param [${n}] step ${step}`);
        close(hm, await read32(m), `adamw m [${n}] step ${step}`);
        close(hv, await read32(v), `adamw v [${n}] step ${step}`);
        gpu.dispose(g);
      }
      for (const t of [p, m, v]) gpu.dispose(t);
    }
  });

  test('beside the float64 CPU reference it is that backend’s expression, bit for bit', async () => {
    const cpu = new CpuBackend();
    const rng = makeRng(seed, 'host-f64');
    const n = 33;
    const [p0, g0, m0, v0] = [randomArray(rng, n), randomArray(rng, n), randomArray(rng, n, 0.1), randomArray(rng, n, 0.1).map(Math.abs)];
    const o = { lr: 3e-3, beta1: 0.9, beta2: 0.95, eps: 1e-8, weightDecay: 0.1, step: 3, gradScale: 0.5 };
    const [cp, cg, cm, cv] = [p0, g0, m0, v0].map((a) => cpu.tensor(a, [n]));
    cpu.adamwStep(cp, cg, cm, cv, o);
    const [hp, hg, hm, hv] = [p0, g0, m0, v0].map((a) => Float64Array.from(a));
    hostAdamwStep(hp, hg, hm, hv, o);
    expect(Array.from(hp)).toEqual(Array.from(await cpu.read(cp)));
    expect(Array.from(hm)).toEqual(Array.from(await cpu.read(cm)));
    const so = { lr: 0.05, momentum: 0.9, weightDecay: 1e-2, gradScale: 0.25 };
    const [sp, sv] = [cpu.tensor(p0, [n]), cpu.tensor(m0, [n])];
    cpu.sgdStep(sp, cg, sv, so);
    const [hsp, hsv] = [Float64Array.from(p0), Float64Array.from(m0)];
    hostSgdStep(hsp, Float64Array.from(g0), hsv, so);
    expect(Array.from(hsp)).toEqual(Array.from(await cpu.read(sp)));
    expect(Array.from(hsv)).toEqual(Array.from(await cpu.read(sv)));
  });
});
