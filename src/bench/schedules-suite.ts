/**
 * The schedules suite: real pipeline runs (one Worker and one WebGPU device per
 * rank) over a grid of schedules, p and m, each beside the simulator fed with
 * the run's measured per-op times and beside the closed form.
 */
import { runInBrowser } from '../runtime/browser-run.ts';
import { defaultRunConfig, type RunConfig } from '../config/run-config.ts';
import { namesModelSwitch } from '../nn/train-config.ts';
import type { SharedDevicePrediction } from './shared-device-rows.ts';
import { scheduleKind, UPDATE_WINDOWS } from '../schedule/registry.ts';
import { computeOnly, timelineStats } from '../schedule/timeline.ts';
import type { AllReduceFigures, RunReport } from '../runtime/report/index.ts';
import type { TpFigures } from '../runtime/report/index.ts';

export interface ScheduleBenchCase {
  schedule: RunConfig['schedule'];
  ranks: number;
  microbatches: number;
  virtual?: number;
  dataset?: RunConfig['dataset'];
  /** 'gpt': the page's default GPT (width, heads, block size) with p·v transformer blocks on the names as sequences. */
  model?: 'gpt';
  /** Blocks of the model (default p·v, one per stage); the data-parallel grid fixes it so every mesh trains the same model. */
  layers?: number;
  /** Data-parallel replicas (default 1): each takes m micro-batches of the same size, so the global batch is dp × m of them. */
  dp?: number;
  /** Tensor-parallel workers per stage (default 1): each stage's layers split over tp workers. */
  tp?: number;
  /** The GPT with tp ≥ 2: its token rows split over each stage's tp workers too (sequence parallelism). */
  sequenceParallel?: boolean;
  zero?: RunConfig['zero'];
  reshard?: RunConfig['reshard'];
  overlap?: boolean;
  /** Full recomputation (each stage keeps only its input per micro-batch). */
  recompute?: boolean;
  /** The GPT with every block's MLP as this many experts behind a top-2 router (an MoE GPT); default none. */
  experts?: number;
  /** Expert-parallel workers per stage (default 1), each holding experts / ep of them. */
  ep?: number;
}

/** An MoE row's figures: the step measured and simulated, and the all-to-alls' share of it (report-ep.ts). */
export interface MoeBenchFigures {
  experts: number;
  topK: number;
  ep: number;
  /** Step (first start to last end, collectives included), measured and simulated (the run's compute, its all-to-alls on the α–β line fitted to them), ms. */
  stepMs: number;
  stepSimulatedMs: number;
  /** Simulated with each forward and backward pair costing max(compute, all-to-alls): DualPipe's overlap on a GPU (the tab's workers run one action at a time), ms. */
  stepOverlappedSimulatedMs: number;
  /** A worker's time in ep-all-to-all intervals over the step: measured (waits included), the rounds' own time, simulated. */
  a2aShare: number;
  a2aOwnShare: number;
  a2aShareSimulated: number;
  /** All-to-alls per worker per step, and the run's α–β fit of one round. */
  a2aPerWorker: number;
  fit: { latencyMs: number; bytesPerMs: number | null; sizes: number };
}

/** A data-parallel row's figures (dp > 1): the step with its all-reduce, per stage measured, and the optimizer state per worker. */
export interface MeshBenchFigures {
  dp: number;
  zero: number;
  overlap: boolean;
  /** Step time with the collectives, measured and simulated (the run's own op times, the α–β ring fitted to its collectives), ms. */
  stepMs: number;
  stepSimulatedMs: number;
  /** All-reduce not hidden behind compute, as a share of the step: measured, simulated. */
  allReduceShare: number;
  allReduceShareSimulated: number;
  /** Each stage's collective, mean ms, its ring part, and the bytes of its gradients. */
  perStage: AllReduceFigures['perStage'];
  /** Largest optimizer state any worker held, bytes. */
  optimizerBytesPerWorker: number;
  /** ZeRO-3: free the gathered weights after the step or after every action. */
  reshard?: string;
  /** Bytes one worker sent over its ring per step, measured and by the formula (held-bytes.ts). */
  ringBytes?: number;
  ringBytesFormula?: number;
  /** Weights + gradients + optimizer state at rest of the worker holding most, measured and by the ZeRO paper's formula. */
  heldBytes?: number;
  heldFormula?: number;
}

/** Sequences per micro-batch in the GPT grid (× the block size in token rows). */
export const GPT_BENCH_MICROBATCH = 8;

export interface ScheduleBenchRow {
  schedule: string;
  /** The run split its token rows over the tp workers (sequence parallelism). */
  sequenceParallel?: true;
  dataset: string;
  p: number;
  m: number;
  v: number;
  steps: number;
  /**
   * A schedule without a flush (PipeDream-2BW) runs its steps as one stream: the row is then that window, m its
   * steps × micro-batches per step, the makespans the whole stream's (first step included), and this says how many steps.
   */
  streamSteps?: number;
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
  /** Data-parallel rows: the mesh's figures. */
  mesh?: MeshBenchFigures;
  /** MoE rows with ep > 1: the step and the all-to-alls' share, measured and simulated. */
  moe?: MoeBenchFigures;
  /** Tensor-parallel rows: the run report's tp figures (collectives per layer, bytes, own time and waits, exposed share, α–β fit, simulated). */
  tp?: TpFigures;
  /** Issue 12's shared-device prediction beside today's, added by the driver once the grid is measured (shared-device-rows.ts). */
  prediction?: SharedDevicePrediction;
  /** Each worker's measured steady-state peak (allocator-tracked bytes, by kind, its pool's free bytes then) beside the formula's (held-bytes.ts). */
  memory?: ({ worker: number; formula: number } & NonNullable<RunReport['heldBytesPerWorker'][number]['measured']>)[];
  /** The run recomputed its forwards in the backward (full recomputation). */
  recompute?: true;
  /**
   * Issue 53's yardstick, from the last step: its makespan against its busiest worker's kernel time (the sum of that
   * worker's F/B/I/W intervals, each at its GPU time), and each worker's waits on its GPU and submits that step.
   */
  busiest?: { kernelMs: number; stepMs: number; stepOverKernel: number; waits: number[]; submits: number[] };
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
  const dp = c.dp ?? 1;
  const layers = c.layers ?? c.ranks * v;
  const names = (c.dataset ?? 'names') === 'names';
  const model: Partial<RunConfig> =
    c.model === 'gpt'
      ? { ...namesModelSwitch('gpt', layers), dataset: 'names', batchSize: GPT_BENCH_MICROBATCH * c.microbatches * dp }
      : {
          dataset: names ? 'names' : c.dataset ?? 'spiral',
          model: names ? 'char-mlp' : 'mlp',
          hidden: names ? 256 : 128,
          context: 4,
          embedDim: 64,
          activation: names ? 'tanh' : 'relu',
          batchSize: 64 * c.microbatches * dp,
        };
  return {
    ...base,
    ...model,
    layers,
    microbatches: c.microbatches,
    ranks: c.ranks,
    dp,
    tp: c.tp ?? 1,
    ...(c.sequenceParallel ? { sequenceParallel: true } : {}),
    zero: c.zero ?? 0,
    reshard: c.reshard ?? 'step',
    overlap: c.overlap ?? true,
    ...(c.recompute ? { recompute: true } : {}),
    ...(c.experts ? { experts: c.experts, topK: 2, ep: c.ep ?? 1 } : {}),
    virtual: v,
    schedule: c.schedule,
    steps,
    evalEvery: 0,
    // The grid measures training alone: no checkpoint read at the run's end.
    checkpointEvery: 0,
    lrSchedule: 'constant',
  };
}

export async function benchSchedule(c: ScheduleBenchCase, steps: number): Promise<ScheduleBenchRow> {
  const cfg = benchConfig(c, steps);
  const r = await runInBrowser(cfg, { recvTimeoutMs: 120_000, stepTimeoutMs: 300_000 });
  const stages = cfg.ranks * cfg.virtual;
  const windows = UPDATE_WINDOWS[scheduleKind(cfg.schedule).update];
  return {
    schedule: cfg.schedule,
    dataset: cfg.dataset,
    p: cfg.ranks,
    m: windows.microbatches(cfg.microbatches, steps),
    v: cfg.virtual,
    steps,
    ...(windows.stream ? { streamSteps: steps } : {}),
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
    ...(cfg.recompute ? { recompute: true as const } : {}),
    busiest: busiestWorker(r),
    memory: r.heldBytesPerWorker.flatMap((h, worker) => (h.measured ? [{ worker, ...h.measured, formula: h.formula.peak }] : [])),
    ...(cfg.sequenceParallel ? { sequenceParallel: true as const } : {}),
    meanOpMs: Object.fromEntries(Object.entries(r.meanOpMs).map(([s, ops]) => [s, ops as Record<string, number>])),
    ...(r.tensorParallel ? { tp: r.tensorParallel } : {}),
    ...(r.expertParallel
      ? {
          moe: {
            experts: cfg.experts ?? 0,
            topK: cfg.topK ?? 1,
            ep: r.expertParallel.n,
            stepMs: r.expertParallel.stepMs,
            stepSimulatedMs: r.expertParallel.simulated?.stepMs ?? r.makespanMs.simulated,
            stepOverlappedSimulatedMs: r.expertParallel.simulated?.overlappedStepMs ?? r.makespanMs.simulated,
            a2aShare: r.expertParallel.share,
            a2aOwnShare: r.expertParallel.ownShare,
            a2aShareSimulated: r.expertParallel.simulated?.share ?? 0,
            a2aPerWorker: r.expertParallel.perWorker.count,
            // β = ∞ (one size) becomes null in the report's JSON.
            fit: { latencyMs: r.expertParallel.fit.latencyMs, bytesPerMs: Number.isFinite(r.expertParallel.fit.bytesPerMs) ? r.expertParallel.fit.bytesPerMs : null, sizes: r.expertParallel.fit.sizes },
          },
        }
      : {}),
    ...(c.dp !== undefined || r.allReduce
      ? {
          mesh: {
            dp: cfg.dp,
            zero: cfg.zero,
            overlap: cfg.overlap,
            stepMs: r.allReduce?.stepMs ?? r.makespanMs.measured,
            stepSimulatedMs: r.allReduce?.simulated?.stepMs ?? r.makespanMs.simulated,
            allReduceShare: r.allReduce?.share ?? 0,
            allReduceShareSimulated: r.allReduce?.simulated?.share ?? 0,
            perStage: r.allReduce?.perStage ?? [],
            optimizerBytesPerWorker: Math.max(0, ...r.optimizerBytesPerWorker),
            reshard: cfg.reshard,
            ringBytes: r.allReduce?.ringBytesPerWorker ?? 0,
            ringBytesFormula: r.allReduce?.ringBytesFormula ?? 0,
            heldBytes: Math.max(0, ...r.heldBytesPerWorker.map((w) => w.weights + w.grads + w.optimizer)),
            heldFormula: Math.max(0, ...r.heldBytesPerWorker.map((w) => w.formula.weights + w.formula.grads + w.formula.optimizer)),
          },
        }
      : {}),
  };
}

/** The last step's makespan beside its busiest worker's kernel time, and its workers' waits and submits (ScheduleBenchRow.busiest). */
export function busiestWorker(r: Pick<RunReport, 'timeline' | 'steps'>): NonNullable<ScheduleBenchRow['busiest']> {
  const stats = timelineStats(computeOnly(r.timeline));
  const kernelMs = Math.max(0, ...stats.perRank.map((u) => u.busy));
  const counts = r.steps.at(-1)?.counts ?? [];
  return {
    kernelMs,
    stepMs: stats.makespan,
    stepOverKernel: kernelMs > 0 ? stats.makespan / kernelMs : 0,
    waits: counts.map((c) => c.waits ?? 0),
    submits: counts.map((c) => c.submits ?? 0),
  };
}
