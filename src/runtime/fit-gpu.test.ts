/**
 * Swapping and optimizer offload on WebGPU (Dawn in Node, one device per rank, in-process ranks over real
 * MessageChannels; SwiftShader here): a swapped stash comes back bit for bit (float32 read and written again), so a
 * swapped run's losses and weights equal the same run's without it exactly; the offloaded optimizer's float32 CPU
 * arithmetic (nn/host-optimizer.ts) keeps the run within 1e-5 relative of the device's own optimizer (with ZeRO-2 over
 * two replicas too, its gradient shard accumulated in host memory); both stay
 * within float32's distance (1e-4) of one float64 device. The device's stash falls with swapping and its optimizer
 * state goes to the host with offload; no buffer leaks.
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { GpuBackend } from '../gpu/gpu-backend.ts';
import { createTestBackend } from '../gpu/testing/node-gpu.ts';
import { CpuBackend } from '../nn/cpu-backend.ts';
import { trainSingleDevice } from '../nn/train.ts';
import { runPipeline } from './coordinator.ts';
import { InProcessRankHost } from './executor/in-process-host.ts';
import { defaultRunConfig, toTrainConfig, type RunConfig } from '../config/run-config.ts';
import { maxRelErr } from '../util/rel-err.ts';

const backends: GpuBackend[] = [];
afterAll(() => {
  for (const b of backends) b.destroy();
});

const base: RunConfig = { ...defaultRunConfig(), ranks: 2, layers: 3, hidden: 16, batchSize: 32, microbatches: 4, steps: 3, evalEvery: 0, optimizer: 'adamw', lr: 0.01, weightDecay: 0.05, schedule: 'gpipe' };

/** One device per rank for the whole file: a later run on them compiles nothing again. */
async function onGpu(cfg: RunConfig) {
  while (backends.length < cfg.ranks * cfg.dp) backends.push(await createTestBackend());
  return runPipeline(cfg, { hostFactory: (r) => new InProcessRankHost(r, backends[r]), readWeights: true });
}

const relLoss = (a: readonly number[], b: readonly number[]) => Math.max(...a.map((x, i) => Math.abs(x - b[i]) / Math.abs(b[i])));

describe('swapping and offload on the GPU backend', () => {
  it('swapped: bit for bit the run without it, less stash on the device', async () => {
    const plain = await onGpu(base);
    const swapped = await onGpu({ ...base, swap: 'all' });
    expect(swapped.losses).toEqual(plain.losses);
    expect(maxRelErr(swapped.weights, plain.weights!)).toBe(0);
    expect(swapped.peakStashBytes[0]).toBeLessThan(plain.peakStashBytes[0]);
    expect(swapped.timeline.intervals.some((iv) => iv.comm === 'swap-in')).toBe(true);
    expect(swapped.leakedBuffers).toBe(0);
    const ref = await trainSingleDevice(new CpuBackend(), toTrainConfig(base));
    expect(relLoss(swapped.losses, ref.losses)).toBeLessThan(1e-4);
  }, 120_000);

  it('offloaded with ZeRO-2 (dp 2): within 1e-5 of the device-sharded run; no gradient shard or optimizer state on the device', async () => {
    const cfg: RunConfig = { ...base, dp: 2, zero: 2 };
    const plain = await onGpu(cfg);
    const off = await onGpu({ ...cfg, offloadOptimizer: true });
    expect(relLoss(off.losses, plain.losses)).toBeLessThan(1e-5);
    expect(maxRelErr(off.weights, plain.weights!)).toBeLessThan(1e-5);
    expect(off.heldBytesPerWorker.every((h) => h.optimizer === 0 && h.grads === 0)).toBe(true);
    expect(plain.heldBytesPerWorker.every((h) => h.optimizer > 0 && h.grads > 0)).toBe(true);
    expect((off.hostBytesPerWorker ?? []).every((b) => b > 0)).toBe(true);
    expect(off.leakedBuffers).toBe(0);
  }, 180_000);

  for (const optimizer of ['adamw', 'sgd'] as const) {
    it(`offloaded ${optimizer}: within 1e-5 of the device's own optimizer, no optimizer state on the device`, async () => {
      const cfg = { ...base, optimizer, momentum: 0.9 };
      const plain = await onGpu(cfg);
      const off = await onGpu({ ...cfg, offloadOptimizer: true });
      expect(relLoss(off.losses, plain.losses)).toBeLessThan(1e-5);
      expect(maxRelErr(off.weights, plain.weights!)).toBeLessThan(1e-5);
      expect(off.heldBytesPerWorker.every((h) => h.optimizer === 0)).toBe(true);
      expect(plain.heldBytesPerWorker.every((h) => h.optimizer > 0)).toBe(true);
      expect(off.leakedBuffers).toBe(0);
      const ref = await trainSingleDevice(new CpuBackend(), toTrainConfig(cfg));
      expect(relLoss(off.losses, ref.losses)).toBeLessThan(1e-4);
    }, 120_000);
  }
});
