/** Where each update policy reads a stage's gradients: the points sequence parallelism sums its LayerNorms' gradients at. */
import { describe, expect, it } from 'vitest';
import { generateSchedule } from '../schedule/index.ts';
import { formatAction as actionText } from '../schedule/action-text.ts';
import { gradReadPoints } from './grad-read-points.ts';

describe('gradReadPoints', () => {
  it('a flush reads each stage once, after its last B or W of the step; ZeRO-2/3 after every one', () => {
    // ZB-H1, 2 ranks, 4 micro-batches: rank 0 holds stage 0 and ends the step with its deferred W's.
    const s = generateSchedule('zb-h1', 2, 4);
    for (const order of s.order) {
      const at = gradReadPoints('flush', false, order, 4);
      const points = order.filter(at).map(actionText);
      const stage = order[0].stage;
      const lastW = order.filter((a) => a.op === 'W').at(-1)!;
      expect(points).toEqual([actionText(lastW)]);
      expect(lastW.stage).toBe(stage);
      const sharded = gradReadPoints('flush', true, order, 4);
      expect(order.filter(sharded).map((a) => a.op)).toEqual(order.filter((a) => a.op === 'B' || a.op === 'W').map((a) => a.op));
      // I writes no weight gradient, F none.
      expect(order.filter((a) => a.op === 'I' || a.op === 'F').some(sharded)).toBe(false);
    }
    // Interleaved: each of a rank's stages its own last backward.
    const v = generateSchedule('interleaved-1f1b', 2, 4, 2);
    const at = gradReadPoints('flush', false, v.order[0], 4);
    expect(new Set(v.order[0].filter(at).map((a) => a.stage))).toEqual(new Set(v.order[0].map((a) => a.stage)));
    expect(v.order[0].filter(at)).toHaveLength(2);
  });

  it('PipeDream reads after every backward, PipeDream-2BW after the last of each block of m', () => {
    // A stream of 3 steps × 4 micro-batches, as the stream's window orders it.
    const s = generateSchedule('pipedream-2bw', 2, 12);
    for (const order of s.order) {
      const backs = order.filter((a) => a.op === 'B');
      const pd = gradReadPoints('stash-and-update-after-backward', false, order, 4);
      expect(order.filter(pd)).toEqual(backs);
      const bw = gradReadPoints('double-buffered', false, order, 4);
      expect(order.filter(bw).map((a) => a.mb)).toEqual([3, 7, 11]);
    }
  });
});
