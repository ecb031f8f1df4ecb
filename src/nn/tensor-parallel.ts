/**
 * The collectives a tensor-parallel layer needs from the workers that share
 * its stage (its tp group), as Megatron-LM's f and g operators use them. The
 * layers call them between their kernels; the runtime implements them over
 * MessageChannels (src/runtime/tp-collective.ts); one worker alone (tp = 1)
 * has SOLO, which returns its input.
 */
import type { Tensor } from './backend.ts';

export interface TpGroup {
  /** Workers in the group (t). */
  readonly size: number;
  /** This worker's place in it (j). */
  readonly index: number;
  /** Sums `x` [rows, cols] over the group (g forward, f backward); takes `x`; the result is bit for bit the same on every member. */
  allReduce(x: Tensor): Promise<Tensor>;
  /** Joins the members' column blocks of `x` [rows, c] into [rows, t·c] in member order; takes `x`. */
  allGather(x: Tensor): Promise<Tensor>;
  /** This member's column block [rows, c / t] of `x` [rows, c] (the all-gather's backward), a new tensor; does not take `x`, and is `x` itself when the group is one worker. */
  ownColumns(x: Tensor): Promise<Tensor>;
}

/** One worker holding its layers whole. */
export const SOLO: TpGroup = {
  size: 1,
  index: 0,
  allReduce: async (x) => x,
  allGather: async (x) => x,
  ownColumns: async (x) => x,
};
