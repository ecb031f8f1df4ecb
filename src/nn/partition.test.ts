/** partitionBlocks against brute force over every contiguous cut, and its errors. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { buildModelSpec } from './model-config.ts';
import { blockCosts } from './model-spec.ts';
import { bottleneck, partitionBlocks } from './partition.ts';
import type { BlockRange } from './partition.ts';

/** Every way to cut n blocks into s non-empty contiguous ranges. */
function allCuts(n: number, s: number, start = 0): BlockRange[][] {
  if (s === 1) return [[[start, n]]];
  const out: BlockRange[][] = [];
  for (let end = start + 1; end <= n - (s - 1); end++) for (const rest of allCuts(n, s - 1, end)) out.push([[start, end], ...rest]);
  return out;
}

describe('partitionBlocks', () => {
  it('finds the least bottleneck of all contiguous cuts (property, vs brute force)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: 1000 }), { minLength: 1, maxLength: 9 }).chain((costs) => fc.tuple(fc.constant(costs), fc.integer({ min: 1, max: costs.length }))),
        ([costs, stages]) => {
          const ranges = partitionBlocks(costs.length, costs, stages);
          expect(ranges).toHaveLength(stages);
          expect(ranges[0][0]).toBe(0);
          expect(ranges.at(-1)?.[1]).toBe(costs.length);
          ranges.forEach(([a, b], i) => {
            expect(b).toBeGreaterThan(a);
            if (i > 0) expect(a).toBe(ranges[i - 1][1]);
          });
          const best = Math.min(...allCuts(costs.length, stages).map((c) => bottleneck(c, costs)));
          expect(bottleneck(ranges, costs)).toBe(best);
        },
      ),
      { numRuns: 300, seed: 42 },
    );
  });

  it('examples: equal costs split evenly, later stages take the remainder, a heavy block stands alone', () => {
    expect(partitionBlocks(4, [1, 1, 1, 1], 2)).toEqual([[0, 2], [2, 4]]);
    expect(partitionBlocks(5, [1, 1, 1, 1, 1], 2)).toEqual([[0, 2], [2, 5]]);
    expect(partitionBlocks(4, [1, 10, 1, 1], 3)).toEqual([[0, 1], [1, 2], [2, 4]]);
    expect(partitionBlocks(3, [5, 5, 5], 3)).toEqual([[0, 1], [1, 2], [2, 3]]);
    expect(partitionBlocks(3, [5, 5, 5], 1)).toEqual([[0, 3]]);
  });

  it('balances a real model by FLOPs', () => {
    const spec = buildModelSpec({ model: 'char-mlp', dataset: 'names', hidden: 128, layers: 5, activation: 'gelu', context: 4, embedDim: 16 });
    const costs = blockCosts(spec);
    // block0: 2·64·128 + …, blocks 1-4: 2·128·128 + …, head: 2·128·28 + ….
    expect(costs[1]).toBeGreaterThan(costs[0]);
    expect(costs[5]).toBeLessThan(costs[0]);
    const ranges = partitionBlocks(costs.length, costs, 3);
    expect(bottleneck(ranges, costs)).toBeLessThanOrEqual(2 * costs[1] + costs[5]);
  });

  it('rejects more stages than blocks, and other bad input, naming the field, value and rule', () => {
    expect(() => partitionBlocks(3, [1, 1, 1], 4)).toThrow('stages = 4: must be an integer from 1 to the number of blocks, 3 (a stage holds at least one block)');
    expect(() => partitionBlocks(3, [1, 1, 1], 0)).toThrow('stages = 0: must be an integer from 1 to the number of blocks, 3');
    expect(() => partitionBlocks(3, [1, 1, 1], 1.5)).toThrow('stages = 1.5: must be an integer from 1');
    expect(() => partitionBlocks(3, [1, 1], 2)).toThrow('blockCosts.length = 2: must equal the number of blocks, 3');
    expect(() => partitionBlocks(2, [1, NaN], 2)).toThrow('blockCosts[1] = NaN: must be a finite number ≥ 0');
    expect(() => partitionBlocks(0, [], 1)).toThrow('blocks = 0: must be an integer at least 1');
  });
});
