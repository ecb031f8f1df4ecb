/**
 * The Compare preset "dp × pp at 8 workers": the same model, the same global
 * batch and the same micro-batch size on 8 workers as dp × ranks = 1 × 8,
 * 2 × 4, 4 × 2 and 8 × 1, each measured on the workers and simulated with the
 * measured op times and the measured all-reduce (the run's report); a row per shape (bubble,
 * all-reduce share, step time, memory per worker) and a sentence that reads
 * the trade-off off the measured numbers.
 */
import { defaultRunConfig, validateRunConfig, withDataset, type RunConfig } from '../../config/run-config.ts';
import type { RunReport } from '../../runtime/report/index.ts';
import { stageCut } from '../../config/run-limits.ts';
import { layerParamCount } from '../../nn/model-spec.ts';

/** Workers every shape of the preset uses. */
export const DP_PP_WORKERS = 8;
/** The global batch and the rows of one micro-batch, the same for every shape. */
export const DP_PP_BATCH = 32;
export const DP_PP_MICROBATCH_ROWS = 2;

export interface DpPpShape {
  /** `dp×ranks`, e.g. `2×4`. */
  key: string;
  dp: number;
  ranks: number;
  config: RunConfig;
}

/**
 * The four configurations: the character MLP on the names, 8 blocks (one per
 * stage at 1 × 8), batch 32 in micro-batches of 2 rows, so each replica runs
 * 32 / dp / 2 micro-batches (16, 8, 4, 2). Each passes validateRunConfig.
 */
export function dpPpShapes(steps = 2): DpPpShape[] {
  const base: RunConfig = {
    ...withDataset(defaultRunConfig(), 'names'),
    layers: DP_PP_WORKERS - 1,
    hidden: 32,
    batchSize: DP_PP_BATCH,
    schedule: '1f1b',
    virtual: 1,
    partition: 'flops',
    steps,
    evalEvery: 0,
    zero: 0,
    overlap: true,
  };
  const out: DpPpShape[] = [];
  for (let dp = 1; dp <= DP_PP_WORKERS; dp *= 2) {
    const ranks = DP_PP_WORKERS / dp;
    const config: RunConfig = { ...base, dp, ranks, microbatches: DP_PP_BATCH / dp / DP_PP_MICROBATCH_ROWS };
    validateRunConfig(config);
    out.push({ key: `${dp}×${ranks}`, dp, ranks, config });
  }
  return out;
}

/** Bytes of each stage's weights (float32), as the run cuts the model (its gradients: what the all-reduce moves). */
export function stageWeightBytes(cfg: RunConfig): number[] {
  const { spec, stageBlocks } = stageCut(cfg);
  return stageBlocks.map(([a, b]) => 4 * spec.blocks.slice(a, b).reduce((s, blk) => s + blk.layers.reduce((t, l) => t + layerParamCount(l), 0), 0));
}

/**
 * The most any worker held: its stage's weights + its optimizer state (as the
 * run reports it) + the most activations its stage stashed. Worker w holds
 * stage w mod ranks (replica-major, one stage per rank here).
 */
export function memoryPerWorker(report: RunReport): number {
  const weights = stageWeightBytes(report.config);
  const ranks = report.config.ranks;
  let most = 0;
  for (let w = 0; w < report.config.dp * ranks; w++) {
    const rank = w % ranks;
    const stages = report.schedule.stageToRank.flatMap((r, s) => (r === rank ? [s] : []));
    const held = stages.reduce((s, st) => s + weights[st] + (report.peakStashBytes[st] ?? 0), 0) + (report.optimizerBytesPerWorker[w] ?? 0);
    most = Math.max(most, held);
  }
  return most;
}

/** One shape's figures: measured from its run, or simulated. Shares are fractions; times ms. */
export interface DpPpFigures {
  bubble: number;
  allReduceShare: number;
  stepMs: number;
}

export function measuredFigures(report: RunReport): DpPpFigures {
  return {
    bubble: report.bubble.measured,
    allReduceShare: report.allReduce?.share ?? 0,
    stepMs: report.allReduce?.stepMs ?? report.makespanMs.measured,
  };
}

/**
 * The simulator's view of the same run, as the report gives it: its schedule
 * played with the run's own op times and, with dp > 1, each stage's gradient
 * bytes on the α–β ring fitted to the run's collectives (report.ts).
 */
export function simulatedFigures(report: RunReport): DpPpFigures {
  const sim = report.allReduce?.simulated;
  return { bubble: report.bubble.simulated, allReduceShare: sim?.share ?? 0, stepMs: sim?.stepMs ?? report.makespanMs.simulated };
}

export interface DpPpRow {
  key: string;
  dp: number;
  ranks: number;
  measured: DpPpFigures;
  memoryBytes: number;
}

function pctText(x: number): string {
  return `${(100 * x).toFixed(1)}%`;
}

/**
 * What the table shows, from the measured rows (in the preset's order, 1 × 8
 * first): how the bubble and the all-reduce's share moved from the deepest
 * pipeline to the widest replication, and which shape stepped fastest. Null
 * until at least the first and the last shapes are measured.
 */
export function dpPpSentence(rows: readonly DpPpRow[]): string | null {
  if (rows.length < 2) return null;
  const first = rows[0];
  const last = rows[rows.length - 1];
  const fastest = rows.reduce((a, b) => (b.measured.stepMs < a.measured.stepMs ? b : a));
  const workers = first.dp * first.ranks;
  const verb = last.measured.bubble <= first.measured.bubble ? 'cut' : 'raised';
  const ar = last.measured.allReduceShare >= first.measured.allReduceShare ? 'grew' : 'fell';
  return (
    `At ${workers} workers, going from ${first.key} to ${last.key} ${verb} the bubble from ${pctText(first.measured.bubble)} to ${pctText(last.measured.bubble)} ` +
    `while the all-reduce ${ar} to ${pctText(last.measured.allReduceShare)} of the step; the fastest was ${fastest.key} at ${fastest.measured.stepMs.toFixed(1)} ms per step.`
  );
}
