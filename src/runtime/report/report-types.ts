/**
 * What a run reports: the measured timeline beside the simulator's prediction
 * (fed with the measured per-op times) and the closed form, losses, memory
 * and throughput. Plain JSON, so it can be exported and compared.
 */
import type { MemoryKind, StepMemory } from '../../nn/memory-ledger.ts';
import type { Op, Schedule } from '../../schedule/types.ts';
import type { Timeline } from '../../schedule/timeline.ts';
import type { RankStartup, StepCounts } from '../executor/index.ts';
import type { AllReduceFigures } from './report-collectives.ts';
import type { CopySumFigures } from './report-copies.ts';
import type { StepEndFigures } from './report-step-end.ts';
import type { TpFigures } from './report-tp.ts';
import type { EpFigures } from './report-ep.ts';
import type { MoeLoadStep } from './report-moe-load.ts';
import type { RecoveryMode, RunConfig, RunScheduleName } from '../../config/run-config.ts';

export interface BubbleFigures {
  /** 1 − compute time / (ranks × makespan), from the measured timeline. */
  measured: number;
  /** The same from the simulator fed with the measured mean per-op times. */
  simulated: number;
  /** The closed form for this schedule with ideal balance, or null where none is known. */
  closedForm: number | null;
}

export interface StepSummary {
  step: number;
  loss: number;
  /** Makespan of this step's actions, ms. */
  makespanMs: number;
  bubble: number;
  /** Each worker's waits on its GPU, submits, crossings and actions in this step (rank-executor.ts StepCounts). */
  counts: (StepCounts & { rank: number })[];
}

export interface RunReport {
  config: RunConfig;
  schedule: Schedule;
  /** Block range [start, end) of each stage. */
  stageBlocks: [number, number][];
  adapter: string;
  steps: StepSummary[];
  /** Training loss per step (mean over the batch). */
  losses: number[];
  /** The last step's measured timeline, ms from that step's start. */
  timeline: Timeline;
  /** The simulator's timeline for the same schedule with the measured per-op times. */
  simulatedTimeline: Timeline;
  /** Mean over the measured steps (the first step is left out when there are several: it warms caches). */
  makespanMs: { measured: number; simulated: number };
  bubble: BubbleFigures;
  /** Mean measured time per stage and op, ms: meanOpMs[stage][op]. */
  meanOpMs: Record<number, Partial<Record<Op, number>>>;
  /** The GPU's own time per stage and op from timestamp queries, where the adapter has them. */
  meanGpuOpMs?: Record<number, Partial<Record<Op, number>>>;
  /** Largest stash each stage held, bytes, and micro-batches. */
  peakStashBytes: Record<number, number>;
  /** Communication (readback + transfer + upload) per boundary and micro-batch, as a share of compute. */
  commShare: number;
  /** Mean communication time per boundary crossing and micro-batch, ms. */
  commMsPerCrossing: number;
  samplesPerSecond: number;
  /** Time of the steps, ms (samplesPerSecond counts only this). */
  wallMs: number;
  /**
   * Starting the ranks (workers, devices, stages, warm-up), the steps, and ending
   * them, ms; firstStepMs: from the run's start to its first step's report (0 when
   * none finished); ranks: how each rank started.
   */
  /** Run start to ranks up and to the first step's report, ms; `waitMs` (included in both): waiting for workers the page was preparing. */
  phases: { startMs: number; firstStepMs: number; stepsMs: number; endMs: number; ranks: RankStartup[]; waitMs?: number };
  /** GPU buffers still alive after each rank freed its stages (must be 0). */
  leakedBuffers: number;
  /** Weights read back at the end, by parameter name (when asked for). */
  weights?: Record<string, Float32Array | Float64Array>;
  /** PipeDream asynchronous runs: weight versions stashed, and their bytes, per stage at peak. */
  weightStash?: Record<number, { versions: number; bytes: number }>;
  /** Data-parallel runs (dp > 1): each stage's collective (time, bytes), the step time with them, their exposed share. */
  allReduce?: AllReduceFigures;
  /** A schedule with model copies (DualPipe): each model stage's sum over its copies and the step with it, measured and simulated (report-copies.ts). */
  copySum?: CopySumFigures;
  /** The step on the workers' clocks and the part of it after the timeline's last interval: losses read back, the update (report-step-end.ts). */
  stepEnd?: StepEndFigures;
  /** Tensor-parallel runs (tp > 1): the tp collectives per stage (per layer, bytes, time), their exposed share, the α–β fit of one exchange (report-tp.ts). */
  tensorParallel?: TpFigures;
  /** Expert-parallel runs (ep > 1): the all-to-alls per stage, their share of the step, the α–β fit of one round, and the simulator's share with the run's times (report-ep.ts). */
  expertParallel?: EpFigures;
  /** An MoE run: per step, each MoE layer's tokens routed to each expert by each micro-batch, and dropped (report-moe-load.ts). */
  moeLoad?: MoeLoadStep[];
  /** Optimizer state each worker holds, float32 bytes, in worker order (ZeRO-1 divides it by dp). */
  optimizerBytesPerWorker: number[];
  /** Bytes each worker held in host memory at its most in a step (optimizer offload's state, swapped stashes), worker order; absent when none. */
  hostBytesPerWorker?: number[];
  /**
   * The most bytes each worker held in a step, by kind, in worker order: weights, gradients and optimizer state as
   * its sharding defines them (ZeRO-1 divides the optimizer state by dp, ZeRO-2 the gradients too, ZeRO-3 the
   * weights between their gathers) at rest; stash the activations its stages kept for their backwards; transient
   * the peak of ZeRO-2/3's buffers around an action (gathered weights, a micro-batch's full gradient); float32 bytes.
   */
  heldBytesPerWorker: {
    weights: number;
    grads: number;
    optimizer: number;
    stash: number;
    transient: number;
    /**
     * The ZeRO paper's formula for the worker's model states at rest (held-bytes.ts); `peak`: the planner's and the
     * budget's peak of the worker's rank (config/memory-budget.ts plannedPeaks): those model states, the stash at
     * the peak of the run's order, one backward's recomputation and working set (the gradients it keeps for its
     * weight gradients, not its saved inputs again), ZeRO's buffers around an action (ZeRO-2: a stage's whole
     * gradient; ZeRO-3: its gathered weights too), less the plan's communication staging (PlannedPeak.staging, which
     * the budget counts): what `measured.comparable` (the count less its staging) is checked against.
     */
    formula: { weights: number; grads: number; optimizer: number; peak: number };
    /**
     * The allocator's count (nn/memory-ledger.ts; allocator-tracked bytes, not the driver's): the worker's most live
     * bytes in a steady-state step (the first step is left out when there are several), its bytes by kind at that
     * moment, and its pool's free bytes then. `slack`: of the peak, what the pool's buckets hold beyond the
     * requests (256 B at least, powers of two to 4 KiB, then ≤ 25%; 0 on the CPU host). `comparable`: the peak less
     * the kinds the formula does not count (memory-ledger.ts OUTSIDE_FORMULA: communication staging and the GPU's
     * uniform ring, a fixed 256 KiB a worker) and less the slack. `pending`: of the peak, buffers the program has let
     * go that stay live until the commands using them are submitted (the GPU backend's deferred release; in
     * `comparable`).
     */
    measured?: { peak: number; comparable: number; slack: number; pending: number; byKind: Record<MemoryKind, number>; pooled: number };
  }[];
  /** The last step's count on each worker (worker order; ms from that step's start, as `timeline`): the memory lanes. */
  memory?: StepMemory[];
  /**
   * Data-parallel runs that read weights: the largest difference between any replica's weights and replica 0's;
   * runs with model copies (DualPipe): between the copies of each stage (0: they agree bit for bit).
   */
  replicaMismatch?: number;
  /**
   * Tensor-parallel runs that read weights: the largest difference between any tp worker's value of a parameter tp
   * does not split (embeddings, LayerNorms, row-split layers' biases, the head) and tp rank 0's of the same stage and
   * replica (0: they agree bit for bit; the run's `weights` hold tp rank 0's).
   */
  tpMismatch?: number;
  /**
   * The run's state read from its workers between steps (onProgress: a
   * checkpoint), the only part of a save on the workers' path: how many reads,
   * their mean and longest time. Encoding and storing run beside training.
   */
  stateReads?: { count: number; meanMs: number; maxMs: number };
  /** Checkpoints of the run saved into the browser's storage (src/run-state/durable-run.ts), beside training. */
  checkpointSaves?: CheckpointSaves;
  /** A resumed run: the steps done by the checkpoint it started from. */
  resumedFrom?: number;
  /** The run recovered from a failure: restarted from its last checkpoint (the last recovery when there were several). */
  recovery?: RecoveryFigures;
  /** Every recovery of the run, in order (up to MAX_RECOVERIES; present when there was one). */
  recoveries?: RecoveryFigures[];
}

/** The saves of a run's checkpoints: the steps saved, the last file's bytes, mean encode and store time (off the workers' path); the first refusal, if any. */
export interface CheckpointSaves {
  steps: number[];
  bytes: number;
  meanEncodeMs: number;
  meanStoreMs: number;
  error?: string;
}

/** A run's mesh as a recovery record names it: dp replicas × ranks (virtual stages per rank), the schedule, the workers. */
export interface MeshShape {
  dp: number;
  /** Tensor-parallel workers per rank (absent: 1). */
  tp?: number;
  /** Expert-parallel workers per rank (absent: 1). */
  ep?: number;
  ranks: number;
  virtual: number;
  schedule: RunScheduleName;
  workers: number;
}

/**
 * A recovery: what failed, at which step; the checkpoint it restarted from;
 * steps redone; time from the failure to the first step after it; how (fresh
 * workers in the same mesh, or the workers that remain on a smaller mesh) and
 * the mesh before and after, with what the re-cut changed.
 */
export interface RecoveryFigures {
  failure: string;
  failedAtStep: number;
  fromStep: number;
  stepsRedone: number;
  recoveryMs: number;
  mode: RecoveryMode;
  meshBefore: MeshShape;
  meshAfter: MeshShape;
  /** With mode 'fewer': what the re-cut changed and why. */
  recut?: string;
}
