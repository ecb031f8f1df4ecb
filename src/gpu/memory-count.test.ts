/**
 * The GPU backend's one count of its buffers (nn/memory-ledger.ts): the pool, the readback staging and the
 * uniform ring report into the same ledger; a tensor's kind follows its tags; freed storage leaves the live
 * count and, kept by the pool, shows as pooled.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { byKind } from '../nn/memory-ledger.ts';
import { bucketSize } from './buffer-pool.ts';
import type { GpuBackend } from './gpu-backend.ts';
import { UNIFORM_SLOT } from './launch.ts';
import { createTestBackend } from './testing/node-gpu.ts';

let gpu: GpuBackend;

beforeAll(async () => {
  gpu = await createTestBackend();
});
afterAll(() => gpu?.destroy());

describe('the GPU backend counts every buffer in its ledger', () => {
  test('live equals the pool in use plus the uniform ring; pooled equals the pool free', async () => {
    const a = gpu.tensor(new Array(1000).fill(1), [10, 100]);
    const b = gpu.zeros([100, 7]);
    const c = gpu.matmul(a, b); // padding temporaries come and go
    await gpu.read(c); // a readback staging buffer comes and goes
    const s = gpu.stats();
    expect(gpu.memory.liveBytes).toBe(s.pool.inUseBytes + 1024 * UNIFORM_SLOT);
    expect(gpu.memory.pooled).toBe(s.pool.pooledBytes);
    // The ring is its own kind; the readback's staging went back to the pool once read.
    expect(gpu.memory.bytesOf('uniforms')).toBe(1024 * UNIFORM_SLOT);
    expect(gpu.memory.bytesOf('staging')).toBe(0);
    for (const t of [a, b, c]) gpu.dispose(t);
    await gpu.sync();
    expect(gpu.memory.liveBytes).toBe(gpu.stats().pool.inUseBytes + 1024 * UNIFORM_SLOT);
    expect(gpu.memory.pooled).toBe(gpu.stats().pool.pooledBytes);
  });

  test('tags move a tensor between kinds; freed storage is pooled, not live; a freed tensor in an op is named', async () => {
    const w = gpu.tensor(new Array(3000).fill(2), [3000]);
    gpu.tag(w, 'weights');
    const before = byKind(gpu.memory.sample().live);
    expect(before.weights).toBeGreaterThanOrEqual(bucketSize(12000));
    const pooled0 = gpu.memory.pooled;
    gpu.freeStorage(w);
    gpu.flush();
    expect(byKind(gpu.memory.sample().live).weights).toBe(before.weights - bucketSize(12000));
    expect(gpu.memory.pooled).toBe(pooled0 + bucketSize(12000));
    expect(() => gpu.scale(w, 2)).toThrow(/storage freed.*missed gather/);
    gpu.allocStorage(w, 'gathered');
    expect(gpu.memory.pooled).toBe(pooled0); // the same bucket comes back from the pool
    expect(byKind(gpu.memory.sample().live).gathered).toBe(bucketSize(12000));
    gpu.fill(w, 3);
    expect((await gpu.read(w))[2999]).toBe(3);
    const live = gpu.stats().liveBuffers;
    gpu.freeStorage(w);
    gpu.dispose(w);
    expect(gpu.stats().liveBuffers).toBe(live - 1);
  });

  test('a buffer let go while the commands that read it wait for their submit is pending until the submit', async () => {
    const a = gpu.tensor(new Array(64).fill(1), [8, 8]);
    await gpu.sync();
    const b = gpu.activation('relu', a); // encodes a dispatch that reads a
    gpu.dispose(a);
    expect(gpu.memory.sample().pending).toBe(bucketSize(256));
    gpu.flush();
    expect(gpu.memory.sample().pending).toBeUndefined();
    expect((await gpu.read(b))[63]).toBe(1);
    gpu.dispose(b);
  });
});
