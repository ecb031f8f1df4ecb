/**
 * DualPipe's two model copies on the float64 CPU reference, in-process over
 * real MessageChannels: each rank holds a stage of each copy, each copy trains
 * on its half of every step's micro-batches, and at the flush each stage's
 * gradients are summed over its two copies (copy-sum.ts) before both take the
 * same update. The run must compute what one device computes on the whole
 * batch (≤ 1e-12 relative, losses and weights), and every rank's copy of a
 * stage must hold the same weights as the other copy. On dp replicas (each
 * stage all-reduced over them, then summed over its copies; with ZeRO each
 * owned chunk after its reduce-scatter, or its accumulator) and with tp workers
 * per stage (each summing its own pieces with its partner's), the same.
 */
import { describe, expect, it } from 'vitest';
import { CpuBackend } from '../../nn/cpu-backend.ts';
import { oneDeviceRun } from '../../nn/testing/one-device.ts';
import { ConfigError } from '../../util/errors.ts';
import { relErr, relErrByName } from '../../util/rel-err.ts';
import { defaultRunConfig, toTrainConfig, type RunConfig } from '../../config/run-config.ts';
import { runPipeline } from '../coordinator.ts';
import { InProcessRankHost } from '../executor/in-process-host.ts';
import type { Weights } from '../executor/rank-host.ts';
import { computeOnly, makespan } from '../../schedule/timeline.ts';

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
    const ref = await oneDeviceRun(toTrainConfig(cfg));
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
    expect(report.timeline.intervals.filter((iv) => iv.op !== 'comm' && iv.op !== 'collective')).toHaveLength(actions);
    // The sum over the copies is drawn: one interval per stage held (both copies' stages), each with the bytes sent.
    const sums = report.timeline.intervals.filter((iv) => iv.op === 'collective' && iv.coll === 'copy-sum');
    expect(sums.map((iv) => iv.stage).sort((a, b) => a - b)).toEqual(Array.from({ length: 2 * p }, (_, s) => s));
    for (const iv of sums) expect(iv.bytes ?? 0).toBeGreaterThan(0);
    expect(report.schedule.copies).toBe(2);
    expect(report.stageBlocks.slice(p)).toEqual(report.stageBlocks.slice(0, p));
    // The report's copies' sum: rank k with rank p − 1 − k per model stage, and the simulator playing it at its measured time.
    const cs = report.copySum;
    if (!cs) throw new Error('a DualPipe run reports its copies’ sum');
    expect(cs.perModelStage.map((x) => x.ranks)).toEqual(Array.from({ length: p }, (_, k) => [k, p - 1 - k]));
    for (const x of cs.perModelStage) expect(x.bytes).toBeGreaterThan(0);
    const drawn = report.simulatedTimeline.intervals.filter((iv) => iv.coll === 'copy-sum');
    expect(drawn.map((iv) => iv.stage).sort((a, b) => a - b)).toEqual(Array.from({ length: 2 * p }, (_, s) => s));
    for (const iv of drawn) expect(iv.end - iv.start).toBeCloseTo(cs.perModelStage[iv.stage % p].ownMs, 9);
    expect(cs.simulated?.stepMs).toBeCloseTo(makespan(report.simulatedTimeline), 9);
    expect(report.makespanMs.simulated).toBeCloseTo(makespan(computeOnly(report.simulatedTimeline)), 9);
    console.log(`dualpipe p=${p} m=${m} ${optimizer}: worst loss rel diff ${worstLoss.toExponential(2)}, worst weight rel diff ${worstWeight.toExponential(2)}`);
  });

  it.each([
    ['one pipeline', {}],
    ['2 replicas with ZeRO-1 (each copy of a stage saves its owned chunks once)', { dp: 2, zero: 1 as const }],
    ['2 replicas with ZeRO-3 (the weights too, as pieces)', { dp: 2, zero: 3 as const }],
  ])('resumes from a checkpoint, %s: both copies load the same weights and optimizer state', async (_, over) => {
    const cfg = dualConfig({ ranks: 2, microbatches: 4, steps: 4, ...over });
    let saved: Parameters<typeof runPipeline>[1]['from'];
    await runPipeline({ ...cfg }, { hostFactory: (r) => new InProcessRankHost(r, new CpuBackend()), progressEvery: 2, onProgress: (pr) => (saved ??= pr) });
    expect(saved?.stepsDone).toBe(2);
    const resumed = await runPipeline(cfg, { hostFactory: (r) => new InProcessRankHost(r, new CpuBackend()), readWeights: true, from: saved });
    const ref = await oneDeviceRun(toTrainConfig(cfg));
    for (let i = 0; i < cfg.steps; i++) expect(Math.abs(resumed.losses[i] - ref.losses[i])).toBeLessThan(1e-12 * Math.abs(ref.losses[i]));
    for (const [n, e] of Object.entries(relErrByName(resumed.weights, ref.params))) expect(e, n).toBeLessThan(1e-12);
    expect(resumed.replicaMismatch).toBe(0);
  });

  // On replicas the flush all-reduces each stage over them, then sums it over its copies (copy messages of their own
  // kind: a dp ring's chunk of stage j and a copy ring's chunk of model stage j must not meet), then updates.
  const meshes: [string, Partial<RunConfig>][] = [
    ['dp=2, overlapped', { dp: 2 }],
    ['dp=2, not overlapped', { dp: 2, overlap: false }],
    ['dp=2 p=4', { dp: 2, ranks: 4, microbatches: 8, batchSize: 32 }],
    ['tp=2', { tp: 2 }],
    ['dp=2 × tp=2, GPT', { dp: 2, tp: 2, dataset: 'names', model: 'gpt', layers: 3, heads: 4, width: 16, blockSize: 16, batchSize: 8 }],
    // ZeRO-1 (DeepSeek-V3's setting): each owned chunk, after its reduce-scatter, summed over the copies, then updated and gathered.
    ['dp=2, ZeRO-1, overlapped', { dp: 2, zero: 1 }],
    ['dp=2, ZeRO-1, not overlapped, p=4', { dp: 2, zero: 1, overlap: false, ranks: 4, microbatches: 8, batchSize: 32 }],
    ['dp=3 × tp=2, ZeRO-1, GPT', { dp: 3, tp: 2, zero: 1, dataset: 'names', model: 'gpt', layers: 3, heads: 4, width: 16, blockSize: 16, batchSize: 12 }],
    // ZeRO-2 and 3: each owned chunk's accumulator (a reduce-scatter per backward) summed over the copies at the step's end.
    ['dp=2, ZeRO-2', { dp: 2, zero: 2 }],
    ['dp=2, ZeRO-2, not overlapped, p=4', { dp: 2, zero: 2, overlap: false, ranks: 4, microbatches: 8, batchSize: 32 }],
    ['dp=2, ZeRO-3, kept for the step', { dp: 2, zero: 3 }],
    ['dp=2 × tp=2, ZeRO-3, re-gathered per action, GPT', { dp: 2, tp: 2, zero: 3, reshard: 'microbatch', dataset: 'names', model: 'gpt', layers: 3, heads: 4, width: 16, blockSize: 16, batchSize: 8 }],
  ];
  it.each(meshes)('%s: one device’s losses and weights, every copy and replica equal', async (_, over) => {
    const cfg = dualConfig({ ranks: 2, microbatches: 4, ...over });
    const report = await runPipeline(cfg, { hostFactory: (r) => new InProcessRankHost(r, new CpuBackend()), readWeights: true, recvTimeoutMs: 5000 });
    const ref = await oneDeviceRun(toTrainConfig(cfg));
    for (let i = 0; i < cfg.steps; i++) expect(Math.abs(report.losses[i] - ref.losses[i]), `loss of step ${i}`).toBeLessThan(1e-12 * Math.abs(ref.losses[i]));
    for (const [n, e] of Object.entries(relErrByName(report.weights, ref.params))) expect(e, n).toBeLessThan(1e-12);
    // With ZeRO-3 the copies' pieces of each replica are compared (no two replicas hold the same piece).
    expect(report.replicaMismatch).toBe(0);
    // The replicas' all-reduces are in the timeline, one set per stage held (two per rank: one of each copy).
    const collectives = report.timeline.intervals.filter((iv) => iv.op === 'collective' && iv.coll === 'reduce-scatter');
    if ((cfg.dp ?? 1) > 1) expect(new Set(collectives.map((iv) => iv.stage)).size).toBe(2 * cfg.ranks);
    else expect(collectives).toHaveLength(0);
    // The copies' sums: one per stage held, on every worker.
    expect(report.timeline.intervals.filter((iv) => iv.op === 'collective' && iv.coll === 'copy-sum')).toHaveLength(2 * cfg.ranks * cfg.dp * (cfg.tp ?? 1));
    // The replicas' simulated step leaves the copies' sum out as the measured one does: with ZeRO 0 the sum ends the
    // step; with ZeRO it runs before the update (and all-gather), inside the measured step, and so inside the simulated.
    const simStep = report.allReduce?.simulated?.stepMs;
    if (cfg.dp > 1 && report.copySum) {
      expect(simStep).toBeCloseTo(cfg.zero >= 1 ? makespan(report.simulatedTimeline) : makespan(report.simulatedTimeline) - (report.copySum.simulated?.addedMs ?? 0), 9);
    }
    // ZeRO-1: each stage's owned chunk updated once a step, by every worker.
    const updates = report.timeline.intervals.filter((iv) => iv.op === 'collective' && iv.coll === 'shard-update');
    expect(updates).toHaveLength(cfg.zero >= 1 ? 2 * cfg.ranks * cfg.dp * (cfg.tp ?? 1) : 0);
  });

  it('refuses odd p and m < 2p before any worker starts, naming the field, value and rule', async () => {
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
  });
});
