/**
 * DualPipe, DeepSeek's bidirectional pipeline with two copies of the model
 * (DeepSeek-V3 technical report, arXiv:2412.19437, section 3.2.1;
 * github.com/deepseek-ai/DualPipe, dualpipe/dualpipe.py, DualPipe.step).
 *
 * p ranks (p even), the model cut into p stages, two copies of it: rank r holds
 * stage r of copy 0 and stage p − 1 − r of copy 1. Half of the m micro-batches
 * enter copy 0 at rank 0 and flow down, the other half enter copy 1 at rank
 * p − 1 and flow up; at the flush each stage's gradients are summed over its
 * two copies (rank k and rank p − 1 − k), so both copies take the same update.
 *
 * As a Schedule (types.ts, `copies: 2`): 2p stages, copy 0's stage k is stage
 * k (on rank k), copy 1's stage k is stage p + k (on rank p − 1 − k) — the
 * V placement of placement.ts, but with stage p starting a second model
 * rather than continuing the first. Micro-batches 0 … m/2 − 1 run through copy
 * 0 and m/2 … m − 1 through copy 1 (DualPipe's example: the first half of the
 * batch enters rank 0, the second half rank p − 1).
 *
 * Each rank walks DualPipe.step's eight phases. Call the copy in which rank r
 * sits in the first half of the pipeline its near copy (copy 0 for r < p/2,
 * copy 1 after; dualpipe.py's phase 0 after `phase ^= is_in_second_half`) and
 * the other its far copy (phase 1). With h = min(r, p − 1 − r), P = p/2 and
 * H = m/2:
 *
 *   1. 2(P−h−1) forwards of near
 *   2. h+1 pairs F(near) F(far)
 *   3. P−h−1 triples I(far) W F(far)         (zero bubble: B split, its W at once)
 *   4. H−p+h+1 quadruples F(near) B(far) F(far) B(near)
 *                                           (DualPipe overlaps each F with the B
 *                                           beside it; here one runs after the other)
 *   5. P−h−1 triples B(far) F(far) B(near)
 *   6. h+1 pairs B(far) B(near), the second half split into I with W deferred
 *   7. P−h−1 pairs W I(near)                 (a deferred W, then a split B)
 *   8. h+1 deferred W's
 *
 * Deferred W's run first-in first-out (DualPipe's WeightGradStore queue). Each
 * copy's forwards and backwards go in micro-batch order. These are the phases
 * of dualpipe-v.ts with p/2 for p, h for r and m/2 for the chunks: DualPipe is
 * two DualPipeV's of p/2 ranks, folded so that each rank runs one stage of
 * each. DualPipe asserts p even and m even, m ≥ 2p (registry.ts checks them).
 */
import { act, stageToRankMap } from '../placement.ts';
import type { Action, Schedule } from '../types.ts';

export function dualPipe(ranks: number, microbatches: number): Schedule {
  const p = ranks;
  const m = microbatches;
  const P = p / 2;
  const H = m / 2;
  const order: Action[][] = [];
  for (let r = 0; r < p; r++) {
    const h = Math.min(r, p - 1 - r);
    // Copy 0's stage r is stage r; copy 1's stage p − 1 − r is stage 2p − 1 − r. Near first, far second.
    const copyStage = [r, 2 * p - 1 - r];
    const near = r < P ? 0 : 1;
    const copyOf = [near, 1 - near];
    const list: Action[] = [];
    const nextF = [0, 0];
    const nextB = [0, 0];
    const deferred: Action[] = [];
    /** The stage and the global micro-batch of the next action of side c (0 near, 1 far) of kind `next`. */
    const take = (c: 0 | 1, next: number[]): [number, number] => {
      const copy = copyOf[c];
      return [copyStage[copy], copy * H + next[c]++];
    };
    const F = (c: 0 | 1): void => {
      const [stage, mb] = take(c, nextF);
      list.push(act(stage, 'F', mb));
    };
    const B = (c: 0 | 1, split = false): void => {
      const [stage, mb] = take(c, nextB);
      if (!split) return void list.push(act(stage, 'B', mb));
      list.push(act(stage, 'I', mb));
      deferred.push(act(stage, 'W', mb));
    };
    const W = (): void => {
      const w = deferred.shift();
      if (!w) throw new Error(`dualpipe: rank ${r} runs a W with none deferred (a bug)`);
      list.push(w);
    };
    for (let i = 0; i < 2 * (P - h - 1); i++) F(0);
    for (let i = 0; i < h + 1; i++) {
      F(0);
      F(1);
    }
    for (let i = 0; i < P - h - 1; i++) {
      B(1, true);
      W();
      F(1);
    }
    for (let i = 0; i < H - p + h + 1; i++) {
      F(0);
      B(1);
      F(1);
      B(0);
    }
    for (let i = 0; i < P - h - 1; i++) {
      B(1);
      F(1);
      B(0);
    }
    let split = false;
    const half = Math.floor((h + 1) / 2);
    for (let i = 0; i < h + 1; i++) {
      if (i === half && h % 2 === 1) split = true;
      B(1, split);
      if (i === half && h % 2 === 0) split = true;
      B(0, split);
    }
    for (let i = 0; i < P - h - 1; i++) {
      W();
      B(0, true);
    }
    for (let i = 0; i < h + 1; i++) W();
    if (deferred.length > 0) throw new Error(`dualpipe: rank ${r} ends with ${deferred.length} W's deferred (a bug)`);
    order.push(list);
  }
  return { name: 'dualpipe', stages: 2 * p, ranks: p, microbatches: m, copies: 2, stageToRank: stageToRankMap(p, 2, 'v'), order };
}
