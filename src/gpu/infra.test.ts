/**
 * The layer under the ops: ordering of uploads against lazily submitted
 * dispatches (the pooled-buffer reuse hazard), the uniform ring, the buffer
 * pool and its stats, bad input, device acquisition errors, device loss, timing.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { ConfigError } from '../util/errors.ts';
import { CpuBackend } from '../nn/cpu-backend.ts';
import type { Tensor } from '../nn/backend.ts';
import { GpuBackend } from './gpu-backend.ts';
import { bucketSize } from './buffer-pool.ts';
import { acquireDevice, DeviceLostError, WebGpuUnavailableError } from './device.ts';
import { constPrefix, moduleCode } from './pipelines.ts';
import { matmulSpec, requireMatmulVariant } from './kernels.ts';
import { createTestBackend, nodeGpu } from './testing/node-gpu.ts';
import { assertClose, makeRng, randomArray, testSeed } from './testing/compare.ts';

let gpu: GpuBackend;
const cpu = new CpuBackend();
const seed = testSeed();

beforeAll(async () => {
  gpu = await createTestBackend();
});
afterAll(() => gpu?.destroy());

describe('ordering: uploads vs. pending dispatches', () => {
  test('dispose then immediately reuse: pending ops still see the old values', async () => {
    const rng = makeRng(seed, 'hazard');
    const n = 300;
    const inputs: number[][] = [];
    const outs: Tensor[] = [];
    for (let i = 0; i < 40; i++) {
      const data = randomArray(rng, n);
      inputs.push(data);
      const x = gpu.tensor(data, [n]); // same size every time: the pool would hand back the same buffer
      outs.push(gpu.activation('identity', x));
      const y = gpu.clone(x);
      gpu.axpy(y, x, 1); // y = 2x, also pending
      outs.push(y);
      gpu.dispose(x); // freed while the dispatches that read it are not submitted yet
    }
    const before = gpu.stats().pool.reused;
    for (let i = 0; i < 40; i++) {
      assertClose(await gpu.read(outs[2 * i]), Float32Array.from(inputs[i]), `identity of upload ${i}`, seed, { rel: 0, abs: 0 });
      assertClose(await gpu.read(outs[2 * i + 1]), Float32Array.from(inputs[i]).map((v) => 2 * v), `2x of upload ${i}`, seed);
    }
    for (const t of outs) gpu.dispose(t);
    // After a submit the freed buffers do return to the pool and get reused.
    gpu.flush();
    const z = gpu.tensor(new Array(n).fill(1), [n]);
    expect(gpu.stats().pool.reused).toBeGreaterThan(before);
    expect(Array.from(await gpu.read(z))).toEqual(new Array(n).fill(1));
    gpu.dispose(z);
  });

  test('zeros on a reused buffer is zero; fill after dispose/reuse', async () => {
    const a = gpu.tensor(new Array(64).fill(7), [8, 8]);
    gpu.dispose(a);
    gpu.flush();
    const z = gpu.zeros([8, 8]);
    expect(Array.from(await gpu.read(z))).toEqual(new Array(64).fill(0));
    gpu.dispose(z);
  });

  test('many dispatches with different params in one batch, and a ring smaller than the batch', async () => {
    const small = await createTestBackend({ uniformSlots: 4 });
    try {
      for (const be of [gpu, small]) {
        const t = be.tensor([1, 2, 3], [3]);
        const ref = [1, 2, 3];
        for (let i = 1; i <= 25; i++) {
          const alpha = 1 + i / 100;
          be.scale(t, alpha);
          for (let j = 0; j < 3; j++) ref[j] *= alpha;
        }
        assertClose(await be.read(t), ref, 'chained scales', seed);
        be.dispose(t);
      }
      expect(small.stats().submits).toBeGreaterThan(5);
    } finally {
      small.destroy();
    }
  });
});

describe('buffer pool and stats', () => {
  test('bucket sizes', () => {
    expect(bucketSize(1)).toBe(256);
    expect(bucketSize(257)).toBe(512);
    expect(bucketSize(4096)).toBe(4096);
    expect(bucketSize(4097)).toBe(5120);
    for (const n of [5000, 12345, 1 << 20, 3_000_001]) {
      const b = bucketSize(n);
      expect(b).toBeGreaterThanOrEqual(n);
      expect(b).toBeLessThanOrEqual(n * 1.25 + 256);
    }
  });

  test('live buffers and bytes follow create/dispose; temporaries do not leak', async () => {
    const s0 = gpu.stats();
    const a = gpu.tensor(randomArray(makeRng(seed, 's'), 33 * 17), [33, 17]);
    const b = gpu.zeros([17, 5]);
    expect(gpu.stats().liveBuffers).toBe(s0.liveBuffers + 2);
    expect(gpu.stats().liveBytes).toBeGreaterThanOrEqual(s0.liveBytes + (33 * 17 + 17 * 5) * 4);
    const c = gpu.matmul(a, b); // pads 17 -> 20: temporary buffers
    const l = gpu.softmaxCrossEntropy(c, gpu.tensor(new Array(33).fill(1), [33], 'i32'), 1);
    await gpu.sync();
    const s1 = gpu.stats();
    expect(s1.liveBuffers).toBe(s0.liveBuffers + 6);
    for (const t of [a, b, c, l.loss, l.dlogits]) gpu.dispose(t);
    gpu.dispose(a); // twice is harmless
    await gpu.sync();
    const s2 = gpu.stats();
    expect(s2.liveBuffers).toBe(s0.liveBuffers + 1); // the labels tensor is still alive
    expect(s2.pool.inUseBuffers).toBe(s0.pool.inUseBuffers + 1);
  });

  test('destroy frees everything and later use is refused', async () => {
    const be = await createTestBackend();
    be.tensor([1, 2], [2]);
    be.matmul(be.tensor([1, 2, 3, 4], [2, 2]), be.tensor([1, 0, 0, 1], [2, 2]));
    await be.sync();
    expect(be.stats().pool.allocatedBuffers).toBeGreaterThan(0);
    be.destroy();
    expect(be.stats().pool.allocatedBuffers).toBe(0);
    expect(() => be.zeros([1])).toThrow(/after destroy/);
    be.destroy(); // idempotent
  });
});

describe('bad input', () => {
  /** The GPU throws a ConfigError naming `field`, with the CPU reference's message where it has one. */
  function same(field: RegExp | string, onGpu: () => unknown, onCpu?: () => unknown): void {
    let gpuErr: unknown;
    try {
      onGpu();
    } catch (e) {
      gpuErr = e;
    }
    expect(gpuErr).toBeInstanceOf(ConfigError);
    const ce = gpuErr as ConfigError;
    if (typeof field === 'string') expect(ce.field).toBe(field);
    else expect(ce.field).toMatch(field);
    if (onCpu) expect(onCpu).toThrow(ce.message);
  }

  test('shapes, sizes and indices are refused with the field named (same messages as the CPU)', () => {
    const g = (d: number[], s: number[]) => gpu.tensor(d, s);
    const c = (d: number[], s: number[]) => cpu.tensor(d, s);
    const z = (s: number[]) => new Array(s.reduce((a, b) => a * b, 1)).fill(0);
    same('tensor shape', () => gpu.zeros([0, 3]), () => cpu.zeros([0, 3]));
    same('tensor shape', () => gpu.zeros([2, -1]), () => cpu.zeros([2, -1]));
    same('tensor shape', () => gpu.zeros([2.5]), () => cpu.zeros([2.5]));
    same('tensor shape', () => gpu.zeros([]), () => cpu.zeros([]));
    same('tensor data.length', () => gpu.tensor([1, 2, 3], [2, 2]), () => cpu.tensor([1, 2, 3], [2, 2]));
    same(
      'matmul b.shape[0]',
      () => gpu.matmul(g(z([2, 3]), [2, 3]), g(z([4, 5]), [4, 5])),
      () => cpu.matmul(c(z([2, 3]), [2, 3]), c(z([4, 5]), [4, 5])),
    );
    same(
      'matmul b.shape[1] (B is transposed)',
      () => gpu.matmul(g(z([2, 3]), [2, 3]), g(z([4, 5]), [4, 5]), { transB: true }),
      () => cpu.matmul(c(z([2, 3]), [2, 3]), c(z([4, 5]), [4, 5]), { transB: true }),
    );
    same(
      'matmul out.shape',
      () => gpu.matmulAcc(g(z([2, 2]), [2, 2]), g(z([2, 3]), [2, 3]), g(z([3, 5]), [3, 5])),
      () => cpu.matmulAcc(c(z([2, 2]), [2, 2]), c(z([2, 3]), [2, 3]), c(z([3, 5]), [3, 5])),
    );
    same('matmul a.shape', () => gpu.matmul(g(z([6]), [6]), g(z([6, 1]), [6, 1])), () => cpu.matmul(c(z([6]), [6]), c(z([6, 1]), [6, 1])));
    same('biasAdd bias.shape', () => gpu.biasAdd(g(z([2, 3]), [2, 3]), g(z([2]), [2])), () => cpu.biasAdd(c(z([2, 3]), [2, 3]), c(z([2]), [2])));
    same('colSum out.shape', () => gpu.colSumAcc(g(z([4]), [4]), g(z([2, 3]), [2, 3])), () => cpu.colSumAcc(c(z([4]), [4]), c(z([2, 3]), [2, 3])));
    same(
      'activationBackward dy.shape',
      () => gpu.activationBackward('relu', g(z([2, 3]), [2, 3]), g(z([3, 2]), [3, 2])),
      () => cpu.activationBackward('relu', c(z([2, 3]), [2, 3]), c(z([3, 2]), [3, 2])),
    );
    same('activation kind', () => gpu.activation('swish' as 'relu', g(z([2]), [2])));
    same(
      'layerNorm gamma.shape',
      () => gpu.layerNorm(g(z([2, 3]), [2, 3]), g(z([2]), [2]), g(z([3]), [3]), 1e-5),
      () => cpu.layerNorm(c(z([2, 3]), [2, 3]), c(z([2]), [2]), c(z([3]), [3]), 1e-5),
    );
    same(
      'layerNorm eps',
      () => gpu.layerNorm(g(z([2, 3]), [2, 3]), g(z([3]), [3]), g(z([3]), [3]), NaN),
      () => cpu.layerNorm(c(z([2, 3]), [2, 3]), c(z([3]), [3]), c(z([3]), [3]), NaN),
    );
    same('layerNormBackward mean.shape', () => gpu.layerNormBackwardInput(g(z([2, 3]), [2, 3]), g(z([3]), [3]), g(z([3]), [3]), g(z([2]), [2]), g(z([2, 3]), [2, 3])));
    same('axpy x.shape', () => gpu.axpy(g(z([2, 3]), [2, 3]), g(z([6]), [6]), 1), () => cpu.axpy(c(z([2, 3]), [2, 3]), c(z([6]), [6]), 1));
    same('sgd grad.shape', () => gpu.sgdStep(g(z([3]), [3]), g(z([4]), [4]), g(z([3]), [3]), { lr: 1, momentum: 0, weightDecay: 0, gradScale: 1 }));
    same('sgd velocity.shape', () => gpu.sgdStep(g(z([3]), [3]), g(z([3]), [3]), g(z([4]), [4]), { lr: 1, momentum: 0, weightDecay: 0, gradScale: 1 }));
    same('adamw v.shape', () =>
      gpu.adamwStep(g(z([3]), [3]), g(z([3]), [3]), g(z([3]), [3]), g(z([2]), [2]), { lr: 1, beta1: 0.9, beta2: 0.99, eps: 1e-8, weightDecay: 0, step: 1, gradScale: 1 }),
    );
    same('copyInto dst.size', () => gpu.copyInto(g(z([3]), [3]), g(z([4]), [4])), () => cpu.copyInto(c(z([3]), [3]), c(z([4]), [4])));
    same('copyInto dstOffset', () => gpu.copyInto(g(z([5]), [5]), g(z([3]), [3]), 3), () => cpu.copyInto(c(z([5]), [5]), c(z([3]), [3]), 3));
    // Indices and labels: checked on the host copy, same message as the CPU.
    const gi = gpu.tensor([0, 5, 1, 2], [2, 2], 'i32');
    const ci = cpu.tensor([0, 5, 1, 2], [2, 2], 'i32');
    same('embedding idx[0, 1]', () => gpu.embedding(g(z([4, 3]), [4, 3]), gi), () => cpu.embedding(c(z([4, 3]), [4, 3]), ci));
    same(
      'embedding dy.shape',
      () => gpu.embeddingBackwardAcc(g(z([4, 3]), [4, 3]), gi, g(z([2, 5]), [2, 5])),
      () => cpu.embeddingBackwardAcc(c(z([4, 3]), [4, 3]), ci, c(z([2, 5]), [2, 5])),
    );
    same(
      'softmaxCrossEntropy labels[1]',
      () => gpu.softmaxCrossEntropy(g(z([2, 3]), [2, 3]), gpu.tensor([0, 3], [2], 'i32'), 1),
      () => cpu.softmaxCrossEntropy(c(z([2, 3]), [2, 3]), cpu.tensor([0, 3], [2], 'i32'), 1),
    );
    same(
      'softmaxCrossEntropy labels.shape',
      () => gpu.softmaxCrossEntropy(g(z([2, 3]), [2, 3]), gpu.tensor([0, 1, 2], [3], 'i32'), 1),
      () => cpu.softmaxCrossEntropy(c(z([2, 3]), [2, 3]), cpu.tensor([0, 1, 2], [3], 'i32'), 1),
    );
    // dtype mix-ups
    same('matmul a.dtype', () => gpu.matmul(gpu.tensor([1, 2], [1, 2], 'i32'), g([1, 2], [2, 1])));
    same('indices.dtype', () => gpu.embedding(g(z([4, 3]), [4, 3]), g([0, 1], [1, 2])));
    same('copyInto dst.dtype', () => gpu.copyInto(gpu.zeros([2], 'i32'), g([1, 2], [2])));
    same('tensor dtype', () => gpu.zeros([2], 'f16' as 'f32'));
    // Tensors from elsewhere, or disposed
    same('biasAdd x', () => gpu.biasAdd(c(z([2, 3]), [2, 3]), g(z([3]), [3])));
    const d = g(z([2, 3]), [2, 3]);
    gpu.dispose(d);
    same('activation x', () => gpu.activation('relu', d));
    same('matmulVariant', () => gpu.setMatmulVariant('fastest-ever'));
  });
});

describe('device acquisition and loss', () => {
  test('no WebGPU: the error says how to enable it in Chrome, Linux included', async () => {
    const err = await acquireDevice(undefined).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WebGpuUnavailableError);
    const msg = (err as Error).message;
    expect(msg).toContain('chrome://flags/#enable-unsafe-webgpu');
    expect(msg).toContain('--enable-unsafe-webgpu --enable-features=Vulkan');
    expect(msg).toMatch(/secure context/);
    expect(msg).toMatch(/localhost/);
  });

  test('no adapter: a clear error', async () => {
    const fake = { requestAdapter: async () => null } as unknown as GPU;
    const err = await acquireDevice(fake).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WebGpuUnavailableError);
    expect((err as Error).message).toMatch(/no adapter/);
    expect((err as Error).message).toContain('chrome://flags/#enable-unsafe-webgpu');
  });

  test('device lost: the lost promise carries a message and ops then fail fast', async () => {
    const be = await GpuBackend.create({ gpu: await nodeGpu() });
    const t = be.tensor([1, 2, 3], [3]);
    be.device.destroy(); // what a lost device looks like from here
    const msg = await be.lost;
    expect(msg).toMatch(/WebGPU device/);
    expect(() => be.scale(t, 2)).toThrow(DeviceLostError);
    await expect(be.sync()).rejects.toThrow(DeviceLostError);
    be.destroy();
  });

  test('device lost while reads wait: each ends with DeviceLostError, nudged or not, and a wait after the loss too', async () => {
    for (const nudgeWaitsMs of [0, 0.25]) {
      const be = await GpuBackend.create({ gpu: await nodeGpu(), nudgeWaitsMs });
      const t = be.tensor(randomArray(makeRng(seed, 'lost'), 256 * 256), [256, 256]);
      const reads = [be.read(be.matmul(t, t)), be.read(t), be.sync()];
      be.device.destroy();
      for (const r of reads) await expect(r).rejects.toThrow(DeviceLostError);
      await be.lost;
      await expect(be.sync()).rejects.toThrow(DeviceLostError);
      be.destroy();
    }
  });
});

describe('timing and specialisation', () => {
  test('a span of dispatches is timed by timestamp queries where the adapter has them, and time() returns the result', async () => {
    // What the adapter offers, asked of it directly (not the backend's own flag).
    const adapter = await (await nodeGpu()).requestAdapter();
    const adapterHas = !!adapter?.features.has('timestamp-query');
    // SwiftShader (this machine, see ENVIRONMENT.md) has them: the timestamp path is the one tested here.
    expect(adapterHas).toBe(true);
    const a = gpu.tensor(randomArray(makeRng(seed, 't'), 128 * 128), [128, 128]);
    await gpu.sync();
    const w0 = performance.now();
    const span = gpu.beginTiming();
    const c = gpu.matmul(a, a);
    const r = await span.end();
    const wall = performance.now() - w0;
    expect(r.source).toBe('timestamp');
    // The GPU's own time of the kernels lies inside the wall time from begin to end.
    expect(r.ms).toBeGreaterThan(0);
    expect(r.ms).toBeLessThanOrEqual(wall);
    const t = await gpu.time(() => gpu.matmul(a, a, { transB: true }));
    expect(t.ms).toBeGreaterThan(0);
    expect(t.result.shape).toEqual([128, 128]);
    for (const x of [a, c, t.result]) gpu.dispose(x);
  });

  test('without timestamp-query the span falls back to wall time', async () => {
    const be = await createTestBackend({ timestamps: false });
    try {
      expect(be.hasTimestamps).toBe(false);
      const a = be.tensor(randomArray(makeRng(seed, 'w'), 64 * 64), [64, 64]);
      const r = await be.time(() => be.matmul(a, a));
      expect(r.source).toBe('wall');
      expect(r.ms).toBeGreaterThan(0);
    } finally {
      be.destroy();
    }
  });

  test('specialisation constants: the only WGSL the host writes', () => {
    expect(constPrefix({ TRANS_A: true, TM: 4, SCALE: 0.5 })).toBe('const SCALE = 0.5f;\nconst TM = 4u;\nconst TRANS_A = true;\n');
    expect(() => constPrefix({ 'X; fn': 1 })).toThrow();
  });

  test('global directives in a source go above the constants, where WGSL wants them; everything else keeps its order', () => {
    const common = '// common: enable nothing;\nstruct P { x: u32 }\n';
    const family = 'enable subgroups;\n  diagnostic(off, subgroup_uniformity);\nfn f() {}\n';
    const code = moduleCode('const TM = 4u;\n', common + family);
    expect(code).toBe('enable subgroups;\ndiagnostic(off, subgroup_uniformity);\nconst TM = 4u;\n// common: enable nothing;\nstruct P { x: u32 }\n\n\nfn f() {}\n');
    // An attribute is not a directive, and a source without directives is left as it is.
    expect(moduleCode('const A = 1u;\n', '@diagnostic(off, derivative_uniformity) fn g() {}\n')).toBe('const A = 1u;\n@diagnostic(off, derivative_uniformity) fn g() {}\n');
  });

  test('the subgroup family compiles on this device with its directives hoisted (Dawn reports no error)', async () => {
    // SwiftShader has the subgroups feature with one size (ENVIRONMENT.md): the device asked for it.
    expect(gpu.device.features.has('subgroups')).toBe(true);
    expect(gpu.subgroupSize).toBe(4);
    const scope = 'validation';
    gpu.device.pushErrorScope(scope);
    gpu.precompile(matmulSpec(requireMatmulVariant('v', 'sg8x4'), true, false, gpu.subgroupSize));
    expect(await gpu.device.popErrorScope()).toBeNull();
  });

  test('subgroupSize: 0 turns the subgroup kernels off; a bad size is refused naming the field, the value and the rule', async () => {
    const be = await createTestBackend({ subgroupSize: 0 });
    try {
      expect(be.subgroupSize).toBe(0);
      const a = be.tensor(new Float32Array(16), [4, 4]);
      expect(() => be.matmulWith('sg8x4', a, a)).toThrow('matmulVariant = "sg8x4": needs an adapter with the "subgroups" feature');
      expect(() => be.setMatmulVariant('sg8x8')).toThrow('matmulVariant = "sg8x8": needs an adapter with the "subgroups" feature');
      await expect(be.autotune({ candidates: ['reg4x4', 'sg8x4'] })).rejects.toThrow('autotune candidates = "sg8x4"');
      be.dispose(a);
    } finally {
      be.destroy();
    }
    await expect(createTestBackend({ subgroupSize: 6 })).rejects.toThrow('subgroupSize = 6: must be 0 or a power of two from 4 to 128');
  });
});
