/**
 * The matmul benchmark: a quick check that it measures and formats, and the
 * full table (PipeLab vs TensorFlow.js, both on Dawn + SwiftShader in Node)
 * when asked for:
 *
 *   PIPELAB_GPU_BENCH=1 npx vitest run src/gpu/matmul-bench.test.ts
 *
 * (PIPELAB_GPU_BENCH=autotune also runs the start-up autotune first.)
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { GpuBackend } from './gpu-backend.ts';
import { BENCH_SIZES, benchMatmul, compareRows, formatBench, type MatmulBenchRow } from './matmul-bench.ts';
import { createTestBackend, nodeGpu } from './testing/node-gpu.ts';

const FULL = process.env.PIPELAB_GPU_BENCH;
const cpuClockMs = (): number => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

let gpu: GpuBackend;
beforeAll(async () => {
  gpu = await createTestBackend({ autotune: FULL === 'autotune' });
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

  test.skipIf(!FULL)('full table: PipeLab vs TensorFlow.js WebGPU (Dawn + SwiftShader in Node)', async () => {
    if (gpu.autotuneReport) {
      for (const f of gpu.autotuneReport.forms) {
        console.log(`autotune ${f.form}: ${f.winner} (${f.timings.map((t) => `${t.variant} ${t.gflops.toFixed(2)}${t.skipped ? '*' : ''}`).join(', ')}) in ${gpu.autotuneReport.totalMs.toFixed(0)} ms`);
      }
    }
    let peer: MatmulBenchRow[] = [];
    try {
      const g = globalThis as { navigator?: { gpu?: GPU } };
      if (!g.navigator) Object.defineProperty(globalThis, 'navigator', { value: {}, configurable: true, writable: true });
      g.navigator!.gpu = await nodeGpu();
      const { benchTfjsMatmul } = await import('./tfjs-matmul-bench.ts');
      peer = await benchTfjsMatmul(BENCH_SIZES, { repeats: 3, cpuClockMs });
    } catch (e) {
      console.log(`TensorFlow.js WebGPU could not run here: ${(e as Error).message}`);
    }
    const rows = await benchMatmul(gpu, BENCH_SIZES, { repeats: 3, cpuClockMs });
    console.log(`${gpu.adapterDescription()}\n${formatBench(rows, peer)}`);
    if (peer.length) console.log(peer.map((r) => `tfjs ${r.form} ${r.M}x${r.N}x${r.K}: ${r.gflopsPerCpuS?.toFixed(2)} GFLOP/cpu-s`).join('\n'));
    expect(rows).toHaveLength(BENCH_SIZES.length * 3);
  }, 600_000);
});
