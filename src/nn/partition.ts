/**
 * Cuts a model's blocks into contiguous stages, minimising the cost of the
 * most expensive stage (the pipeline's bottleneck) exactly, by dynamic
 * programming over (blocks, stages): O(stages · blocks²), as PipeDream's
 * partitioner does.
 *
 * A stage's cost is the sum of its blocks' costs plus, when `comm` is given,
 * the communication at each of its two cuts (comm[i]: the boundary after block
 * i; a stage [a, b) pays comm[a−1] when a > 0 and comm[b−1] when b < n). With
 * `memory` and `memCap`, a stage s may hold only blocks whose memory, times
 * `memoryFactor(s)` (e.g. the micro-batches in flight on its rank under
 * 1F1B), fits the cap.
 *
 * Costs are one number per block; blockCosts(spec, 'flops') (compute, the
 * default the runtime uses) or blockCosts(spec, 'params') (memory), or a
 * measured profile (src/plan). Ties between cuts with the same bottleneck go
 * to the one whose later stages start earliest, i.e. later stages take the
 * extra blocks (deterministic; under 1F1B earlier stages hold more
 * micro-batches' activations, so they get the lighter share when balance
 * allows). Stages are never empty.
 */
import { ConfigError, requireInt } from '../util/errors.ts';

/** Half-open block ranges [start, end), one per stage, in order. */
export type BlockRange = [number, number];

export interface PartitionCosts {
  /** Compute per block. */
  compute: readonly number[];
  /** Communication across the boundary after block i, n − 1 entries; none when left out. */
  comm?: readonly number[];
  /** Memory per block, checked against memCap. */
  memory?: readonly number[];
  /** The most memory a stage may hold; no limit when left out. */
  memCap?: number;
  /** Multiplies stage s's memory (default 1). */
  memoryFactor?: (stage: number) => number;
}

function checkList(field: string, xs: readonly number[] | undefined, length: number, rule: string): void {
  if (xs === undefined) return;
  if (!Array.isArray(xs) || xs.length !== length) throw new ConfigError(`${field}.length`, Array.isArray(xs) ? xs.length : xs, rule);
  xs.forEach((c, i) => {
    if (typeof c !== 'number' || !Number.isFinite(c) || c < 0) throw new ConfigError(`${field}[${i}]`, c, 'must be a finite number ≥ 0');
  });
}

/** The cheapest bottleneck and its cut, or, when no cut fits memCap, the smallest cap that would. */
export type PartitionResult = { ok: true; ranges: BlockRange[]; bottleneck: number } | { ok: false; smallestCap: number };

export function partitionWith(c: PartitionCosts, stages: number): PartitionResult {
  const n = Array.isArray(c.compute) ? c.compute.length : 0;
  requireInt('blocks', n, 1);
  checkList('blockCosts', c.compute, n, `must equal the number of blocks, ${n}`);
  checkList('comm', c.comm, n - 1, `must list one cost per boundary between blocks, ${n - 1}`);
  checkList('memory', c.memory, n, `must equal the number of blocks, ${n}`);
  if (typeof stages !== 'number' || !Number.isInteger(stages) || stages < 1 || stages > n) {
    throw new ConfigError('stages', stages, `must be an integer from 1 to the number of blocks, ${n} (a stage holds at least one block)`);
  }
  if (c.memCap !== undefined && (typeof c.memCap !== 'number' || Number.isNaN(c.memCap) || c.memCap <= 0)) {
    throw new ConfigError('memCap', c.memCap, 'must be a number greater than 0');
  }
  const prefix = [0];
  for (const x of c.compute) prefix.push(prefix[prefix.length - 1] + x);
  const memPrefix = [0];
  for (const x of c.memory ?? []) memPrefix.push(memPrefix[memPrefix.length - 1] + x);
  const comm = c.comm;
  const factor = c.memoryFactor ?? (() => 1);
  const cost = (a: number, b: number) => prefix[b] - prefix[a] + (comm && a > 0 ? comm[a - 1] : 0) + (comm && b < n ? comm[b - 1] : 0);
  const mem = (a: number, b: number, s: number) => (c.memory ? (memPrefix[b] - memPrefix[a]) * factor(s) : 0);
  const solve = (score: (a: number, b: number, s: number) => number): { best: number[][]; cut: number[][] } => {
    // best[s][i]: the least bottleneck for the first i blocks in s stages; cut[s][i]: where stage s starts.
    const best: number[][] = Array.from({ length: stages + 1 }, () => new Array<number>(n + 1).fill(Infinity));
    const cut: number[][] = Array.from({ length: stages + 1 }, () => new Array<number>(n + 1).fill(-1));
    best[0][0] = 0;
    for (let s = 1; s <= stages; s++) {
      for (let i = s; i <= n - (stages - s); i++) {
        for (let j = s - 1; j < i; j++) {
          const v = Math.max(best[s - 1][j], score(j, i, s - 1));
          if (v < best[s][i]) {
            best[s][i] = v;
            cut[s][i] = j;
          }
        }
      }
    }
    return { best, cut };
  };
  const cap = c.memCap;
  const { best, cut } = solve(cap === undefined || !c.memory ? cost : (a, b, s) => (mem(a, b, s) <= cap ? cost(a, b) : Infinity));
  if (!Number.isFinite(best[stages][n])) {
    return { ok: false, smallestCap: solve(mem).best[stages][n] };
  }
  const ranges: BlockRange[] = [];
  let end = n;
  for (let s = stages; s >= 1; s--) {
    const start = cut[s][end];
    ranges.unshift([start, end]);
    end = start;
  }
  return { ok: true, ranges, bottleneck: best[stages][n] };
}

/** The cut that minimises the most expensive stage's summed block cost. */
export function partitionBlocks(numBlocks: number, blockCosts: readonly number[], stages: number): BlockRange[] {
  requireInt('blocks', numBlocks, 1);
  if (blockCosts.length !== numBlocks) {
    throw new ConfigError('blockCosts.length', blockCosts.length, `must equal the number of blocks, ${numBlocks}`);
  }
  const r = partitionWith({ compute: blockCosts }, stages);
  if (!r.ok) throw new Error('partitionBlocks: no cut without a memory cap (a bug)');
  return r.ranges;
}

/** The most expensive stage's cost under a partition. */
export function bottleneck(ranges: readonly BlockRange[], blockCosts: readonly number[]): number {
  return Math.max(...ranges.map(([a, b]) => blockCosts.slice(a, b).reduce((s, c) => s + c, 0)));
}
