/**
 * The matmul benchmark measures and formats (the full tables are benchmarks,
 * not tests: `npm run bench` in Chromium, `npm run bench:node` on Dawn in Node).
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { GpuBackend } from '../gpu/gpu-backend.ts';
import { BENCH_SIZES, BIG_BENCH_SIZES, benchMatmul, benchSide, compareRows, defaultBatch, formatBench, gpuBatch, operandShapes, randomOperand, type MatmulBenchRow, type MatmulSide, type MatmulSize } from './matmul-bench.ts';
import { createTestBackend } from '../gpu/testing/node-gpu.ts';

const cpuClockMs = (): number => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

let gpu: GpuBackend;
beforeAll(async () => {
  gpu = await createTestBackend();
});
afterAll(() => gpu?.destroy());

/** A real peer, timed by the same loop: a plain-JavaScript triple loop on the CPU; counts what the loop asked of it. */
function jsCpuSide(calls: { warm: number; issue: number; settle: number; release: number }): MatmulSide {
  return {
    impl: 'js-cpu',
    async prepare(form, [M, N, K]) {
      const { a: as, b: bs } = operandShapes(form, M, N, K);
      const a = randomOperand(as[0] * as[1], 1);
      const b = randomOperand(bs[0] * bs[1], 2);
      const c = new Float64Array(M * N);
      const once = () => {
        for (let i = 0; i < M; i++) {
          for (let j = 0; j < N; j++) {
            let z = 0;
            for (let k = 0; k < K; k++) z += (form[0] === 'T' ? a[k * M + i] : a[i * K + k]) * (form[1] === 'T' ? b[j * K + k] : b[k * N + j]);
            c[i * N + j] = z;
          }
        }
      };
      return {
        variant: 'triple loop',
        async warm() {
          calls.warm++;
          once();
        },
        issue() {
          calls.issue++;
          once();
        },
        async settle() {
          calls.settle++;
        },
        release() {
          calls.release++;
        },
      };
    },
  };
}

describe('matmul benchmark', () => {
  test('one timing loop measures both sides; the comparison is their GFLOP/s ratio', async () => {
    const sizes: MatmulSize[] = [[9, 17, 5]];
    const opts = { warmup: 1, repeats: 2, batch: 3, cpuClockMs };
    const rows = await benchMatmul(gpu, sizes, opts);
    expect(rows.map((r) => r.form)).toEqual(['NN', 'NT', 'TN']);
    const calls = { warm: 0, issue: 0, settle: 0, release: 0 };
    const peer = await benchSide(jsCpuSide(calls), sizes, opts);
    // 3 forms × (1 warm-up; 2 repeats of a batch of 3, each settled; one more settle after the warm-up; one release).
    expect(calls).toEqual({ warm: 3, issue: 3 * 2 * 3, settle: 3 * 3, release: 3 });
    for (const r of [...rows, ...peer]) {
      expect(r.gflops).toBeCloseTo((2 * 9 * 17 * 5) / (r.medianMs * 1e6), 9);
      expect(r.medianMs).toBeGreaterThanOrEqual(r.minMs);
      expect(r.cpuMs).toBeGreaterThanOrEqual(0);
      expect([r.repeats, r.batch]).toEqual([2, 3]);
    }
    expect(rows.every((r) => r.impl === 'pipelab')).toBe(true);
    expect(peer.every((r) => r.impl === 'js-cpu' && r.variant === 'triple loop')).toBe(true);
    const cmp = compareRows(rows, peer);
    expect(cmp.map((c) => c.form)).toEqual(['NN', 'NT', 'TN']);
    for (const c of cmp) {
      expect(c.peer?.form).toBe(c.form);
      expect(c.ratio).toBeCloseTo(c.ours.medianMs > 0 ? (c.peer as MatmulBenchRow).medianMs / c.ours.medianMs : NaN, 9);
    }
    const text = formatBench(rows, peer);
    expect(text).toContain('9x17x5');
    expect(text).toContain(`${(cmp[0].ratio as number).toFixed(2)}x`);
    expect(compareRows(rows, [])[0].ratio).toBeUndefined();
  });
});

describe('matmuls per timed repeat on a real GPU', () => {
  test('~100 GFLOP a repeat, at most 64, at least 1: the queue wait is a small part of every figure', () => {
    expect(gpuBatch(4096, 4096, 4096)).toBe(1);
    expect(gpuBatch(2048, 2048, 2048)).toBe(6);
    expect(gpuBatch(1024, 1024, 1024)).toBe(47);
    expect(gpuBatch(64, 256, 256)).toBe(64);
    for (const s of [...BENCH_SIZES, ...BIG_BENCH_SIZES]) {
      const [M, N, K] = s;
      expect(gpuBatch(M, N, K)).toBeGreaterThanOrEqual(defaultBatch(M, N, K));
    }
  });
});
