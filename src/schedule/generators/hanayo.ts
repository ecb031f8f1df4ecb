/**
 * Hanayo's waves (Liu et al., SC '23, "Hanayo: Harnessing Wave-like Pipeline
 * Parallelism for Enhanced Large Model Training Efficiency": wave-like pipeline
 * parallelism without the model copies of Chimera). The paper's text is not to
 * be had here: this schedule is BUILT FROM THAT PUBLIC DESCRIPTION, NOT
 * TRANSCRIBED FROM THE PAPER, and its order is not claimed to be the paper's.
 *
 * Placement: the model is cut into 2·W·p stages laid out in W waves that
 * zig-zag across the ranks, down the ranks and back up, W times
 * (placement.ts's 'v' placement with v = 2W chunks per rank): stage s is
 * chunk c = ⌊s/p⌋ at position q = s mod p of its run, on rank q when c is
 * even (down) and on rank p − 1 − q when c is odd (up). W = 1 is the V of
 * ZB-V and DualPipe-V. Rank 0 holds the first and the last stage; a wave's
 * turns (stages p − 1 and p on rank p − 1, 2p − 1 and 2p on rank 0, …) need
 * no message.
 *
 * Order: 1F1B's steady state over the waves. Time is cut into slots, each
 * one F followed by one B on every rank. Micro-batches go in rounds of p
 * (micro-batch j is the i = j mod p-th of round k = ⌊j/p⌋; a last round of
 * m mod p is laid out as if it were whole):
 *
 *   F of stage (c, q), micro-batch j   in slot (k·v + c)·p + q + 2i
 *   B of stage (c, q), micro-batch j   in slot v·p − 1 + (k·v + c′)·p + q′ + 2i,
 *                                      c′ = v − 1 − c, q′ = p − 1 − q
 *
 * and each rank runs its actions in slot order, a slot's F before its B. The
 * backward is the forward's mirror: it runs the stages in reverse, which is
 * again a zig-zag of v chunks. Within a round a rank's down chunks take the
 * slots of one parity (q + 2i, q = r) and its up chunks the other
 * (q + 2i, q = p − 1 − r), each chunk a window of 2p slots after the one
 * before of its parity, so no two F's (nor two B's) of a rank share a slot
 * once the waves are full: every slot holds one F and one B in the steady
 * state, as in 1F1B, and the slots before a rank's first B are its warm-up.
 *
 * Deadlock-free under any costs: every input comes from an earlier slot (the
 * next stage's F one slot later, at a turn as well as across ranks; the next
 * B one slot later; the last stage's B, slot v·p − 1 + (k·v)·p + 2i, in the
 * slot of its own F or after), so each rank's order and every dependency run
 * forward in slot order and there is no cycle. The validator proves it in the
 * tests over p, m and W.
 *
 * Cost (F = 1, B = 2 per stage, free links; theory.ts, checked against the
 * simulator in hanayo.test.ts): makespan 3·v·m + 4(p − 1) when m is a
 * multiple of p (idle time 4(p − 1) per rank, interleaved 1F1B's at the same
 * v being 3(p − 1): 4/3 of it), and each rank holds at most v·p stage
 * activations, p micro-batches of its share of the model, on every rank
 * (interleaved 1F1B's first rank holds v·p + p − 1).
 */
import { act, stageToRankMap } from '../placement.ts';
import type { Action, Schedule } from '../types.ts';

/** Hanayo with `waves` waves on `ranks` ranks (2·waves·ranks stages), `microbatches` micro-batches. */
export function hanayo(ranks: number, microbatches: number, waves: number): Schedule {
  const p = ranks;
  const m = microbatches;
  const v = 2 * waves;
  const S = p * v;
  const stageToRank = stageToRankMap(p, v, 'v');
  // Per rank, one number per action: (slot · 2 + [B]) · S + stage, sorted; two actions of a rank in one slot part are
  // independent (an input is always a slot part earlier), and the stage orders them.
  const keys = Array.from({ length: p }, () => new Float64Array(2 * v * m));
  const fill = new Int32Array(p);
  for (let j = 0; j < m; j++) {
    const k = Math.floor(j / p);
    const i = j % p;
    for (let s = 0; s < S; s++) {
      const c = Math.floor(s / p);
      const q = s % p;
      const r = stageToRank[s];
      const fSlot = (k * v + c) * p + q + 2 * i;
      const bSlot = v * p - 1 + (k * v + (v - 1 - c)) * p + (p - 1 - q) + 2 * i;
      keys[r][fill[r]++] = 2 * fSlot * S + s;
      keys[r][fill[r]++] = (2 * bSlot + 1) * S + s;
    }
  }
  const order = keys.map((list) => {
    list.sort();
    return Array.from(list, (key): Action => {
      const s = key % S;
      const part = (key - s) / S;
      const isB = part % 2 === 1;
      const slot = (part - (isB ? 1 : 0)) / 2;
      const c = Math.floor(s / p);
      const q = s % p;
      // The slot less the stage's offset is k·v·p + 2i with 2i < 2p ≤ v·p: the round k and i follow.
      const rest = isB ? slot - (v * p - 1) - (v - 1 - c) * p - (p - 1 - q) : slot - c * p - q;
      const k = Math.floor(rest / (v * p));
      return act(s, isB ? 'B' : 'F', k * p + (rest - k * v * p) / 2);
    });
  });
  return { name: 'hanayo', stages: S, ranks: p, microbatches: m, stageToRank, order };
}
