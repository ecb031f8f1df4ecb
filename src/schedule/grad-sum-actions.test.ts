/** Where each update policy reads a stage's gradients (registry.ts gradSumEvery, tp-cost.ts gradSumActions): the actions sequence parallelism's LayerNorm gradient sum ends. */
import { describe, expect, it } from 'vitest';
import { formatAction } from './action-text.ts';
import { generateSchedule, gradSumEvery } from './registry.ts';
import { gradSumActions, gradSumKey } from './tp-cost.ts';
import type { Action } from './types.ts';

const picked = (order: readonly Action[], every: number | undefined) => {
  const at = gradSumActions([order], every);
  return order.filter((a) => at.has(gradSumKey(a)));
};

describe('gradSumEvery and gradSumActions', () => {
  it('a flush reads each stage once, after its last B or W of the step; ZeRO-2/3 over replicas after every one', () => {
    expect(gradSumEvery('flush', { dp: 1, zero: 0 }, 4)).toBeUndefined();
    expect(gradSumEvery('flush', { dp: 2, zero: 1 }, 4)).toBeUndefined();
    expect(gradSumEvery('flush', { dp: 2, zero: 2 }, 4)).toBe(1);
    // ZB-H1, 2 ranks, 4 micro-batches: each rank ends the step with its deferred W's.
    for (const order of generateSchedule('zb-h1', 2, 4).order) {
      const lastW = order.filter((a) => a.op === 'W').at(-1)!;
      expect(picked(order, undefined).map(formatAction)).toEqual([formatAction(lastW)]);
      // Every B and W, never an I (it writes no weight gradient) or an F.
      expect(picked(order, 1)).toEqual(order.filter((a) => a.op === 'B' || a.op === 'W'));
    }
    // Interleaved: each of a rank's stages its own last backward.
    const v = generateSchedule('interleaved-1f1b', 2, 4, 2).order[0];
    expect(picked(v, undefined).map((a) => a.stage).sort()).toEqual([...new Set(v.map((a) => a.stage))].sort());
  });

  it('PipeDream reads after every backward, PipeDream-2BW after the last of each block of m', () => {
    expect(gradSumEvery('stash-and-update-after-backward', { dp: 1, zero: 0 }, 4)).toBe(1);
    expect(gradSumEvery('double-buffered', { dp: 2, zero: 0 }, 4)).toBe(4);
    // A stream of 3 steps × 4 micro-batches, as the stream's window orders it.
    for (const order of generateSchedule('pipedream-2bw', 2, 12).order) {
      expect(picked(order, 1)).toEqual(order.filter((a) => a.op === 'B'));
      expect(picked(order, 4).map((a) => a.mb)).toEqual([3, 7, 11]);
    }
  });
});
