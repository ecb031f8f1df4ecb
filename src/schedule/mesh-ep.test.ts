/**
 * The mesh with an ep axis (DESIGN.md: tp innermost, then ep, then pp, dp outermost): placeOf inverts workerOf, an ep
 * group is ep consecutive workers of one replica and rank, a dp ring keeps its ep rank, and the numbering is the
 * planner's (expertWorkerOf over the dp × ep replicas it draws ep from); lanes and labels follow.
 */
import { describe, expect, it } from 'vitest';
import { epGroup, expertWorkerOf, laneLabel, mesh, placeOf, ringNext, tpGroup, workerCount, workerOf } from './mesh.ts';
import { laneCount, laneOf, withEpLanes, type Timeline } from './timeline.ts';

describe('the mesh with expert parallelism', () => {
  it('numbers workers ((d · ranks + r) · ep + e) · tp + j, placeOf inverting it, the planner’s numbering', () => {
    for (const [dp, ranks, tp, ep] of [[2, 2, 1, 2], [1, 3, 1, 4], [2, 2, 2, 2]]) {
      const m = mesh(dp, ranks, tp, ep);
      expect(workerCount(m)).toBe(dp * ranks * tp * ep);
      const seen = new Set<number>();
      for (let d = 0; d < dp; d++) for (let r = 0; r < ranks; r++) for (let e = 0; e < ep; e++) for (let j = 0; j < tp; j++) {
        const w = workerOf(m, d, r, j, e);
        expect(w).toBe(((d * ranks + r) * ep + e) * tp + j);
        expect(placeOf(m, w)).toEqual({ replica: d, rank: r, tpRank: j, epRank: e });
        // The planner draws ep from dp × ep replicas (ep / tp of them side by side): the same worker.
        expect(expertWorkerOf(mesh(dp * ep, ranks, tp), ep * tp, d * ep + e, r, j)).toBe(w);
        expect(laneOf({ ranks, tp, ep }, { rank: r, replica: d, tpRank: j, epRank: e })).toBe(w);
        seen.add(w);
      }
      expect(seen.size).toBe(workerCount(m));
      expect(laneCount({ ranks, dp, tp, ep })).toBe(workerCount(m));
    }
  });

  it('groups: ep members share a replica, rank and tp rank; a dp ring keeps the ep rank; labels name it', () => {
    const m = mesh(2, 2, 1, 2);
    expect(epGroup(m, 5)).toEqual([4, 5]);
    expect(tpGroup(m, 5)).toEqual([5]);
    expect(ringNext(m, 5)).toBe(1);
    expect(ringNext(m, 1)).toBe(5);
    expect(laneLabel(m, 5)).toBe('d1·R0·e1');
    expect(laneLabel(mesh(1, 2, 1, 2), 3)).toBe('R1·e1');
    expect(mesh(1, 2, 1, 1)).toEqual({ dp: 1, ranks: 2, tp: 1 });
    expect(() => mesh(1, 2, 1, 0)).toThrow(/^ep = 0: must be a whole number ≥ 1/);
  });

  it('a pipeline timeline played by ep workers alike: each interval on every ep lane', () => {
    const t: Timeline = { source: 'simulated', ranks: 2, dp: 2, stages: 2, microbatches: 1, unit: 'unit', intervals: [{ rank: 1, replica: 1, stage: 1, op: 'F', mb: 0, start: 0, end: 1 }] };
    expect(withEpLanes(t, 1)).toBe(t);
    const e = withEpLanes(t, 2);
    expect(laneCount(e)).toBe(8);
    expect(e.intervals.map((iv) => laneOf(e, iv))).toEqual([workerOf(mesh(2, 2, 1, 2), 1, 1, 0, 0), workerOf(mesh(2, 2, 1, 2), 1, 1, 0, 1)]);
  });
});
