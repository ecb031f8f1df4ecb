/**
 * A backend whose waits are nudged (src/gpu/wait-nudge.ts) on Dawn: the same results as the CPU reference,
 * nudges sent while it waited, none once idle; a bad interval is refused naming the field.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { CpuBackend } from '../nn/cpu-backend.ts';
import type { GpuBackend } from './gpu-backend.ts';
import { macrotask } from './wait-nudge.ts';
import { createTestBackend } from './testing/node-gpu.ts';
import { assertClose, makeRng, randomArray, testSeed } from './testing/compare.ts';

let gpu: GpuBackend;
const cpu = new CpuBackend();
const seed = testSeed();

beforeAll(async () => {
  gpu = await createTestBackend({ nudgeWaitsMs: 0.01 });
});
afterAll(() => gpu?.destroy());

describe('nudged waits', () => {
  test('reads and syncs give the reference results, with nudges sent while waiting and none after', async () => {
    const rng = makeRng(seed, 'nudged matmul');
    const [m, n, k] = [96, 80, 112];
    const a = randomArray(rng, m * k);
    const b = randomArray(rng, k * n);
    const before = gpu.stats().nudges;
    for (let i = 0; i < 4; i++) {
      const c = gpu.matmul(gpu.tensor(a, [m, k]), gpu.tensor(b, [k, n]));
      await gpu.sync();
      const got = await gpu.read(c);
      const ref = await cpu.read(cpu.matmul(cpu.tensor(a, [m, k]), cpu.tensor(b, [k, n])));
      assertClose(got, ref, `nudged matmul ${m}×${n}×${k}, round ${i}`, seed);
    }
    const sent = gpu.stats().nudges;
    expect(sent).toBeGreaterThan(before);
    for (let i = 0; i < 5; i++) await macrotask();
    const idle = gpu.stats().nudges;
    for (let i = 0; i < 20; i++) await macrotask();
    expect(gpu.stats().nudges).toBe(idle);
  });

  test('a bad interval names the field, the value and the rule', async () => {
    await expect(createTestBackend({ nudgeWaitsMs: -1 })).rejects.toThrow(/nudgeWaitsMs.*-1.*must be 0 \(off\) or a positive number of milliseconds/);
  });

  test('off by default on SwiftShader in Node', async () => {
    const plain = await createTestBackend();
    try {
      const t = plain.tensor([1, 2, 3], [3]);
      await plain.read(t);
      expect(plain.stats().nudges).toBe(0);
    } finally {
      plain.destroy();
    }
  });
});
