/**
 * Interleaved 1F1B, Megatron-LM's schedule with v model chunks per rank
 * (Narayanan et al., SC'21, arXiv:2104.04473): stage c·p + r on rank r; a rank
 * walks its chunks in groups of p micro-batches, forwards in chunk order and
 * backwards in reverse, warming up with 2(p−r−1) + (v−1)·p forwards. Like
 * Megatron it needs the micro-batch count to be a multiple of p.
 */
import { act, stageToRankMap } from '../placement.ts';
import type { Action, Schedule } from '../types.ts';

export function interleaved1F1B(ranks: number, microbatches: number, virtual: number): Schedule {
  const p = ranks;
  const v = virtual;
  const total = microbatches * v;
  const group = p * v;
  // The k-th forward (or backward) of a rank: which chunk and which micro-batch.
  const chunkOf = (k: number, forward: boolean): number => {
    const c = Math.floor((k % group) / p);
    return forward ? c : v - 1 - c;
  };
  const mbOf = (k: number): number => Math.floor(k / group) * p + (k % p);

  const order: Action[][] = [];
  for (let r = 0; r < p; r++) {
    const warmup = Math.min(2 * (p - r - 1) + (v - 1) * p, total);
    const list: Action[] = [];
    const fwd = (k: number) => list.push(act(chunkOf(k, true) * p + r, 'F', mbOf(k)));
    const bwd = (k: number) => list.push(act(chunkOf(k, false) * p + r, 'B', mbOf(k)));
    for (let k = 0; k < warmup; k++) fwd(k);
    for (let k = 0; k < total - warmup; k++) {
      fwd(warmup + k);
      bwd(k);
    }
    for (let k = total - warmup; k < total; k++) bwd(k);
    order.push(list);
  }
  return {
    name: 'interleaved-1f1b',
    stages: p * v,
    ranks: p,
    microbatches,
    stageToRank: stageToRankMap(p, v, 'loop'),
    order,
  };
}
