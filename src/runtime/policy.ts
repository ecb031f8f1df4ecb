/**
 * The update policy's contract: how the executor hands a rank's weight updates
 * to the policy its schedule's registry entry names (src/schedule/registry.ts,
 * `update`), and the optimizer state a policy holds, as pieces of parameters.
 * The executor calls a policy through one hook, `apply`, around every compute
 * action, `afterAction` once an action's kernels are done, and `endStep` after
 * the step's last action; nothing else in the runtime asks which schedule runs.
 * The policies: flush.ts (every synchronous schedule: the end of a step, over
 * the mesh) and pipedream-policy.ts (PipeDream's update after every backward).
 */
import type { Optimizer, OptimizerName, OptimizerState } from '../nn/optimizer.ts';
import type { Param } from '../nn/param.ts';
import type { Action } from '../schedule/types.ts';
import type { StepLog } from './transport.ts';
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
  /** PipeDream: the weight version each backward used. */
  versions?: VersionRecord[];
  /** PipeDream: the most weight versions (and their bytes) each stage held. */
  weightStash?: Record<number, { versions: number; bytes: number }>;
  /** Bytes of optimizer state this worker holds (all of its stages', or its ZeRO-1 shards'). */
  optimizerBytes?: number;
}

/** The stages a policy updates: their parameters, and how to zero their gradients. */
export interface UpdatableStage {
  readonly params: readonly Param[];
  zeroGrads(): void;
}

export interface UpdatePolicy {
  /** Runs one compute action; `compute` issues its kernels. */
  apply<T>(a: Action, compute: () => T): T;
  /** After action `a`'s kernels are done (a data-parallel flush may start a stage's all-reduce here). */
  afterAction?(a: Action, log: StepLog): void;
  /** After the step's last action (and its sends). */
  endStep(step: number, log: StepLog): void | Promise<void>;
  report(): PolicyReport;
  /** The optimizer state it holds, as pieces of parameters (between steps: a checkpoint). */
  readOptimizer(): Promise<OptimizerPieces>;
  /** Sets the optimizer state it holds from a run's whole state, by parameter name (before the first step: a resume). */
  loadOptimizer(state: OptimizerState<ArrayLike<number>>): void;
  dispose(): void;
}

/** An optimizer's state over whole parameters, as pieces [0, size). */
export async function wholePieces(opt: Optimizer, params: readonly Param[]): Promise<OptimizerPieces> {
  const { name, steps, slots } = await opt.readState();
  return { name, steps, pieces: params.map((p) => ({ param: p.name, lo: 0, hi: p.value.size, slots: slots[p.name] })) };
}
