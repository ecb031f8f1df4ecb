/**
 * Peak activation memory per rank, read off a schedule's action order (a
 * rank's order is also its time order): a stage keeps heldBytes for each
 * micro-batch from the start of its F until the end of its B, or, when the
 * backward is split, until the end of its W (the zero-bubble paper's
 * accounting); with `afterInput`, a split backward frees all but that many
 * bytes at the end of its I, the rest at its W.
 */
import type { Schedule } from './types.ts';

export interface RankMemory {
  rank: number;
  /** Most (stage, micro-batch) activations held at once. */
  peakMicrobatches: number;
  /** Most bytes held at once. */
  peakBytes: number;
}

/** Peak activations per rank: held from F until B, or until W when the backward is split (all but `afterInput` freed at I). */
export function peakMemory(s: Schedule, heldBytes?: Float64Array, afterInput?: Float64Array): RankMemory[] {
  return walk(s, heldBytes, afterInput, false).ranks;
}

/** Each stage's own peak bytes, the other stages on its rank aside (what a stage measures of its stash). */
export function stagePeakBytes(s: Schedule, heldBytes: Float64Array, afterInput?: Float64Array): number[] {
  return walk(s, heldBytes, afterInput).stages;
}

/** One pass over every rank's order: the rank's peaks, and each stage's own peak bytes. */
function walk(s: Schedule, heldBytes?: Float64Array, afterInput?: Float64Array, perStage = true): { ranks: RankMemory[]; stages: number[] } {
  const ranks: RankMemory[] = [];
  const stageBytes = new Float64Array(s.stages);
  const stages = new Array<number>(s.stages).fill(0);
  for (let r = 0; r < s.ranks; r++) {
    let held = 0;
    let bytes = 0;
    let peakHeld = 0;
    let peakBytes = 0;
    for (const a of s.order[r]) {
      const b = heldBytes ? heldBytes[a.stage] : 0;
      // The bytes this action adds (F; I where W keeps more than I frees) or frees.
      let d: number;
      if (a.op === 'F') {
        held++;
        d = b;
        if (held > peakHeld) peakHeld = held;
      } else if (a.op === 'B') {
        held--;
        d = -b;
      } else if (a.op === 'I') {
        // What W needs can outweigh what I frees (with recomputation, the forward's tensors are back for W).
        d = afterInput ? afterInput[a.stage] - b : 0;
      } else {
        held--;
        d = -(afterInput ? afterInput[a.stage] : b);
      }
      bytes += d;
      if (bytes > peakBytes) peakBytes = bytes;
      if (!perStage) continue;
      stageBytes[a.stage] += d;
      if (stageBytes[a.stage] > stages[a.stage]) stages[a.stage] = stageBytes[a.stage];
    }
    ranks.push({ rank: r, peakMicrobatches: peakHeld, peakBytes });
  }
  return { ranks, stages };
}
