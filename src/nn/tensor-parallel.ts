/**
 * The collectives a tensor-parallel layer needs from the workers that share
 * its stage (its tp group), as Megatron-LM's f and g operators use them. The
 * layers call them between their kernels; the runtime implements them over
 * MessageChannels (src/runtime/comm/tp-collective.ts); one worker alone (tp = 1)
 * has SOLO, which returns its input.
 *
 * Sequence parallelism (Korthikanti et al. 2022, §4.2.2) splits the residual
 * stream's token rows over the group instead of repeating them: member j of t
 * holds rows [j·R/t, (j+1)·R/t) of an [R, C] tensor. Its g is an all-gather of
 * rows before a column-parallel linear (allGatherRows), its ḡ a reduce-scatter
 * of rows after a row-parallel one (reduceScatterRows); each is the other's
 * backward.
 */
import type { Tensor } from './backend.ts';

export interface TpGroup {
  /** Workers in the group (t). */
  readonly size: number;
  /** This worker's place in it (j). */
  readonly index: number;
  /** Sums `x` [rows, cols] over the group (g forward, f backward); takes `x`; the result is bit for bit the same on every member. */
  allReduce(x: Tensor): Promise<Tensor>;
  /** allReduce of each of `xs` in one exchange; takes them. */
  allReduceMany(xs: readonly Tensor[]): Promise<Tensor[]>;
  /** Joins the members' column blocks of `x` [rows, c] into [rows, t·c] in member order; takes `x`. */
  allGather(x: Tensor): Promise<Tensor>;
  /** This member's column block [rows, c / t] of `x` [rows, c] (the all-gather's backward), a new tensor; does not take `x`, and is `x` itself when the group is one worker. */
  ownColumns(x: Tensor): Promise<Tensor>;
  /** Sequence parallelism: joins the members' row blocks of each of `xs` (each [rows, c]) into [t·rows, c] in member order, in one exchange; does not take them (a layer keeps its row blocks). */
  allGatherRows(xs: readonly Tensor[]): Promise<Tensor[]>;
  /** Sequence parallelism: this member's row block [rows / t, c] of the sum over the group of `x` [rows, c] (the same bits as allReduce's rows); takes `x`. */
  reduceScatterRows(x: Tensor): Promise<Tensor>;
  /** Sequence parallelism: this member's row block [rows / t, c] of `x` [rows, c] (allGatherRows's backward), a new tensor; does not take `x`, and is `x` itself when the group is one worker. */
  ownRows(x: Tensor): Promise<Tensor>;
}

/** One worker holding its layers whole. */
export const SOLO: TpGroup = {
  size: 1,
  index: 0,
  allReduce: async (x) => x,
  allReduceMany: async (xs) => [...xs],
  allGather: async (x) => x,
  ownColumns: async (x) => x,
  allGatherRows: async (xs) => [...xs],
  reduceScatterRows: async (x) => x,
  ownRows: async (x) => x,
};
