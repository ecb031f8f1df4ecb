/**
 * Interleaved 1F1B, Megatron-LM's schedule with v model chunks per rank
 * (Narayanan et al., SC'21, arXiv:2104.04473): stage c·p + r on rank r; a rank
 * walks its chunks in groups of p micro-batches, forwards in chunk order and
 * backwards in reverse, warming up with 2(p−r−1) + (v−1)·p forwards.
 *
 * Any m ≥ p: the micro-batches are cut into ⌊m/p⌋ rounds of as equal sizes
 * as can be (each at least p; the first m mod ⌊m/p⌋ rounds one larger), and a
 * rank walks its chunks round by round, warming up with 2(p−r−1) + (v−1)·g
 * forwards for the first round's size g — the rounds of
 * torch.distributed.pipelining's ScheduleInterleaved1F1B, which asks for
 * rounds of one size (m divisible by ⌊m/p⌋); here the sizes may differ by one,
 * so every m ≥ p has an order. With m a multiple of p every round is p:
 * Megatron-LM's schedule exactly. The validator proves each order complete and
 * deadlock-free (src/schedule/generators.test.ts, over p, m and v).
 */
import { act, stageToRankMap } from '../placement.ts';
import type { Action, Schedule } from '../types.ts';

export function interleaved1F1B(ranks: number, microbatches: number, virtual: number): Schedule {
  const p = ranks;
  const v = virtual;
  const total = microbatches * v;
  const rounds = interleavedRounds(p, microbatches);
  // The k-th forward (or backward) of a rank, in round order: its chunk (forward order) and micro-batch.
  const walk: { chunk: number; mb: number }[] = [];
  let first = 0;
  for (const size of rounds) {
    for (let c = 0; c < v; c++) for (let i = 0; i < size; i++) walk.push({ chunk: c, mb: first + i });
    first += size;
  }
  const chunkOf = (k: number, forward: boolean): number => (forward ? walk[k].chunk : v - 1 - walk[k].chunk);
  const mbOf = (k: number): number => walk[k].mb;

  const order: Action[][] = [];
  for (let r = 0; r < p; r++) {
    const warmup = Math.min(2 * (p - r - 1) + (v - 1) * rounds[0], total);
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

/** The sizes of the rounds m micro-batches are walked in on p ranks: ⌊m/p⌋ of them (one when m < p), as equal as can be, larger first. */
export function interleavedRounds(p: number, m: number): number[] {
  const n = Math.max(1, Math.floor(m / p));
  const base = Math.floor(m / n);
  return Array.from({ length: n }, (_, i) => base + (i < m % n ? 1 : 0));
}
