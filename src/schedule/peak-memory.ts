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
  const out: RankMemory[] = [];
  for (let r = 0; r < s.ranks; r++) {
    let held = 0;
    let bytes = 0;
    let peakHeld = 0;
    let peakBytes = 0;
    for (const a of s.order[r]) {
      const b = heldBytes ? heldBytes[a.stage] : 0;
      if (a.op === 'F') {
        held++;
        bytes += b;
        if (held > peakHeld) peakHeld = held;
        if (bytes > peakBytes) peakBytes = bytes;
      } else if (a.op === 'B') {
        held--;
        bytes -= b;
      } else if (a.op === 'I') {
        if (afterInput) bytes -= b - afterInput[a.stage];
        // What W needs can outweigh what I frees (with recomputation, the forward's tensors are back for W).
        if (bytes > peakBytes) peakBytes = bytes;
      } else {
        held--;
        bytes -= afterInput ? afterInput[a.stage] : b;
      }
    }
    out.push({ rank: r, peakMicrobatches: peakHeld, peakBytes });
  }
  return out;
}
