/**
 * GPipe (Huang et al., 2019, arXiv:1811.06965): every rank runs all forwards,
 * then all backwards (in micro-batch order, as torch's ScheduleGPipe does).
 */
import { act, stageToRankMap } from '../placement.ts';
import type { Action, Schedule } from '../types.ts';

export function gpipe(ranks: number, microbatches: number): Schedule {
  const order: Action[][] = [];
  for (let r = 0; r < ranks; r++) {
    const list: Action[] = [];
    for (let i = 0; i < microbatches; i++) list.push(act(r, 'F', i));
    for (let i = 0; i < microbatches; i++) list.push(act(r, 'B', i));
    order.push(list);
  }
  return { name: 'gpipe', stages: ranks, ranks, microbatches, stageToRank: stageToRankMap(ranks, 1, 'loop'), order };
}
