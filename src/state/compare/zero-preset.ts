/**
 * The Compare preset "ZeRO 0 → 3 at dp = 4": the same model, batch and
 * pipeline (4 replicas × 2 ranks, 1F1B) run with each sharding — off, the
 * optimizer state (ZeRO-1), + gradients (ZeRO-2), + weights (ZeRO-3, gathered
 * once a step or again for every action) — each measured on the workers: what
 * each worker held by kind beside the ZeRO paper's formula, the bytes its ring
 * moved per step and the step time; the losses equal (the same numbers).
 */
import { defaultRunConfig, validateRunConfig, withDataset, type ReshardMode, type RunConfig, type ZeroStage } from '../../config/run-config.ts';
import type { RunReport } from '../../runtime/report/index.ts';

export const ZERO_PRESET_DP = 4;
export const ZERO_PRESET_RANKS = 2;

export interface ZeroShape {
  /** e.g. `ZeRO-3 (every action)`. */
  key: string;
  zero: ZeroStage;
  reshard: ReshardMode;
  config: RunConfig;
}

/** The five settings on the character MLP (names), batch 32 in 4 micro-batches per replica; each passes validateRunConfig. */
export function zeroShapes(steps = 2): ZeroShape[] {
  const base: RunConfig = {
    ...withDataset(defaultRunConfig(), 'names'),
    layers: 5,
    hidden: 64,
    batchSize: 32,
    microbatches: 4,
    schedule: '1f1b',
    virtual: 1,
    ranks: ZERO_PRESET_RANKS,
    dp: ZERO_PRESET_DP,
    steps,
    evalEvery: 0,
    overlap: true,
    prefetch: true,
  };
  const settings: { zero: ZeroStage; reshard: ReshardMode; key: string }[] = [
    { zero: 0, reshard: 'step', key: 'off' },
    { zero: 1, reshard: 'step', key: 'ZeRO-1' },
    { zero: 2, reshard: 'step', key: 'ZeRO-2' },
    { zero: 3, reshard: 'step', key: 'ZeRO-3 (step)' },
    { zero: 3, reshard: 'microbatch', key: 'ZeRO-3 (every action)' },
  ];
  return settings.map(({ zero, reshard, key }) => {
    const config: RunConfig = { ...base, zero, reshard };
    validateRunConfig(config);
    return { key, zero, reshard, config };
  });
}

/** One setting's measured figures: the most any worker held by kind (bytes), its formula, ring bytes per step per worker, step ms, final loss. */
export interface ZeroFigures {
  weights: number;
  grads: number;
  optimizer: number;
  stash: number;
  transient: number;
  /** The ZeRO paper's model states (weights + gradients + optimizer) for the worker holding the most. */
  formula: number;
  /** Bytes one worker sent over its ring in a step (every reduce-scatter and all-gather exchange; report-collectives.ts). */
  ringBytes: number;
  stepMs: number;
  loss: number;
}

export function zeroFigures(report: RunReport): ZeroFigures {
  const held = report.heldBytesPerWorker ?? [];
  const most = (k: 'weights' | 'grads' | 'optimizer' | 'stash' | 'transient') => Math.max(0, ...held.map((w) => w[k]));
  const formula = Math.max(0, ...held.map((w) => w.formula.weights + w.formula.grads + w.formula.optimizer));
  return {
    weights: most('weights'),
    grads: most('grads'),
    optimizer: most('optimizer'),
    stash: most('stash'),
    transient: most('transient'),
    formula,
    ringBytes: report.allReduce?.ringBytesPerWorker ?? 0,
    stepMs: report.allReduce?.stepMs ?? report.makespanMs.measured,
    loss: report.losses[report.losses.length - 1] ?? NaN,
  };
}

/** What the measured rows say (in the preset's order, off first): how far memory per worker fell, what it cost in ring bytes, and whether the losses agreed. Null before the first and last are measured. */
export function zeroSentence(rows: readonly { key: string; f: ZeroFigures }[]): string | null {
  if (rows.length < 2) return null;
  const first = rows[0];
  const last = rows[rows.length - 1];
  const atRest = (f: ZeroFigures) => f.weights + f.grads + f.optimizer;
  const spread = Math.max(...rows.map((r) => Math.abs(r.f.loss - first.f.loss) / Math.abs(first.f.loss)));
  const kib = (b: number) => `${(b / 1024).toFixed(1)} KiB`;
  return (
    `From ${first.key} to ${last.key}, each worker's weights, gradients and optimizer state at rest fell from ${kib(atRest(first.f))} to ${kib(atRest(last.f))} ` +
    `(${(atRest(first.f) / Math.max(1, atRest(last.f))).toFixed(1)}×), while its ring moved ${kib(first.f.ringBytes)} → ${kib(last.f.ringBytes)} a step; ` +
    `the final losses agree to ${spread.toExponential(1)} (relative): the same training, sharded.`
  );
}
