/**
 * A rank as the coordinator sees it: something it can initialise, step,
 * read weights from, and end. In the browser each rank is a module Worker
 * driven through Comlink (worker-host.ts); in Node tests a rank runs in the
 * same process (in-process-host.ts). Both run the same RankExecutor.
 */
import type { ModelSpec } from '../../nn/model-spec.ts';
import type { OptimizerName, OptimizerState } from '../../nn/optimizer.ts';
import type { Schedule } from '../../schedule/types.ts';
import type { TextCorpus } from '../../data/text-corpus.ts';
import type { Fault } from '../../config/fault-spec.ts';
import type { StepResult } from './rank-executor.ts';
import type { LateTimes } from './late-times.ts';
import type { OptimizerPieces } from '../policies/index.ts';
export type { OptimizerPiece, OptimizerPieces } from '../policies/index.ts';
import type { RunConfig } from '../../config/run-config.ts';

export interface RankInit {
  config: RunConfig;
  /** The model, built once by the coordinator (run-plan.ts) and sent to every rank. */
  spec: ModelSpec;
  /** Pipeline rank (within its replica). */
  rank: number;
  /** The worker's index in the mesh (src/schedule/mesh.ts: replica · ranks + rank); the rank itself with one pipeline. */
  worker: number;
  schedule: Schedule;
  /** Block range [start, end) of every stage (all stages, not only this rank's). */
  stageBlocks: [number, number][];
  recvTimeoutMs: number;
  fault?: Fault;
  /** A run on "your text": the text, which stays in the page and its workers (the configuration names it by hash). */
  corpus?: TextCorpus;
  /**
   * A PipeDream-2BW stream: the run's step its window starts at (a resume from a checkpoint inside the stream; 0 from
   * the start) and, every `checkpointEvery` steps (0: never), each worker of replica 0 tells its state as its stage
   * ends that step's block (stream-checkpoint.ts).
   */
  stream?: { firstStep: number; checkpointEvery: number };
}

/** A worker's lines to the others. */
export interface RankPorts {
  /** Ports to other workers, by worker index: its pipeline neighbours in its replica and its ring neighbours across replicas. */
  peers: Map<number, MessagePort>;
  /** The coordinator's control line (mesh-control.ts: barrier, status); only in a data-parallel mesh. */
  control?: MessagePort;
}

export interface RankStats {
  rank: number;
  /** Live GPU buffers and their bytes (0 on the CPU reference). */
  buffers: number;
  bufferBytes: number;
  liveStashes: number;
  stashBytes: number;
  adapter: string;
}

/** How one rank started: acquiring its device, then its warm-up (compiling the kernels its steps use). */
export interface RankStartup {
  rank: number;
  /** Acquiring the WebGPU device (0 in-process). */
  deviceMs: number;
  /** The warm-up: naming, compiling (in parallel) and readying the kernels the rank's steps use. */
  warmUpMs: number;
  /** Kernels (pipelines) the rank's steps use, and how many of them its warm-up compiled. */
  kernels: number;
  compiled: number;
}

export interface RankUp {
  adapter: string;
  startup: RankStartup;
}

export type Weights = Record<string, Float32Array | Float64Array>;

/** What a worker holds of a run's state: its stages' weights and its optimizer state (whole parameters, or its ZeRO-1 shards' pieces). */
export interface RankState {
  params: Weights;
  optimizer: OptimizerPieces;
  /** PipeDream-2BW: the weight version before the latest (after the stream's first update). */
  previous?: Weights;
}

/**
 * A stream's news while it runs, never awaited: how many of its steps are done (every micro-batch's backward through
 * stage 0), or one step's micro-batch losses as a worker holding the last stage computed them (both numbered in the
 * window: a resumed stream's from its own start), or a worker's state as its stage ended the block of the run's step
 * stepsDone − 1 (PipeDream-2BW with checkpoints: stream-checkpoint.ts).
 */
export type StreamNews = (news: { stepsDone: number } | { losses: { mb: number; loss: number }[] } | { state: RankState & { stepsDone: number; readMs: number } }) => unknown;

export interface RankHost {
  /** The worker's index in the mesh (the pipeline rank with one pipeline). */
  readonly rank: number;
  init(init: RankInit, ports: RankPorts): Promise<RankUp>;
  /** Runs window `step`; while a stream runs, its workers tell its steps done and its losses through `onStream` (rank-runtime.ts). */
  step(step: number, onStream?: StreamNews): Promise<StepResult>;
  /** The last step's actions at their GPU times, once read (a step's own come with the next step's result: late-times.ts); absent or null: none pending. */
  lateTimes?(): Promise<LateTimes | null>;
  /** Ending a stream early (stream-end.ts), step 1, on a worker holding stage 0: no new micro-batch enters; resolves to how many did. */
  holdStream(): Promise<number>;
  /** Step 2, on every worker: the stream runs micro-batches below `microbatches` only. */
  endStreamAt(microbatches: number): Promise<void>;
  /** Pausing a stream (stream-pause.ts): the worker holds before its next action, its timeouts suspended, until resumeStream. */
  pauseStream(): Promise<void>;
  resumeStream(): Promise<void>;
  readWeights(): Promise<Weights>;
  /** Its stages' weights and its optimizer state, between steps (a checkpoint). */
  readState(): Promise<RankState>;
  /**
   * Sets its stages' weights and its optimizer state (its shard of it) from a
   * run's whole state by name, before its first step (a resume): checked whole
   * first, a missing or misshapen entry throws naming it.
   */
  loadState(state: { params: Readonly<Record<string, ArrayLike<number>>>; optimizer: OptimizerState<ArrayLike<number>>; previous?: Readonly<Record<string, ArrayLike<number>>> }): Promise<void>;
  stats(): Promise<RankStats>;
  /**
   * Frees the stages, then the device; reports GPU buffers still alive after the
   * stages were freed (0 unless something leaked). `reusable`: the rank kept its
   * device and compiled kernels, healthy and holding nothing, for another run.
   */
  dispose(): Promise<{ leakedBuffers: number; reusable?: boolean }>;
  /** Ends the rank at once (kills the worker). Safe to call twice. */
  terminate(): void;
  /** Resolves never; rejects when the rank dies outside a call (worker crash). */
  readonly fatal: Promise<never>;
}
