import { describe, expect, it } from 'vitest';
import { ConfigError } from '../util/errors.ts';
import { parseAction } from './action-text.ts';
import { generateSchedule } from './registry.ts';
import { peakMemory, simulate } from './simulate.ts';
import { bubbleFraction, makespan, rankUsage, timelineStats, type Timeline } from './timeline.ts';
import type { Action, Schedule } from './types.ts';

const A = (t: string): Action => parseAction(t) as Action;
const oneStage = (row: string, m: number): Schedule => ({
  name: 't',
  stages: 1,
  ranks: 1,
  microbatches: m,
  stageToRank: [0],
  order: [row.split(' ').map(A)],
});

describe('simulate', () => {
  it('times 1F1B on 2 ranks by hand: F=1, B=2, free links', () => {
    const r = simulate(generateSchedule('1f1b', 2, 2));
    const iv = (rank: number) => r.timeline.intervals.filter((x) => x.rank === rank).map((x) => [`${x.stage}${x.op}${x.mb}`, x.start, x.end]);
    // rank 0: F0 [0,1] F1 [1,2] then B0 once rank 1's B0 is done at 4, B1 after rank 1's B1 at 7.
    expect(iv(0)).toEqual([
      ['0F0', 0, 1],
      ['0F1', 1, 2],
      ['0B0', 4, 6],
      ['0B1', 7, 9],
    ]);
    expect(iv(1)).toEqual([
      ['1F0', 1, 2],
      ['1B0', 2, 4],
      ['1F1', 4, 5],
      ['1B1', 5, 7],
    ]);
    expect(r.makespan).toBe(9);
    expect(r.busy).toEqual([6, 6]);
    expect(r.idle).toEqual([3, 3]);
    expect(r.bubble).toBeCloseTo(1 / 3, 15);
    expect(r.timeline.source).toBe('simulated');
    expect(r.timeline.unit).toBe('unit');
  });

  it('adds latency and bytes/bandwidth between ranks, and draws the transfer on the receiver', () => {
    const s = generateSchedule('1f1b', 2, 1);
    const r = simulate(s, { latency: 0.5, activationBytes: 100, bandwidth: 50 });
    // F0 on rank 0 ends at 1, arrives at 1 + 0.5 + 2 = 3.5; F,B on rank 1 until 6.5; gradient arrives at 9.
    const compute = r.timeline.intervals.filter((x) => x.op !== 'comm');
    expect(compute.map((x) => [x.rank, x.op, x.start, x.end])).toEqual([
      [0, 'F', 0, 1],
      [0, 'B', 9, 11],
      [1, 'F', 3.5, 4.5],
      [1, 'B', 4.5, 6.5],
    ]);
    const comm = r.timeline.intervals.filter((x) => x.op === 'comm');
    expect(comm).toEqual([
      { rank: 1, stage: 1, op: 'comm', mb: 0, start: 1, end: 3.5, comm: 'transfer', peer: 0 },
      { rank: 0, stage: 0, op: 'comm', mb: 0, start: 6.5, end: 9, comm: 'transfer', peer: 1 },
    ]);
    expect(r.makespan).toBe(11);
    // Only compute counts as busy.
    expect(r.busy).toEqual([3, 3]);
    expect(r.bubble).toBeCloseTo(1 - 6 / 22, 15);
  });

  it('accepts per-link latency and per-stage costs', () => {
    const s = generateSchedule('gpipe', 3, 1);
    const r = simulate(s, { F: [1, 2, 3], B: [1, 1, 1], latency: (from, to) => (from === 0 && to === 1 ? 10 : 0) });
    const f2 = r.timeline.intervals.find((x) => x.stage === 2 && x.op === 'F');
    // 0F0 [0,1], +10 to rank 1, 1F0 [11,13], 2F0 [13,16].
    expect(f2).toMatchObject({ start: 13, end: 16 });
    expect(r.makespan).toBe(19);
  });

  it('charges nothing between stages on the same rank (the tip of a V)', () => {
    const s = generateSchedule('zb-v', 1, 3);
    const r = simulate(s, { latency: 100 });
    expect(r.makespan).toBe(6 * 3);
    expect(r.timeline.intervals.some((x) => x.op === 'comm')).toBe(false);
  });

  it('holds activations until B, or until W when the backward is split', () => {
    expect(peakMemory(oneStage('0F0 0B0 0F1 0B1', 2))[0].peakMicrobatches).toBe(1);
    expect(peakMemory(oneStage('0F0 0I0 0F1 0I1 0W0 0W1', 2))[0].peakMicrobatches).toBe(2);
    expect(peakMemory(oneStage('0F0 0I0 0W0 0F1 0I1 0W1', 2))[0].peakMicrobatches).toBe(1);
    const r = simulate(generateSchedule('interleaved-1f1b', 2, 2, 2), { activationBytes: [10, 20, 30, 40], heldBytes: [1, 2, 3, 4] });
    expect(r.memory.map((x) => x.peakBytes)).toEqual(peakMemory(generateSchedule('interleaved-1f1b', 2, 2, 2), new Float64Array([1, 2, 3, 4])).map((x) => x.peakBytes));
  });

  it('rejects invalid schedules and bad costs with a ConfigError naming the field', () => {
    const bad = oneStage('0B0 0F0', 1);
    expect(() => simulate(bad)).toThrow(ConfigError);
    expect(() => simulate(bad)).toThrow('order[0][0] = "0B0"');
    const s = generateSchedule('1f1b', 2, 2);
    const field = (f: () => unknown) => {
      try {
        f();
      } catch (e) {
        return (e as ConfigError).field;
      }
      return null;
    };
    expect(field(() => simulate(s, { F: -1 }))).toBe('costs.F');
    expect(field(() => simulate(s, { B: [1, 2, 3] }))).toBe('costs.B');
    expect(field(() => simulate(s, { W: [1, Number.NaN] }))).toBe('costs.W[1]');
    expect(field(() => simulate(s, { bandwidth: 0 }))).toBe('costs.bandwidth');
    expect(field(() => simulate(s, { latency: -2 }))).toBe('costs.latency');
  });

  it('is deterministic', () => {
    const s = generateSchedule('zb-v', 4, 9);
    expect(simulate(s, { latency: 0.25 })).toEqual(simulate(s, { latency: 0.25 }));
  });
});

describe('timeline analysis (shared by measured and simulated timelines)', () => {
  const measured: Timeline = {
    source: 'measured',
    ranks: 2,
    stages: 2,
    microbatches: 1,
    unit: 'ms',
    intervals: [
      { rank: 0, stage: 0, op: 'F', mb: 0, start: 10, end: 12 },
      { rank: 0, stage: 0, op: 'comm', mb: 0, start: 12, end: 13, comm: 'send', peer: 1 },
      { rank: 1, stage: 1, op: 'comm', mb: 0, start: 10, end: 13, comm: 'recv-wait', peer: 0 },
      { rank: 1, stage: 1, op: 'F', mb: 0, start: 13, end: 14 },
      { rank: 1, stage: 1, op: 'B', mb: 0, start: 14, end: 16 },
      { rank: 0, stage: 0, op: 'B', mb: 0, start: 16, end: 20 },
    ],
  };

  it('counts only F/B/I/W as busy, over the span of all intervals', () => {
    expect(makespan(measured)).toBe(10);
    const u = rankUsage(measured);
    expect(u.map((x) => [x.busy, x.idle, x.first, x.last])).toEqual([
      [6, 4, 10, 20],
      [3, 7, 13, 16],
    ]);
    expect(bubbleFraction(measured)).toBeCloseTo(1 - 9 / 20, 15);
    expect(timelineStats(measured)).toMatchObject({ start: 10, makespan: 10, busy: 9 });
  });

  it('handles an empty timeline', () => {
    const empty: Timeline = { ...measured, intervals: [] };
    expect(timelineStats(empty)).toMatchObject({ makespan: 0, bubble: 0, busy: 0 });
  });
});
