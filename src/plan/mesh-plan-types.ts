/** The planner's request and answer (mesh-plan.ts): what is asked, each candidate layout, and the plan. */
import type { DeviceSpec } from './device.ts';
import type { PlanSchedule } from './plan-schedules.ts';
import type { Recompute, TransformerModel } from './transformer.ts';
import type { ZeroChoice, ZeroStage } from './zero.ts';

export interface MeshPlanRequest {
  model: TransformerModel;
  device: DeviceSpec;
  /** N: devices in all. */
  devices: number;
  /** Sequences per optimizer step, over all replicas. */
  globalBatch: number;
  /** Schedules to consider (default all of PLAN_SCHEDULES). */
  schedules?: readonly PlanSchedule[];
  /** Largest micro-batch size tried (powers of two up to it; default 8). */
  maxMicroBatch?: number;
  /** Layouts `auto` runs on (the best by the other schedules; default 3). */
  autoLayouts?: number;
  /** Tensor-parallel workers per stage, fixed (default: every t dividing the heads and a node is tried). */
  tp?: number;
  /** Expert-parallel workers, fixed (default: for a model with experts every ep dividing them and dp · tp, a multiple of tp, is tried; 1 otherwise). */
  ep?: number;
  /** Sequence parallelism beside tensor parallelism (Korthikanti et al.): activations split t ways; default off. */
  sequenceParallel?: boolean;
  /**
   * Recomputation modes tried (default all: none, selective, full), in that order, each only where the one
   * before does not fit; Megatron SC'21 had full recomputation only (megatron-table1.ts asks for none, full).
   */
  recompute?: readonly Recompute[];
  /**
   * ZeRO: 'auto' (default) the least stage that fits, 0 → 1 → 2 → 3; a stage fixes it wherever dp > 1.
   * Booleans as before stages 2 and 3: false none, true ZeRO-1 where nothing fits without it.
   */
  zero?: ZeroChoice;
  /** Also try offload and swapping over device.hostLinkGBps where nothing else fits (host-options.ts); default off. */
  hostOptions?: boolean;
}

export interface MeshCandidate {
  dp: number;
  pp: number;
  /** Tensor-parallel workers per stage (dp · tp · pp = N). */
  tp: number;
  /** Expert-parallel workers sharing each MoE layer's experts, among a stage's dp · tp (1: none). */
  ep: number;
  schedule: PlanSchedule;
  virtual: number;
  /** Sequences per micro-batch (b) and micro-batches per replica (m). */
  microBatch: number;
  microbatches: number;
  /** ZeRO stage (0 none; 3 re-gathers the weights for every forward and backward, zero.ts). */
  zero: ZeroStage;
  /** What every layer recomputes in its backward: none, its attention's core (selective) or its forward (full). */
  recompute: Recompute;
  stepMs: number;
  computeMs: number;
  bubble: number;
  /** The step's time past the last compute: the flush's collectives, or the ZeRO-2/3 link's lower bound (zero.ts). */
  exposedAllReduceMs: number;
  allReduceShare: number;
  /** The fullest device: state (weights, gradients, optimizer) and activations, bytes. */
  memoryBytes: number;
  stateBytes: number;
  activationBytes: number;
  /** Model FLOPs per step / (step time · N · peak). */
  mfu: number;
  /** Block ranges of each stage. */
  ranges: [number, number][];
  /** Over the host link (host-options.ts): optimizer offloaded, activations swapped; absent: neither. */
  offload?: boolean;
  swap?: boolean;
}

export interface MeshPlan {
  /** Fitting candidates, fastest first. */
  candidates: MeshCandidate[];
  /** Candidates evaluated, and those dropped for memory (counted, never simulated). */
  evaluated: number;
  dropped: number;
  /** Layouts not tried, with why (batch not divisible, too many stages, too large to simulate). */
  skipped: string[];
}
