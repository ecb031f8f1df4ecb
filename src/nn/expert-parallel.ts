/**
 * The collectives an MoE layer needs from the workers that share its stage's experts (its ep group; DESIGN.md's
 * mesh: ep workers per stage, each holding experts / ep of every MoE layer's experts and its own slice of the
 * micro-batch's sequences). The layers call them between their kernels; the runtime implements them over
 * MessageChannels (src/runtime/comm/ep-collective.ts); one worker alone (ep = 1) has SOLO_EP.
 */
import type { Tensor } from './backend.ts';

export interface EpGroup {
  /** Workers in the group (ep). */
  readonly size: number;
  /** This worker's place in it. */
  readonly index: number;
  /** Joins the members' row blocks of `x` [rows, c] into [size·rows, c] in member order; does not take `x`. */
  allGatherRows(x: Tensor): Promise<Tensor>;
  /**
   * An all-to-all of rows whose counts both ends know: rows `send[k]` of `x` [n, c] go to member k, in that order
   * (this member's own stay here); the rows member k sends land at rows `recv[k]` of the result [outRows, c], in
   * order; rows nobody sends are 0. Takes `x`.
   */
  exchangeRows(x: Tensor, send: readonly Int32Array[], recv: readonly Int32Array[], outRows: number): Promise<Tensor>;
  /** Sums each of `xs` over the group, in member order (the same bits on every member); takes them. */
  allReduceMany(xs: readonly Tensor[]): Promise<Tensor[]>;
}

/** One worker holding all of its stage's experts. */
export const SOLO_EP: EpGroup = {
  size: 1,
  index: 0,
  allGatherRows: () => {
    throw new Error('a single worker gathers no rows (ep = 1 routes its own group)');
  },
  exchangeRows: () => {
    throw new Error('a single worker exchanges no rows (ep = 1 holds every expert)');
  },
  allReduceMany: async (xs) => [...xs],
};
