/**
 * The three ways the page cuts a model, side by side under one profile: by
 * block count (equal blocks per stage), by FLOPs (what runs use today), and by
 * measured time (planPartition: the optimal cut for the profile's own F + B +
 * communication). Each with its per-stage time under the profile, so the
 * difference shows as bars.
 */
import { partitionBlocks, type BlockRange } from '../nn/partition.ts';
import { planPartition, stageTimeOf } from './partition.ts';
import type { Profile } from './profile.ts';

export const SPLIT_BY = ['blocks', 'flops', 'measured'] as const;
export type SplitBy = (typeof SPLIT_BY)[number];

export interface SplitView {
  by: SplitBy;
  ranges: BlockRange[];
  /** F + B + cut communication of each stage under the profile. */
  stageTime: number[];
  bottleneck: number;
}

/** `flops`: one FLOPs cost per block (blockCosts(spec)). */
export function splitsOf(profile: Profile, flops: readonly number[], ranks: number): SplitView[] {
  const n = profile.blocks.length;
  const cuts: Record<SplitBy, BlockRange[]> = {
    blocks: partitionBlocks(n, new Array<number>(n).fill(1), ranks),
    flops: partitionBlocks(n, flops, ranks),
    measured: planPartition(profile, ranks).ranges,
  };
  return SPLIT_BY.map((by) => {
    const stageTime = cuts[by].map((r) => stageTimeOf(profile, r));
    return { by, ranges: cuts[by], stageTime, bottleneck: Math.max(...stageTime) };
  });
}
