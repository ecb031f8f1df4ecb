import { describe, expect, it } from 'vitest';
import { parseProfile } from './profile.ts';
import { splitsOf } from './splits.ts';

describe('splits side by side', () => {
  it('cuts by blocks, by FLOPs and by measured time; the measured cut has the least bottleneck', () => {
    // FLOPs say the blocks are equal; the measurement says the head is heavy (as in the names models).
    const profile = parseProfile({ unit: 'ms', blocks: [1, 1, 1, 1, 1, 5].map((k) => ({ F: k, I: k, W: k })), comm: [0, 0, 0, 0, 0] });
    const [blocks, flops, measured] = splitsOf(profile, [10, 10, 10, 10, 10, 10], 3);
    expect(blocks).toMatchObject({ by: 'blocks', ranges: [[0, 2], [2, 4], [4, 6]], stageTime: [6, 6, 18], bottleneck: 18 });
    expect(flops.ranges).toEqual([[0, 2], [2, 4], [4, 6]]);
    expect(measured).toMatchObject({ by: 'measured', bottleneck: 15 });
    expect(measured.ranges.at(-1)).toEqual([5, 6]);
    expect(measured.stageTime.reduce((a, b) => a + b, 0)).toBe(30);
  });
});
