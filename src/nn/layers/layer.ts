/**
 * A layer with its backward split in two, as zero-bubble schedules need:
 *
 *   forward(x, save)            → y, and (when save) the tensors backward needs
 *   backwardInput(saved, dy)    → dx
 *   backwardWeight(saved, dy)   → param.grad += ∂L/∂param
 *
 * forward and backwardInput may be asynchronous: a tensor-parallel layer waits
 * between its kernels for its tp group's collectives (tensor-parallel.ts). The
 * weight gradients need none, so backwardWeight is synchronous.
 *
 * The caller (a Stage) owns every tensor: `saved` holds references the stage
 * keeps in its stash and disposes; a layer never disposes its input or dy.
 * A layer without parameters has no backwardWeight. A composite layer (a
 * transformer block) may replace the contents of `saved` in backwardInput by
 * what its backwardWeight needs (its inner weight ops' inputs and output
 * gradients); the stage then frees what it dropped and keeps the rest.
 */
import type { Tensor } from '../backend.ts';
import type { Param } from '../param.ts';

export interface LayerForward {
  y: Tensor;
  /** What backward needs (empty when save was false). May include x itself. */
  saved: Tensor[];
}

export interface Layer {
  /** Global name, e.g. 'block1.linear'. */
  readonly name: string;
  readonly params: readonly Param[];
  forward(x: Tensor, save: boolean): LayerForward | Promise<LayerForward>;
  backwardInput(saved: Tensor[], dy: Tensor): Tensor | Promise<Tensor>;
  backwardWeight?(saved: readonly Tensor[], dy: Tensor): void;
  /** backwardInput prepares what backwardWeight reads (a tp layer's own columns of dy): the stage runs it even where dx is not wanted. */
  readonly needsBackwardInput?: boolean;
  /**
   * Parameters whose gradients this worker computes over its part of the rows only (sequence parallelism: a
   * LayerNorm's), to be summed over the tp group before they are read (Stage.sumGradsOverTp).
   */
  readonly gradsSummedOverTp?: readonly Param[];
  /**
   * A loss term beside the model's (an MoE block's load-balancing loss, gpt-moe-block.ts) [1]: the layer adds its
   * gradient itself and accumulates the term here, weighted as it enters the objective; Stage.takeAuxLoss reads and
   * zeroes it. The layer owns it; the stage disposes it with the layer.
   */
  readonly auxLoss?: Tensor;
  /**
   * An MoE layer: the routing counts of its last forward that saved (f32 [E, 3] per expert: tokens whose first
   * choice it is, second choice, choices dropped for capacity; moe-reference.ts routeRef) and the capacity it
   * routed with, handed to the caller (who disposes them); null when none since the last call. The Stage takes them
   * right after each such forward, keyed by the micro-batch.
   */
  takeRouteLoad?(): RouteLoad | null;
}

/** A forward's routing counts (Layer.takeRouteLoad). */
export interface RouteLoad {
  readonly counts: Tensor;
  readonly experts: number;
  readonly capacity: number;
}

/** An MoE layer's routing counts of one micro-batch's forward, with the layer's name (Stage.takeRouteLoads). */
export interface StageRouteLoad extends RouteLoad {
  readonly mb: number;
  readonly layer: string;
}
