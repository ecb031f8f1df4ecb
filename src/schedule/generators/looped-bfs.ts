/**
 * Looped BFS, breadth-first pipeline parallelism (Lamy-Poirier, 2022,
 * arXiv:2211.05953; torch's ScheduleLoopedBFS): stage c·p + r on rank r; a
 * rank runs every micro-batch through its first chunk, then its next chunk,
 * ..., then the backwards chunk by chunk in reverse, last micro-batch first.
 */
import { act, stageToRankMap } from '../placement.ts';
import type { Action, Schedule } from '../types.ts';

export function loopedBfs(ranks: number, microbatches: number, virtual: number): Schedule {
  const order: Action[][] = [];
  for (let r = 0; r < ranks; r++) {
    const list: Action[] = [];
    for (let c = 0; c < virtual; c++) {
      for (let i = 0; i < microbatches; i++) list.push(act(c * ranks + r, 'F', i));
    }
    for (let c = virtual - 1; c >= 0; c--) {
      for (let i = microbatches - 1; i >= 0; i--) list.push(act(c * ranks + r, 'B', i));
    }
    order.push(list);
  }
  return {
    name: 'looped-bfs',
    stages: ranks * virtual,
    ranks,
    microbatches,
    stageToRank: stageToRankMap(ranks, virtual, 'loop'),
    order,
  };
}
