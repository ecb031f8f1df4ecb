/**
 * The matmul benchmark table in Node (Dawn + SwiftShader): PipeLab beside
 * TensorFlow.js's WebGPU backend, same process, same adapter. A benchmark, not
 * a test (npm test does not run it); the browser figures come from `npm run bench`.
 *
 *   npm run bench:node                       (PIPELAB_GPU_BENCH=autotune: autotune first)
 */
import { afterAll, beforeAll, expect, test } from 'vitest';
import type { GpuBackend } from '../gpu/gpu-backend.ts';
import { BENCH_SIZES, benchMatmul, formatBench, type MatmulBenchRow } from './matmul-bench.ts';
import { createTestBackend, nodeGpu } from '../gpu/testing/node-gpu.ts';

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

test('full table: PipeLab vs TensorFlow.js WebGPU (Dawn + SwiftShader in Node)', async () => {
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
