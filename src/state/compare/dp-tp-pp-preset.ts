/**
 * The Compare preset grown to the third axis, "dp × tp × pp at 8 workers": the
 * Train view's model, global batch and micro-batch size on 8 workers as every
 * replicas × tensor-parallel × pipeline shape that fits it (tp ∈ {1, 2, 4}
 * dividing the GPT's heads or the MLP's hidden width, pp at most the model's
 * blocks, dp dividing the batch into whole micro-batches), each measured on the
 * workers and simulated with its own op times, the α–β ring fitted to its
 * all-reduce and the α–β line fitted to its tp collectives (the run's report);
 * and a sentence that reads the trade-off off the measured numbers. When no
 * shape with tp > 1 fits the model, the preset stays dp × pp (dp-pp-preset.ts).
 */
import { validateRunConfig, type RunConfig } from '../../config/run-config.ts';
import { stageCut } from '../../config/run-limits.ts';
import type { RunReport } from '../../runtime/report/index.ts';
import { meshOfRun, workerCount } from '../../schedule/mesh.ts';
import { isCompute } from '../../schedule/timeline.ts';
import type { Op } from '../../schedule/types.ts';
import { tpFit } from '../../runtime/report/index.ts';
import { DP_PP_WORKERS, measuredFigures, memoryPerWorker, simulatedFigures, type DpPpFigures } from './dp-pp-preset.ts';

/** The tp sizes the preset tries (the runtime's equality tests cover 2 and 4). */
export const PRESET_TPS = [1, 2, 4] as const;
/** Micro-batches per replica at dp = 1; dp replicas run MESH_MICROBATCHES / dp each (the same micro-batch rows). */
export const MESH_MICROBATCHES = 16;

export interface MeshPresetShape {
  /** `dp×tp×pp`, e.g. `2×2×2`. */
  key: string;
  dp: number;
  tp: number;
  ranks: number;
  config: RunConfig;
}

export interface MeshPresetShapes {
  shapes: MeshPresetShape[];
  /** Shapes of 8 workers left out, each with the rule it broke. */
  skipped: string[];
  /** Rows of one micro-batch, the same in every shape. */
  microbatchRows: number;
}

/**
 * The shapes of 8 workers that fit `train`'s model, dp-major then tp: every dp × tp × pp = 8 with tp in
 * PRESET_TPS, each validated as a run (validateRunConfig: tp divides the heads / hidden width, at most 16
 * workers) and with pp at most the model's blocks; null when none with tp > 1 fits, or the model is not valid (dp × pp stays).
 * The Train view's sequence parallelism is kept on the shapes with tp > 1.
 */
export function dpTpPpShapes(train: RunConfig, steps = 2): MeshPresetShapes | null {
  // Sequence parallelism, where the Train view has it, goes to the shapes with tp ≥ 2 only (it splits a tp group's rows).
  const { fault: _f, cut: _c, sequenceParallel, ...rest } = train;
  let blocks: number;
  try {
    blocks = stageCut({ ...rest, ranks: 1, virtual: 1, partition: 'flops' }).spec.blocks.length;
  } catch {
    return null; // a model the Train view refuses itself: the preset stays dp × pp
  }
  const rows = Math.max(1, Math.floor(train.batchSize / MESH_MICROBATCHES));
  const base: RunConfig = { ...rest, schedule: '1f1b', virtual: 1, partition: 'flops', memCap: 0, steps, evalEvery: 0, zero: 0, overlap: true, recompute: false, checkpointEvery: 0 };
  const shapes: MeshPresetShape[] = [];
  const skipped: string[] = [];
  for (let dp = 1; dp <= DP_PP_WORKERS; dp *= 2) {
    for (const tp of PRESET_TPS) {
      const ranks = DP_PP_WORKERS / (dp * tp);
      if (!Number.isInteger(ranks) || ranks < 1) continue;
      const key = `${dp}×${tp}×${ranks}`;
      if (ranks > blocks) {
        skipped.push(`${key}: pp = ${ranks} is more than the model's ${blocks} blocks`);
        continue;
      }
      if (train.batchSize % (dp * rows) !== 0) {
        skipped.push(`${key}: dp = ${dp} does not divide the batch of ${train.batchSize} into micro-batches of ${rows} rows`);
        continue;
      }
      const config: RunConfig = { ...base, dp, tp, ranks, microbatches: train.batchSize / dp / rows, ...(sequenceParallel && tp > 1 ? { sequenceParallel } : {}) };
      try {
        validateRunConfig(config);
      } catch (e) {
        skipped.push(`${key}: ${e instanceof Error ? e.message : String(e)}`);
        continue;
      }
      shapes.push({ key, dp, tp, ranks, config });
    }
  }
  return shapes.some((s) => s.tp > 1) ? { shapes, skipped, microbatchRows: rows } : null;
}

/** One shape's figures: DpPpFigures and the tp collectives' share of the step (the exchanges themselves; measured: the least-waiting member's time). */
export interface MeshFigures extends DpPpFigures {
  tpShare: number;
  /** Measured: one worker's compute in a step, ms (workerComputeMs over the workers). */
  computeMs?: number;
}

export function meshMeasured(report: RunReport): MeshFigures {
  return { ...measuredFigures(report), tpShare: report.tensorParallel?.ownShare ?? 0, computeMs: workerComputeMs(report) / workerCount(meshOfRun(report.config)) };
}

/**
 * The workers' compute in a step, summed over them (worker-ms): as many actions of each stage and op as a step runs
 * (the last step's timeline counts them), each at its mean measured time, less the time of the tp collectives inside
 * them (their waits included): what the device took for the kernels.
 */
export function workerComputeMs(report: RunReport): number {
  const count = new Map<string, { stage: number; op: Op; n: number }>();
  for (const iv of report.timeline.intervals) {
    if (!isCompute(iv)) continue;
    const k = `${iv.stage}${iv.op}`;
    const c = count.get(k) ?? { stage: iv.stage, op: iv.op as Op, n: 0 };
    c.n++;
    count.set(k, c);
  }
  let ms = 0;
  for (const { stage, op, n } of count.values()) ms += n * (report.meanOpMs[stage]?.[op] ?? 0);
  const tp = report.tensorParallel;
  return ms - (tp ? tp.perWorker.ms * workerCount(meshOfRun(report.config)) : 0);
}

export function meshSimulated(report: RunReport): MeshFigures {
  return { ...simulatedFigures(report), tpShare: report.tensorParallel?.simulated?.share ?? 0 };
}

/** The most any worker held: its weights, optimizer state and stash as the run reports them (a tp worker its slice), else dp-pp-preset's count. */
export function meshMemoryPerWorker(report: RunReport): number {
  const held = report.heldBytesPerWorker ?? [];
  if ((report.config.tp ?? 1) > 1 && held.length > 0) return Math.max(...held.map((w) => w.weights + w.optimizer + w.stash));
  return memoryPerWorker(report);
}

export interface MeshRow {
  key: string;
  dp: number;
  tp: number;
  ranks: number;
  measured: MeshFigures;
  /** The tp figures of the run (absent with tp = 1). */
  tpFigures?: RunReport['tensorParallel'];
}

function pctText(x: number): string {
  return `${(100 * x).toFixed(1)}%`;
}

function bytesText(b: number): string {
  return b >= 1024 ? `${(b / 1024).toFixed(1)} KiB` : `${Math.round(b)} B`;
}

/**
 * What the table shows, from the measured rows: the fastest shape and the fastest with tp (how much slower or
 * faster); what one tp collective moved and took, and, from the α–β line fitted to every tp shape's collectives
 * together (their sizes differ with t), how much of that time is the fixed cost α (latency-bound when it is
 * most of it); and the share of the step the tp shapes spent in their collectives against the widest dp
 * shape's all-reduce. Null until at least two shapes, one with tp, are measured.
 */
export function meshSentence(rows: readonly MeshRow[]): string | null {
  const withTp = rows.filter((r) => r.tp > 1 && r.tpFigures);
  if (rows.length < 2 || withTp.length === 0) return null;
  const fastest = rows.reduce((a, b) => (b.measured.stepMs < a.measured.stepMs ? b : a));
  const fastestTp = withTp.reduce((a, b) => (b.measured.stepMs < a.measured.stepMs ? b : a));
  const ratio = fastestTp.measured.stepMs / fastest.measured.stepMs;
  const first =
    fastest === fastestTp
      ? `At ${DP_PP_WORKERS} workers the fastest shape was ${fastest.key} (dp×tp×pp) at ${fastest.measured.stepMs.toFixed(1)} ms per step, with tp.`
      : `At ${DP_PP_WORKERS} workers the fastest shape was ${fastest.key} (dp×tp×pp) at ${fastest.measured.stepMs.toFixed(1)} ms per step; the fastest with tp, ${fastestTp.key}, took ${ratio.toFixed(2)}× as long.`;
  // Every tp shape's size points, pooled: t = α + bytes sent / β.
  const points = withTp.flatMap((r) => r.tpFigures?.points ?? []);
  const fit = tpFit(points);
  const sizes = points.map((p) => p.bytes);
  const timed = points.reduce((a, p) => a + p.ms * p.n, 0) / Math.max(1, points.reduce((a, p) => a + p.n, 0));
  const alphaShare = timed > 0 ? Math.min(1, fit.latencyMs / timed) : 0;
  const bound = alphaShare >= 0.5 ? 'latency-bound: tp needs fast links, not wide ones' : 'bandwidth-bound';
  const range = Math.min(...sizes) === Math.max(...sizes) ? bytesText(sizes[0]) : `${bytesText(Math.min(...sizes))} to ${bytesText(Math.max(...sizes))}`;
  const betaText = Number.isFinite(fit.bytesPerMs)
    ? `, β = ${(fit.bytesPerMs / 1000).toFixed(0)} MB/s`
    : fit.sizes > 1 && Math.max(...sizes) >= 2 * Math.min(...sizes)
      ? ' and no bandwidth term (the time did not grow with the size)'
      : ' (sizes too close to separate β: all of it read as α)';
  const second = `Each tp collective sent ${range} and took ${timed.toFixed(3)} ms on average; the α–β line over every tp shape's collectives gives α = ${fit.latencyMs.toFixed(3)} ms${betaText}, so ${pctText(alphaShare)} of a collective's time is its fixed cost: ${bound}.`;
  const mostTp = withTp.reduce((a, b) => (b.measured.tpShare > a.measured.tpShare ? b : a));
  const widest = rows.filter((r) => r.tp === 1).reduce<MeshRow | null>((a, b) => (!a || b.dp > a.dp ? b : a), null);
  const third = `${mostTp.key} spent ${pctText(mostTp.measured.tpShare)} of its step in tp exchanges${widest && widest.dp > 1 ? `, ${widest.key} ${pctText(widest.measured.allReduceShare)} in its all-reduce` : ''}.`;
  // Where the rest of the fastest tp shape's step went, beside the fastest shape's: each worker's compute.
  const [cTp, cFast] = [fastestTp.measured.computeMs, fastest.measured.computeMs];
  const fourth =
    fastest !== fastestTp && cTp !== undefined && cFast !== undefined && cFast > 0
      ? ` Per worker, ${fastestTp.key} computed for ${cTp.toFixed(1)} ms of its ${fastestTp.measured.stepMs.toFixed(1)} ms step and ${fastest.key} for ${cFast.toFixed(1)} of ${fastest.measured.stepMs.toFixed(1)}, the same examples through the same layers (a tp worker repeats the parts tp does not split)${
          cTp > 1.1 * cFast
            ? `: ${(cTp / cFast).toFixed(2)}× the compute, for the tab's workers share one device, where a layer split over tp workers runs no faster, and each tp collective first waits for the device to finish the kernels before it.`
            : '.'
        }`
      : '';
  return `${first} ${second} ${third}${fourth}`;
}
