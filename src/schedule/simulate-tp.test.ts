/**
 * The simulated timeline with tp lanes, worked by hand: every pipeline worker's lane repeated for its t
 * workers, each action's collectives after equal shares of its compute, the last ending the action; the
 * dp rings' peers renumbered into the mesh with tp; the step's numbers untouched by the drawing.
 */
import { describe, expect, it } from 'vitest';
import { laneCount, laneOf, timelineStats, type Interval } from './timeline.ts';
import { generateSchedule } from './registry.ts';
import { simulate } from './simulate.ts';
import { mesh, workerOf } from './mesh.ts';
import { tpStageMessages, type TpCosts } from './tp-cost.ts';

/** One GPT block per stage (2 all-reduces in F, 2 in B), α = 0.1 and free bandwidth: every collective takes 0.1. */
function tpCosts(stages: number, t: number): TpCosts {
  return { t, latency: 0.1, bandwidth: Infinity, bytesPerElement: 4, messages: Array.from({ length: stages }, () => tpStageMessages([{ kind: 'gpt-block', width: 8 }], 2, t)) };
}

const tpOf = (ivs: readonly Interval[], at: Pick<Interval, 'rank' | 'mb' | 'stage'>, j: number) =>
  ivs.filter((iv) => iv.op === 'collective' && iv.rank === at.rank && iv.mb === at.mb && iv.stage === at.stage && (iv.tpRank ?? 0) === j && (iv.replica ?? 0) === 0);

describe('simulated tp lanes', () => {
  it('1F1B p 2 m 3 at t 2: each action on both tp lanes, its collectives after equal shares of its compute', () => {
    const s = generateSchedule('1f1b', 2, 3);
    const r = simulate(s, { F: 1, B: 2, tp: tpCosts(2, 2) });
    expect(r.timeline.tp).toBe(2);
    expect(laneCount(r.timeline)).toBe(4);
    // F = 1 + 2·0.1 = 1.2: rank 0's first F runs [0, 1.2]; its all-reduces [0.5, 0.6] and [1.1, 1.2].
    const f0 = r.timeline.intervals.find((iv) => iv.op === 'F' && iv.rank === 0 && iv.mb === 0 && (iv.tpRank ?? 0) === 0)!;
    expect([f0.start, f0.end]).toEqual([0, expect.closeTo(1.2, 12)]);
    for (const j of [0, 1]) {
      const c = tpOf(r.timeline.intervals, { rank: 0, mb: 0, stage: 0 }, j).filter((iv) => iv.start < 1.25);
      expect(c.map((iv) => [iv.start, iv.end])).toEqual([
        [expect.closeTo(0.5, 12), expect.closeTo(0.6, 12)],
        [expect.closeTo(1.1, 12), expect.closeTo(1.2, 12)],
      ]);
      expect(c.every((iv) => iv.coll === 'tp-all-reduce' && iv.bytes === 2 * 8 * 4)).toBe(true);
    }
    // B = 2 + 0.2 = 2.2 on rank 1 (stage 1), from 2.4 (after F0 on both ranks): collectives at 2.4 + 1.0 and 2.4 + 2.1.
    const b = r.timeline.intervals.find((iv) => iv.op === 'B' && iv.rank === 1 && iv.mb === 0 && (iv.tpRank ?? 0) === 1)!;
    expect([b.start, b.end]).toEqual([expect.closeTo(2.4, 12), expect.closeTo(4.6, 12)]);
    const cb = tpOf(r.timeline.intervals, { rank: 1, mb: 0, stage: 1 }, 1).filter((iv) => iv.start >= b.start - 1e-9 && iv.end <= b.end + 1e-9);
    expect(cb.map((iv) => [iv.start, iv.end])).toEqual([
      [expect.closeTo(3.4, 12), expect.closeTo(3.5, 12)],
      [expect.closeTo(4.5, 12), expect.closeTo(4.6, 12)],
    ]);
    // Every lane the same: compute per lane equal, the bubble the one the result reports.
    const stats = timelineStats(r.timeline);
    expect(stats.perRank.length).toBe(4);
    expect(stats.bubble).toBeCloseTo(r.bubble, 12);
    expect(stats.makespan).toBeCloseTo(r.makespan, 12);
    expect(stats.perRank[0].busy).toBeCloseTo(stats.perRank[1].busy, 12);
    // Without tp lanes the play is the same: t lanes are a drawing, not a different step.
    const flat = simulate(s, { F: 1.2, B: 2.2 });
    expect(r.makespan).toBeCloseTo(flat.makespan, 12);
  });

  it('a split backward: I carries the collectives, W none', () => {
    const s = generateSchedule('zb-h1', 2, 4);
    const r = simulate(s, { F: 1, I: 1, W: 1, tp: tpCosts(2, 4) });
    const ws = r.timeline.intervals.filter((iv) => iv.op === 'W');
    expect(ws.length).toBe(4 * 2 * 4);
    const colls = r.timeline.intervals.filter((iv) => iv.op === 'collective');
    // Per lane: 2 stages × 4 micro-batches × (2 in F + 2 in I) = 32 on each rank; 8 lanes → 128.
    expect(colls.length).toBe(2 * 4 * 4 * 4);
    for (const c of colls) {
      const owner = r.timeline.intervals.find((iv) => (iv.op === 'F' || iv.op === 'I') && iv.rank === c.rank && iv.mb === c.mb && iv.stage === c.stage && (iv.tpRank ?? 0) === (c.tpRank ?? 0) && iv.start <= c.start + 1e-9 && c.end <= iv.end + 1e-9);
      expect(owner).toBeDefined();
    }
  });

  it('dp 2 × p 2 × t 2: the rings per (rank, tp rank) with their peers renumbered into the mesh with tp', () => {
    const s = generateSchedule('1f1b', 2, 2);
    const r = simulate(s, { F: 1, B: 2, dp: 2, gradBytes: 1000, allReduce: { latency: 0.5, bandwidth: Infinity }, tp: tpCosts(2, 2) });
    expect(laneCount(r.timeline)).toBe(8);
    const m = mesh(2, 2, 2);
    const ring = r.timeline.intervals.filter((iv) => iv.op === 'collective' && (iv.coll === 'reduce-scatter' || iv.coll === 'all-gather'));
    expect(ring.length).toBe(8 * 2); // every worker: 2(dp − 1) = 2 exchanges of its stage.
    for (const iv of ring) {
      const d = iv.replica ?? 0;
      expect(iv.peer).toBe(workerOf(m, (d + 1) % 2, iv.rank, iv.tpRank ?? 0));
    }
    // Every one of the 8 lanes holds compute.
    const lanes = new Set(r.timeline.intervals.filter((iv) => iv.op === 'F').map((iv) => laneOf(r.timeline, iv)));
    expect(lanes.size).toBe(8);
  });

  it('on a shared device an action stretches as a whole, its collectives with it', () => {
    const s = generateSchedule('gpipe', 2, 2);
    // 2 ranks on 1 lane: when both compute each runs at half speed.
    const r = simulate(s, { F: 1, B: 2, tp: tpCosts(2, 2), lanes: 1 });
    for (const iv of r.timeline.intervals.filter((x) => x.op === 'F' || x.op === 'B')) {
      const c = tpOf(r.timeline.intervals, iv, iv.tpRank ?? 0).filter((x) => x.start >= iv.start - 1e-9 && x.end <= iv.end + 1e-9);
      expect(c.length).toBe(2);
      const scale = (iv.end - iv.start) / (iv.op === 'F' ? 1.2 : 2.2);
      for (const x of c) expect(x.end - x.start).toBeCloseTo(0.1 * scale, 9);
      expect(c[1].end).toBeCloseTo(iv.end, 12);
    }
  });

  it('t = 1 draws nothing new', () => {
    const s = generateSchedule('1f1b', 2, 2);
    const r = simulate(s, { F: 1, B: 2, tp: tpCosts(2, 1) });
    expect(r.timeline.tp ?? 1).toBe(1);
    expect(r.timeline.intervals.some((iv) => iv.op === 'collective')).toBe(false);
  });
});
