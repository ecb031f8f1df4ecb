import { describe, expect, it } from 'vitest';
import type { Interval, Timeline } from '../../schedule/index.ts';
import { buildLaneIndex, hitTest, visibleRange } from './lane-index.ts';

function tl(intervals: Interval[], ranks = 2): Timeline {
  return { source: 'simulated', ranks, stages: ranks, microbatches: 4, intervals, unit: 'unit' };
}

const iv = (rank: number, start: number, end: number, mb = 0, op: Interval['op'] = 'F'): Interval => ({ rank, stage: rank, op, mb, start, end });

describe('lane index', () => {
  it('sorts intervals per rank and splits compute from communication', () => {
    const idx = buildLaneIndex(tl([iv(0, 5, 6, 1), iv(0, 0, 1, 0), iv(1, 1, 2), { ...iv(1, 0.5, 1.5), op: 'comm', comm: 'transfer', peer: 0 }]));
    expect(Array.from(idx.compute[0].starts)).toEqual([0, 5]);
    expect(idx.comm[1].items).toHaveLength(1);
    expect(idx.hasComm).toBe(true);
    expect([idx.t0, idx.t1]).toEqual([0, 6]);
  });

  it('finds exactly the intervals overlapping a window, also with overlapping comm intervals', () => {
    // A long interval that starts early must not be culled by a later window.
    const items = [iv(0, 0, 10), iv(0, 1, 2), iv(0, 3, 4), iv(0, 11, 12)];
    const lane = buildLaneIndex(tl(items, 1)).compute[0];
    const [from, to] = visibleRange(lane, 5, 6);
    const seen = lane.items.slice(from, to).filter((x) => x.end >= 5 && x.start <= 6);
    expect(seen.map((x) => [x.start, x.end])).toEqual([[0, 10]]);
    const brute = (a: number, b: number) => items.filter((x) => x.end >= a && x.start <= b).length;
    for (const [a, b] of [[0, 1], [2.5, 3.5], [10.5, 11], [12.5, 20], [-5, -1]]) {
      const [f, t] = visibleRange(lane, a, b);
      expect(lane.items.slice(f, t).filter((x) => x.end >= a && x.start <= b).length).toBe(brute(a, b));
    }
  });

  it('hit-tests the interval under a time, and the nearest within the slack', () => {
    const lane = buildLaneIndex(tl([iv(0, 0, 1, 0), iv(0, 2, 3, 1), iv(0, 3, 3.01, 2)], 1)).compute[0];
    expect(hitTest(lane, 0.5)?.mb).toBe(0);
    expect(hitTest(lane, 1.5)).toBeNull();
    expect(hitTest(lane, 1.6, 0.6)?.mb).toBe(1);
    expect(hitTest(lane, 1.4, 0.6)?.mb).toBe(0);
    expect(hitTest(lane, 3.005)?.mb).toBe(2);
  });

  it('indexes 10,000 intervals and answers a window query by binary search', () => {
    const items: Interval[] = [];
    for (let i = 0; i < 10_000; i++) items.push(iv(i % 4, i, i + 0.9, i));
    const idx = buildLaneIndex(tl(items, 4));
    const [from, to] = visibleRange(idx.compute[1], 5000, 5010);
    expect(to - from).toBeLessThanOrEqual(4);
    expect(idx.compute[1].items.slice(from, to).some((x) => x.start === 5001)).toBe(true);
  });
});
