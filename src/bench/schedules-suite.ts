/**
 * The schedules suite: real pipeline runs (one Worker and one WebGPU device per
 * rank) over a grid of schedules, p and m, each beside the simulator fed with
 * the run's measured per-op times and beside the closed form.
 */
import { runInBrowser } from '../runtime/browser-run.ts';
import { defaultRunConfig, type RunConfig } from '../runtime/run-config.ts';
import { namesModelSwitch } from '../nn/train-config.ts';
import type { SharedDevicePrediction } from './shared-device-rows.ts';
import { scheduleKind } from '../schedule/registry.ts';

export interface ScheduleBenchCase {
  schedule: RunConfig['schedule'];
  ranks: number;
  microbatches: number;
  virtual?: number;
  dataset?: RunConfig['dataset'];
  /** 'gpt': the page's default GPT (width, heads, block size) with p·v transformer blocks on the names as sequences. */
  model?: 'gpt';
}

/** Sequences per micro-batch in the GPT grid (× the block size in token rows). */
export const GPT_BENCH_MICROBATCH = 8;

export interface ScheduleBenchRow {
  schedule: string;
  dataset: string;
  p: number;
  m: number;
  v: number;
  steps: number;
  makespanMeasuredMs: number;
  makespanSimulatedMs: number;
  /** |simulated − measured| / measured. */
  simulationError: number;
  bubbleMeasured: number;
  bubbleSimulated: number;
  bubbleClosedForm: number | null;
  peakStashBytes: number[];
  /** Communication (readback + transfer + upload) per boundary and micro-batch, ms. */
  commMsPerCrossing: number;
  /** Communication time as a share of compute time. */
  commShare: number;
  samplesPerSecond: number;
  meanOpMs: Record<string, Record<string, number>>;
  /** The model the row ran ('char-mlp', 'mlp', 'gpt'). */
  model: string;
  /** Issue 12's shared-device prediction beside today's, added by the driver once the grid is measured (shared-device-rows.ts). */
  prediction?: SharedDevicePrediction;
}

/**
 * The names model cut into p·v balanced stages: p·v equal hidden blocks (the
 * first block's Linear takes context × embedDim = 256 inputs, like the others),
 * and the small head rides with the last one (the partitioner balances FLOPs).
 * With model 'gpt': the page's default GPT with p·v transformer blocks, the
 * head riding with the last, GPT_BENCH_MICROBATCH sequences per micro-batch.
 */
export function benchConfig(c: ScheduleBenchCase, steps: number): RunConfig {
  const base = defaultRunConfig();
  const v = c.virtual ?? scheduleKind(c.schedule).defaultVirtual;
  const names = (c.dataset ?? 'names') === 'names';
  const model: Partial<RunConfig> =
    c.model === 'gpt'
      ? { ...namesModelSwitch('gpt', c.ranks * v), dataset: 'names', batchSize: GPT_BENCH_MICROBATCH * c.microbatches }
      : {
          dataset: names ? 'names' : c.dataset ?? 'spiral',
          model: names ? 'char-mlp' : 'mlp',
          hidden: names ? 256 : 128,
          context: 4,
          embedDim: 64,
          activation: names ? 'tanh' : 'relu',
          batchSize: 64 * c.microbatches,
        };
  return {
    ...base,
    ...model,
    layers: c.ranks * v,
    microbatches: c.microbatches,
    ranks: c.ranks,
    virtual: v,
    schedule: c.schedule,
    steps,
    evalEvery: 0,
    lrSchedule: 'constant',
  };
}

export async function benchSchedule(c: ScheduleBenchCase, steps: number): Promise<ScheduleBenchRow> {
  const cfg = benchConfig(c, steps);
  const r = await runInBrowser(cfg, { recvTimeoutMs: 120_000, stepTimeoutMs: 300_000 });
  const stages = cfg.ranks * cfg.virtual;
  return {
    schedule: cfg.schedule,
    dataset: cfg.dataset,
    p: cfg.ranks,
    m: cfg.microbatches,
    v: cfg.virtual,
    steps,
    makespanMeasuredMs: r.makespanMs.measured,
    makespanSimulatedMs: r.makespanMs.simulated,
    simulationError: Math.abs(r.makespanMs.simulated - r.makespanMs.measured) / r.makespanMs.measured,
    bubbleMeasured: r.bubble.measured,
    bubbleSimulated: r.bubble.simulated,
    bubbleClosedForm: r.bubble.closedForm,
    peakStashBytes: Array.from({ length: stages }, (_, s) => r.peakStashBytes[s] ?? 0),
    commMsPerCrossing: r.commMsPerCrossing,
    commShare: r.commShare,
    samplesPerSecond: r.samplesPerSecond,
    model: cfg.model,
    meanOpMs: Object.fromEntries(Object.entries(r.meanOpMs).map(([s, ops]) => [s, ops as Record<string, number>])),
  };
}
