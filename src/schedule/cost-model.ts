/**
 * The simulator's cost model: per-stage op times, links, activation and held
 * bytes, a shared device's lanes, data-parallel replicas and their all-reduce.
 * simulate.ts explains how each is played; this module holds only the shape,
 * so the mesh simulation (simulate-mesh.ts) and the single-pipeline one read
 * it without importing each other.
 */
import type { AllReduceCosts } from './allreduce-cost.ts';
import type { EpCosts } from './ep-cost.ts';
import type { TpCosts } from './tp-cost.ts';

export type PerStage = number | readonly number[];
export type PerLink = number | ((fromRank: number, toRank: number) => number);

export interface CostModel {
  F?: PerStage;
  B?: PerStage;
  I?: PerStage;
  W?: PerStage;
  /** Time from send to first byte between two ranks; default 0. */
  latency?: PerLink;
  /** Bytes per time unit between two ranks; default Infinity (free). */
  bandwidth?: PerLink;
  /** Bytes of the tensor stage s sends to stage s+1 (and of the gradient coming back); default 0. */
  activationBytes?: PerStage;
  /** Bytes stage s keeps per micro-batch for its backward; default activationBytes. */
  heldBytes?: PerStage;
  /** Of those, the bytes still kept between a split backward's I and its W (at most heldBytes); default heldBytes. */
  heldAfterInput?: PerStage;
  /** Extra time of a message across the boundary after stage s (a profile's measured comm); default 0. */
  comm?: PerStage;
  /**
   * Shared-device mode: the ranks share one device with this many effective
   * lanes; when n ranks compute at once each runs at rate min(1, lanes / n)
   * (shared-device.ts). Default Infinity: p independent devices.
   */
  lanes?: number;
  /** Unit of the times; 'unit' (default) or 'ms'. */
  unit?: 'ms' | 'unit';
  /** Data-parallel replicas of the pipeline (default 1); with a shared device, all dp × ranks workers share `lanes`. */
  dp?: number;
  /** Bytes of each stage's gradients (what its all-reduce moves); default 0. */
  gradBytes?: PerStage;
  /** The ring all-reduce's α–β costs and whether it overlaps the backward (allreduce-cost.ts); default free. */
  allReduce?: AllReduceCosts;
  /**
   * Tensor parallelism inside each stage (tp-cost.ts): its collectives per op and micro-batch, each α + (t − 1)·bytes/β,
   * added to the op's time (F, B, I above are then the compute of one of the stage's t workers); default none.
   */
  tp?: TpCosts;
  /**
   * Expert parallelism inside each stage's MoE layers (ep-cost.ts): its all-to-alls per op and micro-batch, each
   * α + the slower of its node's and its network's share, added to the op's time or, overlapped (DualPipe), hidden
   * under compute up to it (withAllToAll); default none.
   */
  ep?: EpCosts;
  /**
   * A schedule with model copies (DualPipe, copies.ts): each stage's time in the sum of its gradients over its copies
   * at the step's end (simulate-copies.ts), one number for every stage or a list; default the α–β ring over the
   * pipeline link between the copies' ranks (latency, bandwidth) on the stage's gradient bytes.
   */
  copySum?: PerStage;
  /**
   * Each pipeline rank's end of step after its last action, collectives and copies' sum: the step's losses read back,
   * the update, the wait for the device (simulate-step-end.ts), one number for every rank or a list; not drawn, the
   * makespan stays the drawn step's; the result's `stepEnd` is the step on the workers' clocks. Default: not played.
   */
  stepEnd?: number | readonly number[];
}
