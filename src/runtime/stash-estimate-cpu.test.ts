/**
 * The memory guard's estimate of activations (config/run-limits.ts rankMemory: what each layer keeps for its
 * backward, model-spec.ts layerActivationsPerRow, times the micro-batches in flight at the peak of the run's own
 * order) against the stash the stages measure (report.peakStashBytes), on the float64 CPU backend with real
 * workers' code: equal to the byte for the GPT and the MLPs under 1F1B, GPipe and ZB-H1 (the backward split, what
 * W reads kept from I to W: layerKeptAfterInputPerRow), with and without selective and full recomputation and
 * with tp = 2 (and sequence parallelism); and each stage's own peak where a rank holds several (interleaved, DualPipe) or runs a stream.
 */
import { describe, expect, it } from 'vitest';
import { CpuBackend } from '../nn/cpu-backend.ts';
import { runPipeline } from './coordinator.ts';
import { InProcessRankHost } from './executor/in-process-host.ts';
import { defaultRunConfig, withDataset, type RunConfig } from '../config/run-config.ts';
import { rankMemory, stageStashPeaks } from '../config/run-limits.ts';

const hosts = (r: number) => new InProcessRankHost(r, new CpuBackend());
const gpt = (over: Partial<RunConfig>): RunConfig => ({ ...defaultRunConfig(), dataset: 'names', model: 'gpt', layers: 3, heads: 2, width: 8, blockSize: 16, batchSize: 16, microbatches: 8, steps: 1, evalEvery: 0, ranks: 4, schedule: '1f1b', ...over });
const spiral = (over: Partial<RunConfig>): RunConfig => ({ ...defaultRunConfig(), steps: 1, evalEvery: 0, ...over });
const charMlp = (over: Partial<RunConfig>): RunConfig => ({ ...withDataset(defaultRunConfig(), 'names'), steps: 1, evalEvery: 0, batchSize: 32, ...over });

const measuredByRank = (peak: Readonly<Record<number, number>>, ranks: number) => Array.from({ length: ranks }, (_, r) => peak[r]);

const EXACT: [string, RunConfig][] = [
  ['GPT, 1F1B', gpt({})],
  ['GPT, 1F1B, selective recomputation', gpt({ recomputeAttention: true })],
  ['GPT, 1F1B, full recomputation', gpt({ recompute: true })],
  ['GPT, GPipe, selective recomputation', gpt({ schedule: 'gpipe', recomputeAttention: true })],
  ['GPT, 1F1B, tp 2 (one worker’s share)', gpt({ ranks: 2, tp: 2 })],
  ['spiral MLP, 1F1B', spiral({})],
  ['spiral MLP, GPipe, full recomputation', spiral({ schedule: 'gpipe', recompute: true })],
  ['character MLP, 1F1B', charMlp({})],
  // The backward split: between I and W a stage keeps its weight layers' saved tensors and output gradients.
  ['GPT, ZB-H1', gpt({ schedule: 'zb-h1' })],
  ['GPT, ZB-H1, selective recomputation, tp 2', gpt({ schedule: 'zb-h1', ranks: 2, tp: 2, recomputeAttention: true })],
  ['spiral MLP, ZB-H1', spiral({ schedule: 'zb-h1' })],
  // Sequence parallelism: the LayerNorms', residuals' and stage inputs' rows 1/t; between I and W the gathered whole rows.
  ['GPT, 1F1B, tp 2, sequence parallelism', gpt({ ranks: 2, tp: 2, sequenceParallel: true })],
  ['GPT, ZB-H1, tp 2, sequence parallelism, selective recomputation', gpt({ schedule: 'zb-h1', ranks: 2, tp: 2, sequenceParallel: true, recomputeAttention: true })],
  ['GPT, GPipe, tp 2, sequence parallelism, full recomputation', gpt({ schedule: 'gpipe', ranks: 2, tp: 2, sequenceParallel: true, recompute: true })],
  ['character MLP, ZB-H1, full recomputation', charMlp({ schedule: 'zb-h1', recompute: true })],
];

/** Schedules whose ranks hold several stages (interleaved chunks, DualPipe's two copies) or run a stream (PipeDream, 2BW). */
const PER_STAGE: [string, RunConfig][] = [
  ['GPT, interleaved 1F1B, v 2', gpt({ layers: 7, ranks: 2, schedule: 'interleaved-1f1b', virtual: 2 })],
  ['GPT, DualPipe', gpt({ layers: 7, ranks: 2, schedule: 'dualpipe' })],
  ['GPT, PipeDream', gpt({ ranks: 2, schedule: 'pipedream', steps: 2 })],
  ['GPT, PipeDream-2BW', gpt({ ranks: 2, schedule: 'pipedream-2bw', steps: 2 })],
];

describe('the memory guard’s activations equal the stash the stages measure', () => {
  for (const [title, cfg] of PER_STAGE) {
    it(`${title}: each stage’s own peak`, async () => {
      const r = await runPipeline(cfg, { hostFactory: hosts, recvTimeoutMs: 10000 });
      const e = stageStashPeaks(cfg)!;
      expect(e.stageToRank).toEqual(r.schedule.stageToRank);
      expect(e.peaks.map((_, s) => r.peakStashBytes[s])).toEqual(e.peaks);
    });
  }

  for (const [title, cfg] of EXACT) {
    it(title, async () => {
      const r = await runPipeline(cfg, { hostFactory: hosts, recvTimeoutMs: 10000 });
      expect(measuredByRank(r.peakStashBytes, cfg.ranks)).toEqual(rankMemory(cfg).map((x) => x.stash));
    });
  }

  // auto's order is planned from the model; the guard bounds it by its cap: what the stages measure stays within it.
  const AUTO: [string, RunConfig][] = [
    ['GPT, auto, 1F1B’s memory', gpt({ schedule: 'auto', microbatches: 8 })],
    ['GPT, auto, memCap 2', gpt({ schedule: 'auto', microbatches: 8, memCap: 2 })],
    ['GPT, auto, memCap 6, full recomputation', gpt({ schedule: 'auto', microbatches: 8, memCap: 6, recompute: true })],
    ['spiral MLP, auto, memCap 8 of 16', spiral({ schedule: 'auto', microbatches: 16, memCap: 8 })],
  ];
  for (const [title, cfg] of AUTO) {
    it(`${title}: the stash measured is within the bound, and the bound is the cap's`, async () => {
      const r = await runPipeline(cfg, { hostFactory: hosts, recvTimeoutMs: 10000 });
      const est = rankMemory(cfg);
      const measured = measuredByRank(r.peakStashBytes, cfg.ranks);
      measured.forEach((bytes, rank) => expect(bytes).toBeLessThanOrEqual(est[rank].stash));
      // The bound is the cap's micro-batches, not all m of them.
      const held = Math.min(cfg.microbatches, cfg.memCap || cfg.ranks);
      expect(Math.max(...measured)).toBeGreaterThan(0);
      expect(rankMemory({ ...cfg, memCap: cfg.microbatches })[0].stash * held).toBeCloseTo(est[0].stash * cfg.microbatches, 6);
    });
  }
});
