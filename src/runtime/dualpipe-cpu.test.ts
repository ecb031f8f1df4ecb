/**
 * DualPipe's two model copies on the float64 CPU reference, in-process over
 * real MessageChannels: each rank holds a stage of each copy, each copy trains
 * on its half of every step's micro-batches, and at the flush each stage's
 * gradients are summed over its two copies (copy-sum.ts) before both take the
 * same update. The run must compute what one device computes on the whole
 * batch (≤ 1e-12 relative, losses and weights), and every rank's copy of a
 * stage must hold the same weights as the other copy.
 */
import { describe, expect, it } from 'vitest';
import { CpuBackend } from '../nn/cpu-backend.ts';
import { trainSingleDevice } from '../nn/train.ts';
import { ConfigError } from '../util/errors.ts';
import { relErr } from '../util/rel-err.ts';
import { defaultRunConfig, toTrainConfig, type RunConfig } from '../config/run-config.ts';
import { runPipeline } from './coordinator.ts';
import { InProcessRankHost } from './in-process-host.ts';
import type { Weights } from './rank-host.ts';

function dualConfig(over: Partial<RunConfig>): RunConfig {
  const ranks = over.ranks ?? 2;
  return { ...defaultRunConfig(), schedule: 'dualpipe', layers: Math.max(3, ranks - 1), hidden: 6, batchSize: 16, microbatches: 2 * ranks, steps: 3, optimizer: 'adamw', lr: 0.01, evalEvery: 0, ...over };
}

/** In-process hosts that keep every rank's last weights read (both copies of each stage). */
function recordingHosts() {
  const read = new Map<number, Weights>();
  const factory = (r: number) => {
    const h = new InProcessRankHost(r, new CpuBackend());
    const inner = h.readWeights.bind(h);
    h.readWeights = async () => {
      const w = await inner();
      read.set(r, w);
      return w;
    };
    return h;
  };
  return { read, factory };
}

describe('dualpipe on the CPU reference equals one device on the whole batch', () => {
  const cases: [number, number, RunConfig['optimizer']][] = [
    [2, 4, 'adamw'],
    [2, 8, 'sgd'],
    [4, 8, 'adamw'],
    [4, 12, 'adamw'],
  ];
  it.each(cases)('p=%i m=%i %s: losses and both copies’ weights', async (p, m, optimizer) => {
    const cfg = dualConfig({ ranks: p, microbatches: m, batchSize: 2 * m, optimizer, ...(optimizer === 'sgd' ? { momentum: 0.9, lr: 0.05 } : {}) });
    const { read, factory } = recordingHosts();
    const report = await runPipeline(cfg, { hostFactory: factory, readWeights: true, recvTimeoutMs: 5000 });
    const ref = await trainSingleDevice(new CpuBackend(), toTrainConfig(cfg));
    expect(report.losses).toHaveLength(cfg.steps);
    let worstLoss = 0;
    for (let i = 0; i < cfg.steps; i++) worstLoss = Math.max(worstLoss, Math.abs(report.losses[i] - ref.losses[i]) / Math.abs(ref.losses[i]));
    expect(worstLoss).toBeLessThan(1e-12);
    // Every weight is held twice, once by each copy: rank k (copy 0's stage k) and rank p − 1 − k (copy 1's).
    const names = Object.keys(ref.params).sort();
    const holders = new Map<string, number[]>();
    for (const [r, ws] of read) for (const n of Object.keys(ws)) holders.set(n, [...(holders.get(n) ?? []), r]);
    expect([...holders.keys()].sort()).toEqual(names);
    let worstWeight = 0;
    for (const n of names) {
      const ranks = (holders.get(n) ?? []).sort();
      expect(ranks).toHaveLength(2);
      expect(ranks[0] + ranks[1]).toBe(p - 1);
      for (const r of ranks) worstWeight = Math.max(worstWeight, relErr((read.get(r) as Weights)[n], ref.params[n]));
      // The copies agree bit for bit (the sum of two gradients is the same either way round).
      expect(Array.from((read.get(ranks[0]) as Weights)[n])).toEqual(Array.from((read.get(ranks[1]) as Weights)[n]));
    }
    expect(worstWeight).toBeLessThan(1e-12);
    expect(report.replicaMismatch).toBe(0);
    // One interval per action; each copy's loss computed on its own last stage (rank p − 1 for copy 0, rank 0 for copy 1).
    const actions = report.schedule.order.flat().length;
    expect(report.timeline.intervals.filter((iv) => iv.op !== 'comm')).toHaveLength(actions);
    expect(report.schedule.copies).toBe(2);
    expect(report.stageBlocks.slice(p)).toEqual(report.stageBlocks.slice(0, p));
    console.log(`dualpipe p=${p} m=${m} ${optimizer}: worst loss rel diff ${worstLoss.toExponential(2)}, worst weight rel diff ${worstWeight.toExponential(2)}`);
  });

  it('resumes from a checkpoint: both copies load the same weights and optimizer state', async () => {
    const cfg = dualConfig({ ranks: 2, microbatches: 4, steps: 4 });
    let saved: Parameters<typeof runPipeline>[1]['from'];
    await runPipeline({ ...cfg }, { hostFactory: (r) => new InProcessRankHost(r, new CpuBackend()), progressEvery: 2, onProgress: (pr) => (saved ??= pr) });
    expect(saved?.stepsDone).toBe(2);
    const resumed = await runPipeline(cfg, { hostFactory: (r) => new InProcessRankHost(r, new CpuBackend()), readWeights: true, from: saved });
    const ref = await trainSingleDevice(new CpuBackend(), toTrainConfig(cfg));
    for (let i = 0; i < cfg.steps; i++) expect(Math.abs(resumed.losses[i] - ref.losses[i])).toBeLessThan(1e-12 * Math.abs(ref.losses[i]));
    for (const n of Object.keys(ref.params)) expect(relErr((resumed.weights ?? {})[n], ref.params[n])).toBeLessThan(1e-12);
    expect(resumed.replicaMismatch).toBe(0);
  });

  it('refuses odd p, m < 2p and dp > 1 before any worker starts, naming the field, value and rule', async () => {
    const refusal = async (over: Partial<RunConfig>): Promise<string> => {
      let started = 0;
      try {
        await runPipeline(dualConfig(over), {
          hostFactory: (r) => {
            started++;
            return new InProcessRankHost(r, new CpuBackend());
          },
        });
      } catch (e) {
        expect(e).toBeInstanceOf(ConfigError);
        expect(started).toBe(0);
        return (e as Error).message;
      }
      throw new Error('did not refuse');
    };
    expect(await refusal({ ranks: 3, microbatches: 6, batchSize: 12 })).toMatch(/^ranks = 3: DualPipe needs an even number of ranks/);
    expect(await refusal({ ranks: 4, microbatches: 6, batchSize: 12 })).toMatch(/^microbatches = 6: DualPipe needs an even m ≥ 2p = 8/);
    expect(await refusal({ ranks: 2, microbatches: 4, dp: 2 })).toMatch(/^dp = 2: dualpipe already runs 2 copies of the model.*dp must be 1/);
  });
});
