/** A pause cut out of a stream's timeline (stream-pause.ts cutPauses), worked by hand. */
import { describe, expect, it } from 'vitest';
import type { Interval } from '../../schedule/timeline.ts';
import { cutPauses } from './stream-pause.ts';

const iv = (rank: number, op: Interval['op'], start: number, end: number, comm?: Interval['comm']): Interval => ({ rank, stage: rank, op, mb: 0, start, end, ...(comm ? { comm } : {}) });

describe('cutPauses', () => {
  it('cuts from the last end before the resume to the resume: later times move back, a wait across it shrinks', () => {
    // Paused at 12, resumed at 190. Rank 1's forward ends at 15 (it was running when the pause came): the cut is 15 → 190.
    const a = { intervals: [iv(0, 'F', 0, 10), iv(0, 'comm', 10, 200, 'recv-wait'), iv(0, 'B', 200, 210)], stepStart: 0, stepEnd: 215 };
    const b = { intervals: [iv(1, 'F', 5, 15), iv(1, 'B', 192, 199)], stepStart: 5, stepEnd: 199 };
    const [ca, cb] = cutPauses([a, b], [{ from: 12, to: 190 }]);
    expect(ca.intervals.map((x) => [x.start, x.end])).toEqual([[0, 10], [10, 25], [25, 35]]);
    expect([ca.stepStart, ca.stepEnd]).toEqual([0, 40]);
    expect(cb.intervals.map((x) => [x.start, x.end])).toEqual([[5, 15], [17, 24]]);
    // The inputs are left as they were.
    expect(a.intervals[2].start).toBe(200);
  });

  it('two pauses, each cut on its own; a pause in which something ran to its resume cuts nothing', () => {
    const w = { intervals: [iv(0, 'F', 0, 10), iv(0, 'B', 100, 110), iv(0, 'F', 300, 310)], stepStart: 0, stepEnd: 310 };
    const [c] = cutPauses([w], [{ from: 20, to: 100 }, { from: 120, to: 300 }]);
    // Nothing ended inside either pause: each is cut from its start, 20 → 100 (80) and 120 → 300 (180).
    expect(c.intervals.map((x) => [x.start, x.end])).toEqual([[0, 10], [20, 30], [40, 50]]);
    expect(c.stepEnd).toBe(50);
    const busy = { intervals: [iv(0, 'F', 0, 50)], stepStart: 0, stepEnd: 50 };
    expect(cutPauses([busy], [{ from: 10, to: 50 }])[0].intervals[0]).toMatchObject({ start: 0, end: 50 });
  });
});
