/**
 * Optimizer offload (ZeRO-Offload) on the float64 CPU host, in-process over real MessageChannels: the optimizer state
 * in host memory and its step on the CPU change where the bytes live, not the numbers: every run equals one device
 * (≤ 1e-12 relative), with one pipeline, with dp replicas, with ZeRO-1 and ZeRO-2 (the CPU holds the worker's shard
 * only; with ZeRO-2 its gradient accumulator too) and
 * beside DualPipe's model copies; the device holds no optimizer state (the count says so), the host holds it; each
 * stage's step is drawn on its worker's lane; a checkpoint's optimizer state resumes an offloaded run exactly.
 */
import { describe, expect, it } from 'vitest';
import { CpuBackend } from '../../nn/cpu-backend.ts';
import { trainSingleDevice } from '../../nn/train.ts';
import { runPipeline } from '../coordinator.ts';
import { recordingHosts } from '../executor/in-process-host.ts';
import { defaultRunConfig, toTrainConfig, validateRunConfig, type RunConfig } from '../../config/run-config.ts';
import { maxRelErr } from '../../util/rel-err.ts';
import type { StepResult } from '../executor/index.ts';
import type { TrainProgress } from '../../nn/train.ts';
import { plannedPeaks } from '../../config/memory-budget.ts';
import { kindIndex } from '../../nn/memory-ledger.ts';

function cfgOf(over: Partial<RunConfig>): RunConfig {
  const cfg = { ...defaultRunConfig(), layers: 3, hidden: 6, batchSize: 16, microbatches: 2, ranks: 2, steps: 3, optimizer: 'adamw' as const, lr: 0.01, weightDecay: 0.05, evalEvery: 0, offloadOptimizer: true, ...over };
  validateRunConfig(cfg);
  return cfg;
}

async function expectEqualsOneDevice(cfg: RunConfig) {
  const seen: StepResult[][] = [];
  const report = await runPipeline(cfg, { hostFactory: recordingHosts(seen, () => new CpuBackend()), readWeights: true, recvTimeoutMs: 5000 });
  const ref = await trainSingleDevice(new CpuBackend(), toTrainConfig(cfg));
  let worst = 0;
  for (let i = 0; i < cfg.steps; i++) worst = Math.max(worst, Math.abs(report.losses[i] - ref.losses[i]) / Math.abs(ref.losses[i]));
  worst = Math.max(worst, maxRelErr(report.weights, ref.params));
  expect(worst).toBeLessThan(1e-12);
  return { report, seen };
}

describe('optimizer offload equals one device on the CPU host', () => {
  for (const [title, over] of [
    ['1F1B, AdamW, one pipeline', {}],
    ['GPipe, SGD with momentum', { schedule: 'gpipe', optimizer: 'sgd', momentum: 0.9, lr: 0.05 }],
    ['ZB-H1 (split backward)', { schedule: 'zb-h1' }],
    ['interleaved 1F1B (two stages a rank)', { schedule: 'interleaved-1f1b', virtual: 2, layers: 3, microbatches: 4 }],
    ['dp 2, all-reduce then the CPU step', { dp: 2 }],
    ['dp 3, ZeRO-1: each worker’s shard on its CPU (chunks of unequal size)', { dp: 3, zero: 1, batchSize: 24 }],
    ['DualPipe’s two model copies', { schedule: 'dualpipe', microbatches: 4, layers: 3 }],
    ['dp 2, ZeRO-2: each worker’s gradient shard and its state on its CPU', { dp: 2, zero: 2 }],
    ['dp 3, ZeRO-2, ZB-H1 (chunks of unequal size, split backward)', { dp: 3, zero: 2, batchSize: 24, schedule: 'zb-h1' }],
    ['dp 2, ZeRO-2, DualPipe’s model copies (the host accumulators summed)', { dp: 2, zero: 2, schedule: 'dualpipe', microbatches: 4, layers: 3 }],
  ] as [string, Partial<RunConfig>][]) {
    it(title, async () => {
      await expectEqualsOneDevice(cfgOf(over));
    });
  }

  it('the device holds no optimizer state, the host holds it (the plan’s bytes), and the step is drawn on the worker’s lane', async () => {
    for (const over of [{}, { dp: 2, zero: 1 as const }, { dp: 2, zero: 2 as const }]) {
      const cfg = cfgOf(over);
      const { report, seen } = await expectEqualsOneDevice(cfg);
      const onDevice = plannedPeaks({ ...cfg, offloadOptimizer: false });
      for (const step of seen) {
        step.forEach((r, w) => {
          expect(r.held?.optimizer).toBe(0);
          // The allocator's count: no optimizer state on the device (ZeRO-2: no gradient shard between steps either).
          const rest = r.memory!.samples[r.memory!.samples.length - 1].live;
          expect(rest[kindIndex('optimizer')]).toBe(0);
          if (cfg.zero === 2) expect(rest[kindIndex('grads')]).toBe(0), expect(r.held?.grads).toBe(0);
          // What the device would have held is on the host: the whole stage's, or the shard's (replica 0's the largest).
          const moved = onDevice[w % cfg.ranks].optimizer + (cfg.zero === 2 ? onDevice[w % cfg.ranks].grads : 0);
          if (cfg.zero === 0) expect(r.hostOptimizerBytes).toBe(moved);
          else expect(r.hostOptimizerBytes).toBeLessThanOrEqual(moved), expect(r.hostOptimizerBytes).toBeGreaterThan(moved * 0.9);
        });
      }
      if (cfg.zero === 0) {
        // One offload interval per stage and step on the worker's lane.
        const offloads = report.timeline.intervals.filter((iv) => iv.op === 'collective' && iv.coll === 'cpu-update');
        expect(offloads.map((iv) => [iv.rank, iv.stage]).sort()).toEqual([[0, 0], [1, 1]]);
        expect(offloads.every((iv) => iv.end >= iv.start && (iv.bytes ?? 0) > 0)).toBe(true);
        // No all-reduce figures from a run of one pipeline: the offload is not a collective over replicas.
        expect(report.allReduce ?? null).toBeNull();
      }
    }
  });

  for (const [title, over] of [['one pipeline', {}], ['dp 2, ZeRO-1 (each shard’s host state joined, then cut again)', { dp: 2, zero: 1 as const }], ['dp 2, ZeRO-2', { dp: 2, zero: 2 as const }]] as const) it(`${title}: resumes from a checkpoint of its own run (the host state read out and loaded back) as the uninterrupted run`, async () => {
    const cfg = cfgOf({ steps: 4, ...over });
    const whole = await runPipeline(cfg, { hostFactory: recordingHosts([], () => new CpuBackend()), readWeights: true, recvTimeoutMs: 5000 });
    let at2: TrainProgress | undefined;
    await runPipeline({ ...cfg, steps: 4 }, { hostFactory: recordingHosts([], () => new CpuBackend()), recvTimeoutMs: 5000, progressEvery: 2, onProgress: (p) => (p.stepsDone === 2 ? (at2 = p) : undefined) });
    expect(at2?.optimizer.steps).toBe(2);
    const resumed = await runPipeline(cfg, { hostFactory: recordingHosts([], () => new CpuBackend()), readWeights: true, recvTimeoutMs: 5000, from: at2 });
    expect(resumed.losses).toEqual(whole.losses);
    expect(maxRelErr(resumed.weights, whole.weights!)).toBe(0);
  });
});
