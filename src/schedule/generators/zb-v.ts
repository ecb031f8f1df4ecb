/**
 * ZB-V from "Zero Bubble Pipeline Parallelism" (Qi et al., ICLR 2024,
 * arXiv:2401.10241, section 6), in the phase structure torch's
 * ScheduleZBVZeroBubble uses: two stages per rank placed as a V (rank r holds
 * stages r and 2p−1−r), backward split into I and W. Phases per rank r:
 * 2(p−r)−1 forwards of the down stage; r pairs F(up) F(down); p−r triples
 * F I W on the up stage; a steady state of F I W on each stage; a drain of I's;
 * then the deferred W's. It is built for n = max(m, 2p−1) micro-batches and
 * the actions of micro-batches ≥ m are dropped, so any m ≥ 1 works.
 *
 * With F = I = W = 1 per stage the makespan is 6m + max(p − 1, 4p − 2m − 2):
 * a bubble of p − 1 per rank once m ≥ 2p − 1 (theory.ts; checked by tests).
 */
import { act, stageToRankMap } from '../placement.ts';
import type { Action, Op, Schedule } from '../types.ts';

type Counter = 'F0' | 'F1' | 'I0' | 'I1' | 'W0' | 'W1';

export function zbV(ranks: number, microbatches: number): Schedule {
  const p = ranks;
  const m = microbatches;
  const n = Math.max(m, 2 * p - 1);
  const order: Action[][] = [];
  for (let r = 0; r < p; r++) {
    const stageOf = [r, 2 * p - 1 - r];
    const list: Action[] = [];
    const next: Record<Counter, number> = { F0: 0, F1: 0, I0: 0, I1: 0, W0: 0, W1: 0 };
    const emit = (op: Op, chunk: 0 | 1): void => {
      const key = `${op}${chunk}` as Counter;
      const mb = next[key]++;
      if (mb < m) list.push(act(stageOf[chunk], op, mb));
    };
    for (let k = 0; k < 2 * (p - r) - 1; k++) emit('F', 0);
    for (let k = 0; k < r; k++) {
      emit('F', 1);
      emit('F', 0);
    }
    for (let k = 0; k < p - r; k++) {
      emit('F', 1);
      emit('I', 1);
      emit('W', 1);
    }
    while (next.F1 < next.F0 || next.F0 < n) {
      if (next.F0 < n) emit('F', 0);
      emit('I', 0);
      emit('W', 0);
      emit('F', 1);
      emit('I', 1);
      emit('W', 1);
    }
    for (let k = 0; k < r; k++) {
      emit('I', 0);
      emit('I', 1);
    }
    for (let k = 0; k < p - r; k++) {
      emit('I', 0);
      emit('W', 0);
    }
    while (next.W1 < next.I1) emit('W', 1);
    while (next.W0 < next.I0) emit('W', 0);
    order.push(list);
  }
  return { name: 'zb-v', stages: 2 * p, ranks: p, microbatches: m, stageToRank: stageToRankMap(p, 2, 'v'), order };
}
