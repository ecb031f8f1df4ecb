import { describe, expect, it } from 'vitest';
import type { Interval } from '../../schedule/timeline.ts';
import { epWaitsOf, withEpWaits } from './report-ep-wait.ts';
import { epOwner, epReceived, type MoeLayerLoad } from './report-moe-load.ts';

const a2a = (stage: number, epRank: number, start: number, end: number, replica = 0): Interval => ({ rank: stage, stage, epRank, replica, op: 'collective', coll: 'ep-all-to-all', mb: 0, start, end });

describe('ep all-to-all waits', () => {
  it('each member waits from its start to the last member’s start, within its own interval', () => {
    // Exchange 1 of stage 0: member 1 enters last at 5; member 0 waited 5 − 1 = 4 of its 6, member 2 5 − 3 = 2 of its 3.
    // Exchange 2: member 0 enters last at 20; member 1 (entered at 12, done at 15: its end comes first, a clock's
    // skew) waits only its whole interval, 3; member 2 waits 20 − 14 = 6.
    const ivs: Interval[] = [
      a2a(0, 0, 1, 7), a2a(0, 1, 5, 7), a2a(0, 2, 3, 6),
      a2a(0, 0, 20, 21), a2a(0, 1, 12, 15), a2a(0, 2, 14, 21),
      { rank: 0, stage: 0, epRank: 0, op: 'F', mb: 0, start: 0, end: 1 },
      { rank: 0, stage: 0, epRank: 1, op: 'collective', coll: 'ep-all-reduce', mb: 0, start: 30, end: 31 },
    ];
    const out = withEpWaits(ivs);
    expect(out.map((iv) => iv.wait)).toEqual([4, 0, 2, 0, 3, 6, undefined, undefined]);
    // The others are the same objects; the input is not changed.
    expect(out[6]).toBe(ivs[6]);
    expect(ivs[0].wait).toBeUndefined();
    expect(epWaitsOf({ intervals: out })).toEqual([
      { replica: 0, rank: 0, stage: 0, epRank: 0, waitMs: 4, allToAllMs: 7, exchanges: 2 },
      { replica: 0, rank: 0, stage: 0, epRank: 1, waitMs: 3, allToAllMs: 5, exchanges: 2 },
      { replica: 0, rank: 0, stage: 0, epRank: 2, waitMs: 8, allToAllMs: 10, exchanges: 2 },
    ]);
  });

  it('groups by replica and stage, matches by order, and gives nothing where the members’ counts differ', () => {
    const ivs: Interval[] = [
      // Given out of order: matched by start within each member.
      a2a(0, 0, 10, 12), a2a(0, 0, 0, 4), a2a(0, 1, 2, 4), a2a(0, 1, 11, 12),
      // Replica 1's group of stage 0 is its own: member 1 is late by 7.
      a2a(0, 0, 0, 9, 1), a2a(0, 1, 7, 9, 1),
      // Stage 1: member 1 logged one exchange fewer: no wait given.
      a2a(1, 0, 0, 1), a2a(1, 0, 2, 3), a2a(1, 1, 0, 1),
    ];
    const out = withEpWaits(ivs);
    expect(out.map((iv) => iv.wait)).toEqual([1, 2, 0, 0, 7, 0, undefined, undefined, undefined]);
    expect(epWaitsOf({ intervals: out }).map((w) => [w.replica, w.stage, w.epRank, w.waitMs])).toEqual([
      [0, 0, 0, 3],
      [0, 0, 1, 0],
      [1, 0, 0, 7],
      [1, 0, 1, 0],
    ]);
  });

  it('an expert’s owner and the tokens each member received: kept first and second choices of its experts', () => {
    expect([0, 1, 2, 3, 4, 5].map((e) => epOwner(e, 6, 3))).toEqual([0, 0, 1, 1, 2, 2]);
    const l: MoeLayerLoad = {
      layer: 'block0.moe', stage: 0, experts: 4,
      columns: [{ replica: 0, mb: 0, worker: 0, capacity: 3 }, { replica: 0, mb: 1, worker: 0, capacity: 3 }],
      first: [[3, 1, 0, 0], [1, 1, 1, 1]],
      second: [[1, 2, 1, 0], [0, 0, 2, 2]],
      dropped: [[1, 0, 0, 0], [0, 0, 0, 0]],
    };
    // mb 0: experts 0, 1 on member 0: (3 + 1 − 1) + (1 + 2) = 6; experts 2, 3: 1. mb 1: 2 and 6.
    expect(epReceived(l, 2)).toEqual([[6, 1], [2, 6]]);
    expect(epReceived(l, 4)).toEqual([[3, 3, 1, 0], [1, 1, 3, 3]]);
  });
});
