/**
 * Where stages live. Plain and looped placements put stage s on rank s mod p
 * (Megatron's interleaving; PyTorch's "loop" style); the V placement of
 * ZB-V / DualPipe-V puts stage s on rank s for s < p and on rank 2p−1−s after
 * (PyTorch's "v" style), so the first and last stage share rank 0.
 */
import type { Action, Op } from './types.ts';

export type Placement = 'loop' | 'v';

export function stageToRankMap(ranks: number, virtual: number, placement: Placement): number[] {
  const stages = ranks * virtual;
  const out = new Array<number>(stages);
  for (let s = 0; s < stages; s++) {
    if (placement === 'loop') {
      out[s] = s % ranks;
    } else {
      // Zig-zag: down the ranks, back up, down again... (v = 2 is the V).
      const lap = Math.floor(s / ranks);
      const pos = s % ranks;
      out[s] = lap % 2 === 0 ? pos : ranks - 1 - pos;
    }
  }
  return out;
}

/** Stages held by each rank, in increasing stage order. */
export function stagesOfRanks(stageToRank: readonly number[], ranks: number): number[][] {
  const out: number[][] = Array.from({ length: ranks }, () => []);
  stageToRank.forEach((r, s) => out[r]?.push(s));
  return out;
}

export function act(stage: number, op: Op, mb: number): Action {
  return { stage, op, mb };
}
