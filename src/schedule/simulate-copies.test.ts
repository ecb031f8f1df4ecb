import { describe, expect, it } from 'vitest';
import { ConfigError } from '../util/errors.ts';
import { generateSchedule } from './index.ts';
import { simulate, simulateStep } from './simulate.ts';
import type { CostModel } from './cost-model.ts';
import type { SimulationResult } from './simulate.ts';

/** When each rank's last compute ends, from the timeline (replica 0). */
function computeEnds(r: SimulationResult, ranks: number): number[] {
  const out = new Array<number>(ranks).fill(0);
  for (const iv of r.timeline.intervals) if (iv.op !== 'comm' && iv.op !== 'collective' && iv.replica === undefined) out[iv.rank] = Math.max(out[iv.rank], iv.end);
  return out;
}

describe('the sum over DualPipe’s model copies, simulated', () => {
  it('worked by hand: p 2, each stage’s ring of 2 after both ranks’ compute, 2(α + bytes/2/β) each, one stage after the other', () => {
    const s = generateSchedule('dualpipe', 2, 4);
    // α 0.5, 8 bytes at 4 bytes a unit: each exchange 0.5 + 4/4 = 1.5, the ring of 2 copies 3 per model stage.
    const r = simulate(s, { latency: 0.5, bandwidth: 4, gradBytes: 8 });
    const cs = r.copySum!;
    expect(cs.copies).toBe(2);
    expect(cs.time).toEqual([3, 3, 3, 3]);
    const free = Math.max(...computeEnds(r, 2));
    expect(cs.before).toBeCloseTo(free, 12);
    // Model stage 0 (stages 0 and 2) first, then model stage 1 (stages 1 and 3), on both ranks.
    expect(cs.start).toEqual([free, free + 3, free, free + 3]);
    expect(r.makespan).toBeCloseTo(free + 6, 12);
    const drawn = r.timeline.intervals.filter((iv) => iv.coll === 'copy-sum');
    expect(drawn.map((iv) => [iv.rank, iv.stage, iv.start, iv.end, iv.bytes])).toEqual([
      [0, 0, free, free + 3, 8],
      [1, 1, free + 3, free + 6, 8],
      [1, 2, free, free + 3, 8],
      [0, 3, free + 3, free + 6, 8],
    ]);
    expect(r.idle.map((x, w) => x + r.busy[w])).toEqual([r.makespan, r.makespan]);
  });

  it('pairs rank r with p − 1 − r: each pair starts when the later of the two is done (p 4, a measured time per stage)', () => {
    const s = generateSchedule('dualpipe', 4, 8);
    const given = [1, 2, 3, 4, 0.5, 0.5, 0.5, 5];
    const r = simulate(s, { F: [1, 1.5, 1, 2, 1, 1.5, 1, 2], B: 2, copySum: given });
    const cs = r.copySum!;
    // A model stage's ring takes the larger of its two copies' times: copy 0's stage j is stage j, copy 1's is 4 + j.
    expect(cs.time).toEqual([1, 2, 3, 5, 1, 2, 3, 5]);
    const ends = computeEnds(r, 4);
    for (const [a, b] of [[0, 3], [1, 2]]) {
      const t0 = Math.max(ends[a], ends[b]);
      // Ranks a and b hold model stages a and b (one copy each): the smaller model stage first.
      const stages = [a, b].sort((x, y) => x - y);
      expect(cs.start[stages[0]]).toBeCloseTo(t0, 12);
      expect(cs.end[stages[1]]).toBeCloseTo(t0 + cs.time[stages[0]] + cs.time[stages[1]], 12);
    }
    expect(r.makespan).toBeCloseTo(Math.max(...cs.end), 12);
  });

  it('with replicas: after each rank’s all-reduces, drawn on every replica; with ZeRO only the owned 1/dp is summed', () => {
    const s = generateSchedule('dualpipe', 2, 4);
    const base: CostModel = { dp: 2, gradBytes: 8, latency: 0, bandwidth: 2, allReduce: { latency: 0, bandwidth: 8 } };
    const plain = simulate(s, base);
    // The all-reduce of 8 bytes over 2: 2 · (4/8) = 1; the copies' ring on the pipeline link: 2 · (4/2) = 4.
    expect(plain.copySum!.time[0]).toBeCloseTo(4, 12);
    const rank0 = Math.max(...plain.dp!.allReduceEnd.filter((_, st) => s.stageToRank[st] === 0), computeEnds(plain, 2)[0]);
    const rank1 = Math.max(...plain.dp!.allReduceEnd.filter((_, st) => s.stageToRank[st] === 1), computeEnds(plain, 2)[1]);
    expect(plain.copySum!.start[0]).toBeCloseTo(Math.max(rank0, rank1), 12);
    expect(plain.timeline.intervals.filter((iv) => iv.coll === 'copy-sum').map((iv) => iv.replica ?? 0).sort()).toEqual([0, 0, 0, 0, 1, 1, 1, 1]);
    // The replicas' figures are the step before the sum.
    expect(plain.dp!.exposedAllReduce).toBeCloseTo(plain.copySum!.before - plain.dp!.computeMakespan, 12);
    const zero1 = simulate(s, { ...base, allReduce: { latency: 0, bandwidth: 8, zero: 1 } });
    expect(zero1.copySum!.time[0]).toBeCloseTo(2, 12);
    const zero3 = simulate(s, { ...base, allReduce: { latency: 0, bandwidth: 8, zero: 3 } });
    expect(zero3.copySum!.time[0]).toBeCloseTo(2, 12);
    expect(zero3.makespan).toBeCloseTo(zero3.copySum!.before + 4, 12);
  });

  it('plays nothing on free links without a given time, and nothing for a schedule with one copy', () => {
    expect(simulate(generateSchedule('dualpipe', 4, 8)).copySum).toBeUndefined();
    expect(simulate(generateSchedule('dualpipe', 4, 8), { dp: 2, gradBytes: 100 }).copySum).toBeUndefined();
    expect(simulate(generateSchedule('1f1b', 4, 8), { latency: 1, gradBytes: 100 }).copySum).toBeUndefined();
  });

  it('the planner’s fast step equals the full simulation’s, copies’ sum and all (p 2–8, random links and sizes)', () => {
    let seed = 7;
    const rnd = () => ((seed = (seed * 16807) % 2147483647) / 2147483647);
    for (let i = 0; i < 40; i++) {
      const p = 2 * (1 + Math.floor(rnd() * 4));
      const s = generateSchedule('dualpipe', p, 2 * p + 2 * Math.floor(rnd() * 3));
      const costs: CostModel = {
        F: 0.5 + rnd(), B: 1 + rnd() * 2,
        latency: (a, b) => 0.1 * (1 + ((a + b) % 3)), bandwidth: (a, b) => 10 + a + b,
        gradBytes: Array.from({ length: s.stages }, () => rnd() * 40),
        ...(rnd() < 0.5 ? { dp: 2 + Math.floor(rnd() * 3), allReduce: { latency: rnd(), bandwidth: 5 + rnd() * 20, overlap: rnd() < 0.5, zero: rnd() < 0.5 ? 0 : 1 } } : {}),
      };
      const full = simulate(s, costs);
      expect(full.copySum).toBeDefined();
      expect(simulateStep(s, costs).makespan).toBeCloseTo(full.makespan, 9);
    }
  });

  it('refuses a bad time by field, value and rule', () => {
    const dual = generateSchedule('dualpipe', 2, 4);
    const bad: [ReturnType<typeof generateSchedule>, CostModel, string][] = [
      [generateSchedule('1f1b', 2, 4), { copySum: 1 }, 'costs.copySum = 1: is the time of the sum over model copies: schedule 1f1b has one copy'],
      [dual, { copySum: [1, 2] }, 'costs.copySum = [1, 2]: must be a number or a list of 4 numbers, one per stage'],
      [dual, { copySum: [1, 2, -1, 0] }, 'costs.copySum[2] = -1: must be a time ≥ 0'],
      [dual, { copySum: NaN }, 'costs.copySum = NaN: must be a time ≥ 0'],
    ];
    for (const [s, costs, message] of bad) {
      expect(() => simulate(s, costs)).toThrow(ConfigError);
      expect(() => simulate(s, costs)).toThrow(message);
    }
  });
});
