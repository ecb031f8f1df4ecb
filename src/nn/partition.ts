/**
 * Cuts a model's blocks into contiguous stages, minimising the cost of the
 * most expensive stage (the pipeline's bottleneck) exactly, by dynamic
 * programming over (blocks, stages): O(stages · blocks²).
 *
 * Costs are one number per block; blockCosts(spec, 'flops') (compute, the
 * default the runtime uses) or blockCosts(spec, 'params') (memory). Ties
 * between cuts with the same bottleneck go to the one whose later stages
 * start earliest, i.e. later stages take the extra blocks (deterministic;
 * under 1F1B earlier stages hold more micro-batches' activations, so they
 * get the lighter share when balance allows). Stages are never empty.
 */
import { ConfigError, requireInt } from '../util/errors.ts';

/** Half-open block ranges [start, end), one per stage, in order. */
export type BlockRange = [number, number];

export function partitionBlocks(numBlocks: number, blockCosts: readonly number[], stages: number): BlockRange[] {
  requireInt('blocks', numBlocks, 1);
  if (blockCosts.length !== numBlocks) {
    throw new ConfigError('blockCosts.length', blockCosts.length, `must equal the number of blocks, ${numBlocks}`);
  }
  blockCosts.forEach((c, i) => {
    if (typeof c !== 'number' || !Number.isFinite(c) || c < 0) throw new ConfigError(`blockCosts[${i}]`, c, 'must be a finite number ≥ 0');
  });
  if (typeof stages !== 'number' || !Number.isInteger(stages) || stages < 1 || stages > numBlocks) {
    throw new ConfigError('stages', stages, `must be an integer from 1 to the number of blocks, ${numBlocks} (a stage holds at least one block)`);
  }
  const n = numBlocks;
  const prefix = [0];
  for (const c of blockCosts) prefix.push(prefix[prefix.length - 1] + c);
  const cost = (a: number, b: number) => prefix[b] - prefix[a];
  // best[s][i]: the least bottleneck for the first i blocks in s stages; cut[s][i]: where stage s starts.
  const best: number[][] = Array.from({ length: stages + 1 }, () => new Array<number>(n + 1).fill(Infinity));
  const cut: number[][] = Array.from({ length: stages + 1 }, () => new Array<number>(n + 1).fill(-1));
  best[0][0] = 0;
  for (let s = 1; s <= stages; s++) {
    for (let i = s; i <= n - (stages - s); i++) {
      for (let j = s - 1; j < i; j++) {
        const v = Math.max(best[s - 1][j], cost(j, i));
        if (v < best[s][i]) {
          best[s][i] = v;
          cut[s][i] = j;
        }
      }
    }
  }
  const ranges: BlockRange[] = [];
  let end = n;
  for (let s = stages; s >= 1; s--) {
    const start = cut[s][end];
    ranges.unshift([start, end]);
    end = start;
  }
  return ranges;
}

/** The most expensive stage's cost under a partition. */
export function bottleneck(ranges: readonly BlockRange[], blockCosts: readonly number[]): number {
  return Math.max(...ranges.map(([a, b]) => blockCosts.slice(a, b).reduce((s, c) => s + c, 0)));
}
