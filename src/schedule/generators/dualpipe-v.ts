/**
 * DualPipe-V, the V-shaped half of DeepSeek's DualPipe (DeepSeek-V3 technical
 * report, arXiv:2412.19437; the "cut-in-half" DualPipeV of
 * github.com/deepseek-ai/DualPipe, also described by Sea AI Lab's zero-bubble
 * V schedules): two stages per rank placed as a V (rank r holds stage r, chunk
 * 0, and stage 2p−1−r, chunk 1; the first and last stage share rank 0). Each
 * rank walks eight phases, with n = max(m, 2p) micro-batches:
 *
 *   1. 2(p−r−1) forwards of chunk 0
 *   2. r+1 pairs F(chunk 0) F(chunk 1)
 *   3. p−r−1 triples I(1) W(1) F(1)        (zero bubble: B split, W at once)
 *   4. n−2p+r+1 quadruples F(0) B(1) F(1) B(0)   (the steady state; DualPipe
 *      overlaps each F with the B beside it, here they run one after the other)
 *   5. p−r−1 triples B(1) F(1) B(0)
 *   6. r+1 pairs B(1) B(0), the second half split into I with W deferred
 *   7. p−r−1 pairs W I(0)                   (a deferred W, then a split B)
 *   8. r+1 deferred W's
 *
 * Deferred W's run first-in first-out, as DualPipe's WeightGradStore queue.
 * As in zb-v.ts the actions of micro-batches ≥ m are dropped, so any m ≥ 1
 * works (DualPipe itself asks for m ≥ 2p).
 */
import { act, stageToRankMap } from '../placement.ts';
import type { Action, Schedule } from '../types.ts';

export function dualPipeV(ranks: number, microbatches: number): Schedule {
  const p = ranks;
  const m = microbatches;
  const n = Math.max(m, 2 * p);
  const order: Action[][] = [];
  for (let r = 0; r < p; r++) {
    const stageOf = [r, 2 * p - 1 - r];
    const list: Action[] = [];
    const nextF = [0, 0];
    const nextB = [0, 0];
    const deferred: [number, number][] = [];
    const push = (a: Action): void => {
      if (a.mb < m) list.push(a);
    };
    const F = (c: 0 | 1): void => push(act(stageOf[c], 'F', nextF[c]++));
    const B = (c: 0 | 1, split = false): void => {
      const mb = nextB[c]++;
      if (!split) return push(act(stageOf[c], 'B', mb));
      push(act(stageOf[c], 'I', mb));
      deferred.push([stageOf[c], mb]);
    };
    const W = (): void => {
      const next = deferred.shift();
      if (next) push(act(next[0], 'W', next[1]));
    };
    for (let i = 0; i < 2 * (p - r - 1); i++) F(0);
    for (let i = 0; i < r + 1; i++) {
      F(0);
      F(1);
    }
    for (let i = 0; i < p - r - 1; i++) {
      B(1, true);
      W();
      F(1);
    }
    for (let i = 0; i < n - 2 * p + r + 1; i++) {
      F(0);
      B(1);
      F(1);
      B(0);
    }
    for (let i = 0; i < p - r - 1; i++) {
      B(1);
      F(1);
      B(0);
    }
    let split = false;
    const half = Math.floor((r + 1) / 2);
    for (let i = 0; i < r + 1; i++) {
      if (i === half && r % 2 === 1) split = true;
      B(1, split);
      if (i === half && r % 2 === 0) split = true;
      B(0, split);
    }
    for (let i = 0; i < p - r - 1; i++) {
      W();
      B(0, true);
    }
    while (deferred.length > 0) W();
    order.push(list);
  }
  return { name: 'dualpipe-v', stages: 2 * p, ranks: p, microbatches: m, stageToRank: stageToRankMap(p, 2, 'v'), order };
}
