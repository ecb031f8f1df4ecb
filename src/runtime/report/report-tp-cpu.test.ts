/**
 * The report's tensor-parallel figures from real tp runs on the CPU host (in-process workers over
 * MessageChannels), checked against Megatron's count (4 all-reduces of rows·C per GPT block and
 * micro-batch, 2 forward and 2 backward, none in W; an all-gather and an all-reduce per MLP linear),
 * the sizes worked from the configuration, and the simulator's price worked by hand from the fit.
 */
import { describe, expect, it } from 'vitest';
import { CpuBackend } from '../../nn/cpu-backend.ts';
import { runPipeline } from '../coordinator.ts';
import { InProcessRankHost } from '../executor/in-process-host.ts';
import { defaultRunConfig, validateRunConfig, type RunConfig } from '../../config/run-config.ts';
import { tpFit } from './report-tp.ts';

const cpuHosts = () => (w: number) => new InProcessRankHost(w, new CpuBackend());

function gpt(over: Partial<RunConfig>): RunConfig {
  const cfg: RunConfig = {
    ...defaultRunConfig(), dataset: 'names', model: 'gpt', layers: 3, heads: 4, width: 16, blockSize: 16,
    schedule: '1f1b', ranks: 2, tp: 2, batchSize: 8, microbatches: 2, steps: 3, optimizer: 'adamw', lr: 0.01, evalEvery: 0, ...over,
  };
  validateRunConfig(cfg);
  return cfg;
}

describe('tp collectives in the run report', () => {
  it('GPT tp = 2, 1F1B: 4 all-reduces of rows·C per block and micro-batch; the simulator prices them at the fitted α', async () => {
    const cfg = gpt({});
    const report = await runPipeline(cfg, { hostFactory: cpuHosts(), recvTimeoutMs: 10000 });
    const tp = report.tensorParallel;
    expect(tp).toBeDefined();
    if (!tp) return;
    // Model blocks: the embedding with the first GPT block, …, the last GPT block with the head (whole on every worker).
    expect(report.stageBlocks).toEqual([[0, 2], [2, 4]]);
    expect(tp.perStage.map((s) => s.splitLayers)).toEqual([2, 1]);
    const m = cfg.microbatches;
    // 4 sequences of blockSize 16 tokens per micro-batch, width 16.
    const rows = (cfg.batchSize / m) * 16;
    for (const s of tp.perStage) {
      expect(s.perLayer).toBe(4);
      expect(s.perMicrobatch).toEqual({ F: 2 * s.splitLayers, B: 2 * s.splitLayers });
      // One peer gets the whole float64 tensor.
      expect(s.bytes).toBe((tp.t - 1) * rows * 16 * 8);
    }
    expect(tp.bytesPerElement).toBe(8);
    // Per worker and step: its stage's layers · 4 · m collectives (stage 0's workers 16, stage 1's 8: mean 12).
    expect(tp.perWorker.count).toBe((m * 4 * (2 + 1) * 2) / 4);
    expect(tp.share).toBeCloseTo(tp.exposedMs / tp.stepMs, 12);
    expect(tp.ownShare).toBeLessThanOrEqual(tp.share);
    // One message size: β is not separable, all of the time is α (the median own time).
    expect(tp.fit.sizes).toBe(1);
    expect(tp.fit.bytesPerMs).toBe(Infinity);
    expect(tp.fit.latencyMs).toBe(tp.points[0].ms);
    // The simulator's share: each rank runs m F and m B of its stage, each with its collectives at α.
    const perRank = tp.perStage.map((s) => m * 4 * s.splitLayers * tp.fit.latencyMs);
    const sim = tp.simulated;
    expect(sim).toBeDefined();
    expect(sim?.exposedMs).toBeCloseTo((perRank[0] + perRank[1]) / 2, 9);
    expect(sim?.stepMs).toBeCloseTo(report.makespanMs.simulated, 9);
    // The simulated timeline beside the measured one has the same lanes (R0·t0 … R1·t1), and as many tp collectives on each.
    const lanes = (tl: typeof report.timeline) => {
      const n = new Map<string, number>();
      for (const iv of tl.intervals) if (iv.op === 'collective' && iv.coll === 'tp-all-reduce') n.set(`${iv.rank}.${iv.tpRank ?? 0}`, (n.get(`${iv.rank}.${iv.tpRank ?? 0}`) ?? 0) + 1);
      return [...n.entries()].sort();
    };
    expect(report.simulatedTimeline.tp).toBe(2);
    expect(lanes(report.simulatedTimeline)).toEqual(lanes(report.timeline));
    expect(lanes(report.simulatedTimeline).length).toBe(4);
    // A tp run without replicas has no data-parallel all-reduce.
    expect(report.allReduce).toBeUndefined();
  }, 60_000);

  it('GPT tp = 2, ZB-H1: the backward’s collectives ride on I, none on W', async () => {
    const report = await runPipeline(gpt({ schedule: 'zb-h1', steps: 2 }), { hostFactory: cpuHosts(), recvTimeoutMs: 10000 });
    for (const s of report.tensorParallel?.perStage ?? []) expect(s.perMicrobatch).toEqual({ F: 2 * s.splitLayers, I: 2 * s.splitLayers, W: 0 });
  }, 60_000);

  it('GPT tp = 2 with sequence parallelism, ZB-H1: per block 2 gathers and 2 reduce-scatters in F, 4 in I, none in W; the embedding’s I and the head’s F gather rows; each stage’s LayerNorm gradients summed once a step, ending its last W; the sizes the model counts', async () => {
    const cfg = gpt({ schedule: 'zb-h1', steps: 2, sequenceParallel: true });
    const report = await runPipeline(cfg, { hostFactory: cpuHosts(), recvTimeoutMs: 10000 });
    const tp = report.tensorParallel;
    if (!tp) throw new Error('no tp figures');
    // Stage 0: the embedding and a block; stage 1: a block and the head.
    expect(tp.perStage.map((s) => s.splitLayers)).toEqual([2, 1]);
    expect(tp.perStage[0].perMicrobatch).toEqual({ F: 4 * 2, I: 4 * 2 + 1, W: 0 });
    expect(tp.perStage[1].perMicrobatch).toEqual({ F: 4 + 1, I: 4, W: 0 });
    // Per block: 8, the embedding's and head's gathers and the LayerNorm sums left to their stage: one a step each.
    expect(tp.perStage.map((s) => s.perLayer)).toEqual([8, 8]);
    expect(tp.perStage.map((s) => s.gradSumsPerStep)).toEqual([1, 1]);
    const rows = (cfg.batchSize / cfg.microbatches) * 16;
    const share = (rows / 2) * 16 * 8; // one worker's rows of a [rows, 16] float64 tensor, to its one peer
    // The sums: 4C per block, float64: stage 0 holds 2 blocks, stage 1 one.
    expect(new Set(tp.points.map((p) => p.bytes))).toEqual(new Set([share, 3 * share, 2 * 4 * 16 * 8, 4 * 16 * 8]));
    // Each worker's last W of the step ends with its stage's sum, and only that W (ZB-H1 defers W's to the step's end).
    const sumsOf = (tl: typeof report.timeline) => tl.intervals.filter((iv) => iv.op === 'collective' && iv.coll === 'tp-all-reduce');
    const lanes = new Set(report.timeline.intervals.map((iv) => `${iv.rank}:${iv.tpRank ?? 0}`)).size;
    expect(sumsOf(report.timeline)).toHaveLength(lanes);
    expect(sumsOf(report.simulatedTimeline)).toHaveLength(lanes);
    for (const iv of sumsOf(report.timeline)) {
      const lastW = report.timeline.intervals.filter((x) => x.op === 'W' && x.rank === iv.rank && (x.tpRank ?? 0) === (iv.tpRank ?? 0)).sort((a, b) => a.start - b.start).at(-1)!;
      expect(iv.start).toBeGreaterThanOrEqual(lastW.start);
      expect(iv.end).toBeLessThanOrEqual(lastW.end);
    }
    expect(tp.bytesPerElement).toBe(8);
    const kinds = new Set(report.timeline.intervals.filter((iv) => iv.op === 'collective').map((iv) => iv.coll));
    expect(kinds).toEqual(new Set(['tp-all-gather', 'tp-reduce-scatter', 'tp-all-reduce']));
    // The simulated timeline draws the same kinds, as many on each lane.
    const count = (tl: typeof report.timeline) => tl.intervals.filter((iv) => iv.op === 'collective' && iv.coll === 'tp-reduce-scatter').length;
    expect(count(report.simulatedTimeline)).toBe(count(report.timeline));
  }, 60_000);

  it('MLP tp = 2: an all-gather of out/t columns forward and an all-reduce of dx backward per hidden linear', async () => {
    const cfg: RunConfig = { ...defaultRunConfig(), layers: 3, hidden: 8, batchSize: 16, microbatches: 2, ranks: 2, tp: 2, steps: 2, optimizer: 'adamw', lr: 0.01, evalEvery: 0 };
    validateRunConfig(cfg);
    const report = await runPipeline(cfg, { hostFactory: cpuHosts(), recvTimeoutMs: 10000 });
    const tp = report.tensorParallel;
    if (!tp) throw new Error('no tp figures');
    for (const s of tp.perStage) {
      expect(s.perLayer).toBe(2);
      expect(s.perMicrobatch).toEqual({ F: s.splitLayers, B: s.splitLayers });
    }
    // Sizes sent: the all-gather's rows·8/2 columns, the all-reduces of dx (rows · in), float64; rows = 16 / 2.
    const rows = cfg.batchSize / cfg.microbatches;
    const sizes = tp.points.map((p) => p.bytes);
    expect(sizes).toContain(rows * (cfg.hidden / 2) * 8);
    expect(sizes).toContain(rows * cfg.hidden * 8);
    expect(tp.bytesPerElement).toBe(8);
  }, 60_000);
});

describe('the fit of one tp exchange', () => {
  it('recovers α and β from exact times of sizes 2× apart; one size is all α', () => {
    const truth = (b: number) => 0.2 + b / 5000;
    const pts = [1024, 4096, 65536].map((bytes) => ({ bytes, ms: truth(bytes), n: 3 }));
    const f = tpFit(pts);
    expect(f.latencyMs).toBeCloseTo(0.2, 9);
    expect(f.bytesPerMs).toBeCloseTo(5000, 6);
    expect(f.points).toBe(9);
    expect(tpFit([{ bytes: 1024, ms: 0.3, n: 5 }, { bytes: 1500, ms: 0.5, n: 5 }])).toEqual({ latencyMs: 0.4, bytesPerMs: Infinity, sizes: 2, points: 10 });
  });
});
