/**
 * The matmul benchmark measures and formats (the full table is a benchmark,
 * not a test: src/gpu/matmul-bench.node-bench.ts, `npm run bench:node`).
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { GpuBackend } from './gpu-backend.ts';
import { benchMatmul, compareRows, formatBench, type MatmulBenchRow } from './matmul-bench.ts';
import { createTestBackend } from './testing/node-gpu.ts';

const cpuClockMs = (): number => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

let gpu: GpuBackend;
beforeAll(async () => {
  gpu = await createTestBackend();
});
afterAll(() => gpu?.destroy());

describe('matmul benchmark', () => {
  test('measures every form and formats a comparison', async () => {
    const rows = await benchMatmul(gpu, [[9, 17, 5]], { warmup: 1, repeats: 2, cpuClockMs });
    expect(rows.map((r) => r.form)).toEqual(['NN', 'NT', 'TN']);
    for (const r of rows) {
      expect(r.impl).toBe('pipelab');
      expect(r.gflops).toBeGreaterThan(0);
      expect(r.medianMs).toBeGreaterThanOrEqual(r.minMs);
      expect(r.cpuMs).toBeGreaterThanOrEqual(0);
    }
    const peer: MatmulBenchRow[] = rows.map((r) => ({ ...r, impl: 'peer', variant: 'x', gflops: r.gflops / 2 }));
    const cmp = compareRows(rows, peer);
    for (const c of cmp) expect(c.ratio).toBeCloseTo(2, 6);
    const text = formatBench(rows, peer);
    expect(text).toContain('9x17x5');
    expect(text).toContain('2.00x');
  });
});
