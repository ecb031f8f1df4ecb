/**
 * The update policy's contract: how the executor hands a rank's weight updates
 * to the policy its schedule's registry entry names (src/schedule/registry.ts,
 * `update`), and the optimizer state a policy holds, as pieces of parameters.
 * The executor calls a policy through `apply` around every compute action,
 * `beforeAction` before it and `afterAction` once its kernels are done, and
 * `endStep` after the step's last action; nothing else in the runtime asks
 * which schedule runs. The policies: flush.ts (every synchronous schedule: the
 * end of a step, over the mesh, ZeRO 0 and 1), sharded-step.ts (ZeRO-2 and
 * ZeRO-3 beside the pipeline), pipedream-policy.ts (PipeDream's update
 * after every backward) and double-buffer-policy.ts (PipeDream-2BW's update
 * every m micro-batches, two weight versions).
 */
import type { Optimizer, OptimizerName, OptimizerState } from '../../nn/optimizer.ts';
import type { Param } from '../../nn/param.ts';
import type { Action } from '../../schedule/types.ts';
import type { StepLog } from '../comm/index.ts';
import type { VersionRecord } from './weight-stash.ts';

/** Slots of the piece [lo, hi) of parameter `param` (the whole parameter unless its optimizer state is a ZeRO-1 shard). */
export interface OptimizerPiece {
  param: string;
  lo: number;
  hi: number;
  /** By PyTorch slot name (OPTIMIZER_SLOTS), each hi − lo values. */
  slots: Record<string, Float32Array | Float64Array>;
}

/** A worker's optimizer state: whole parameters, or its ZeRO-1 shards' pieces. */
export interface OptimizerPieces {
  name: OptimizerName;
  steps: number;
  pieces: OptimizerPiece[];
}

/** What a policy adds to a step's result. */
export interface PolicyReport {
  /** PipeDream and PipeDream-2BW: the weight version each backward used. */
  versions?: VersionRecord[];
  /** PipeDream and PipeDream-2BW: the most weight versions (and their bytes beyond the live weights) each stage held. */
  weightStash?: Record<number, { versions: number; bytes: number }>;
  /** Bytes of optimizer state this worker holds (all of its stages', or its ZeRO-1 shards'). */
  optimizerBytes?: number;
  /** The bytes this worker held in the step, by kind, as its sharding defines them (4 bytes a value). */
  held?: HeldBytes;
  /** ZeRO-Offload: bytes of optimizer state this worker holds in host memory, not on its device (4 bytes a value). */
  hostOptimizerBytes?: number;
  /** Swapping: the most bytes of stashed activations this worker held in host memory in the step. */
  hostStashBytes?: number;
}

/** Bytes a worker holds by kind (the executor's stages add their stashed activations). */
export interface HeldBytes {
  /** At rest: what the worker keeps between its actions (the ZeRO paper's model states). */
  weights: number;
  grads: number;
  optimizer: number;
  /** The step's peak of buffers that live only around an action: ZeRO-3's gathered weights, ZeRO-2/3's full gradient before its reduce-scatter. */
  transient: number;
}

/** The stages a policy updates: their parameters, and how to zero their gradients. */
export interface UpdatableStage {
  readonly params: readonly Param[];
  zeroGrads(): void;
}

export interface UpdatePolicy {
  /** Runs one compute action; `compute` issues its kernels (and, with tp, waits for its group's collectives between them). */
  apply<T>(a: Action, compute: () => Promise<T>): Promise<T>;
  /** Before action `a` takes its inputs (ZeRO-3 gathers the stage's weights here). */
  beforeAction?(a: Action, log: StepLog): void | Promise<void>;
  /** After action `a`'s kernels are done (a data-parallel flush may start a stage's all-reduce here; ZeRO-2/3 reduce-scatter its gradients). */
  afterAction?(a: Action, log: StepLog): void | Promise<void>;
  /** After the step's last action (and its sends). */
  endStep(step: number, log: StepLog): void | Promise<void>;
  report(): PolicyReport;
  /** The optimizer state it holds, as pieces of parameters (between steps: a checkpoint). */
  readOptimizer(): Promise<OptimizerPieces>;
  /** Sets the optimizer state it holds from a run's whole state, by parameter name (before the first step: a resume). */
  loadOptimizer(state: OptimizerState<ArrayLike<number>>): void;
  /** PipeDream-2BW: the weight version before the latest, by parameter name (a stream's checkpoint; null before its first update). */
  readPrevious?(): Promise<Record<string, Float32Array | Float64Array> | null>;
  /** PipeDream-2BW resumed: that version, by parameter name, before the first action. */
  loadPrevious?(previous: Readonly<Record<string, ArrayLike<number>>>): void;
  /** ZeRO-3: the weights this worker owns, as pieces `name[lo:hi]` (its device holds none between steps); absent or null elsewhere. */
  ownedWeights?(): Promise<Record<string, Float32Array | Float64Array> | null>;
  dispose(): void;
}

/** An optimizer's state over whole parameters, as pieces [0, size). */
export async function wholePieces(opt: Optimizer, params: readonly Param[]): Promise<OptimizerPieces> {
  const { name, steps, slots } = await opt.readState();
  return { name, steps, pieces: params.map((p) => ({ param: p.name, lo: 0, hi: p.value.size, slots: slots[p.name] })) };
}

/** A policy that forwards every call to `inner`: the wrappers (faults, model copies, tp context) spread it and override what they change. */
export function forwardingPolicy(inner: UpdatePolicy): UpdatePolicy {
  return {
    apply: (a, compute) => inner.apply(a, compute),
    beforeAction: inner.beforeAction ? (a, log) => inner.beforeAction?.(a, log) : undefined,
    afterAction: inner.afterAction ? (a, log) => inner.afterAction?.(a, log) : undefined,
    endStep: (s, log) => inner.endStep(s, log),
    report: () => inner.report(),
    readOptimizer: () => inner.readOptimizer(),
    loadOptimizer: (state) => inner.loadOptimizer(state),
    ownedWeights: inner.ownedWeights ? () => inner.ownedWeights?.() ?? Promise.resolve(null) : undefined,
    readPrevious: inner.readPrevious ? () => inner.readPrevious?.() ?? Promise.resolve(null) : undefined,
    loadPrevious: inner.loadPrevious ? (previous) => inner.loadPrevious?.(previous) : undefined,
    dispose: () => inner.dispose(),
  };
}
