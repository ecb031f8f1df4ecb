/**
 * 1F1B as in PipeDream-flush (Narayanan et al., 2021, arXiv:2006.09503) and
 * Megatron-LM's non-interleaved schedule: rank r warms up with p−r−1
 * forwards, then alternates one forward and one backward, then drains the
 * remaining backwards.
 */
import { act, stageToRankMap } from '../placement.ts';
import type { Action, Schedule } from '../types.ts';

export function oneFOneB(ranks: number, microbatches: number): Schedule {
  const order: Action[][] = [];
  for (let r = 0; r < ranks; r++) {
    const warmup = Math.min(ranks - r - 1, microbatches);
    const list: Action[] = [];
    for (let i = 0; i < warmup; i++) list.push(act(r, 'F', i));
    for (let i = 0; i < microbatches - warmup; i++) {
      list.push(act(r, 'F', warmup + i));
      list.push(act(r, 'B', i));
    }
    for (let i = microbatches - warmup; i < microbatches; i++) list.push(act(r, 'B', i));
    order.push(list);
  }
  return { name: '1f1b', stages: ranks, ranks, microbatches, stageToRank: stageToRankMap(ranks, 1, 'loop'), order };
}
