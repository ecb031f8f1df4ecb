/** Calibration against ground truth made by the shared-device simulator itself, and the prediction check on such runs. */
import { describe, expect, it } from 'vitest';
import { generateSchedule, simulate, type CostModel } from '../schedule/index.ts';
import { calibrateSolo, meanOpTimesOf } from './calibrate.ts';
import { fitLanes, LANE_CANDIDATES, predictRun, type RecordedRun } from './prediction-check.ts';

const truthCosts = (stages: number): CostModel => ({
  F: Array.from({ length: stages }, (_, s) => 10 + 3 * s),
  B: Array.from({ length: stages }, (_, s) => 22 - s),
  I: Array.from({ length: stages }, (_, s) => 11 + s),
  W: Array.from({ length: stages }, (_, s) => 9 + ((2 * s) % 3)),
  latency: 2,
  unit: 'ms',
});

/** A run "measured" on a device with `lanes` lanes: the shared-device play of known solo times. */
function fakeRun(schedule: string, p: number, m: number, v: number, lanes: number): RecordedRun {
  const s = generateSchedule(schedule, p, m, v);
  const r = simulate(s, { ...truthCosts(s.stages), lanes });
  return { schedule, p, m, v, makespanMeasuredMs: r.makespan, commMsPerCrossing: 2, meanOpMs: meanOpTimesOf(r) };
}

describe('calibrateSolo', () => {
  it('recovers the solo times and the makespan a shared device produced', () => {
    for (const [name, p, m, v] of [
      ['gpipe', 4, 4, 1],
      ['1f1b', 4, 8, 1],
      ['zb-h1', 3, 6, 1],
      ['interleaved-1f1b', 2, 4, 2],
    ] as const) {
      const s = generateSchedule(name, p, m, v);
      const truth = truthCosts(s.stages);
      const measured = simulate(s, { ...truth, lanes: 1.5 });
      const c = calibrateSolo(s, meanOpTimesOf(measured), 1.5, { latency: 2 });
      expect(c.residual).toBeLessThan(1e-9);
      expect(c.shared.makespan).toBeCloseTo(measured.makespan, 6);
      for (const a of s.order.flat()) {
        expect(c.solo[a.op][a.stage], `${name} ${a.stage}${a.op}`).toBeCloseTo((truth[a.op] as number[])[a.stage], 5);
      }
      // the measured means overstate the solo times: sharing only ever slows an op
      expect(c.independent.makespan).toBeLessThanOrEqual(measured.makespan + 1e-9);
    }
  });

  it('with a lane per rank is today’s simulator: solo = measured means', () => {
    const s = generateSchedule('1f1b', 3, 5);
    const measured = simulate(s, truthCosts(3));
    const c = calibrateSolo(s, meanOpTimesOf(measured), 3, { latency: 2 });
    expect(c.iterations).toBe(0);
    expect(c.shared.makespan).toBe(measured.makespan);
    expect(c.solo.F).toEqual(truthCosts(3).F);
  });

  it('names a missing measured time and bad lanes', () => {
    const s = generateSchedule('1f1b', 2, 2);
    expect(() => calibrateSolo(s, { 0: { F: 1, B: 2 }, 1: { F: 1 } }, 1)).toThrow('measured[1].B = undefined: must be a finite time ≥ 0: the schedule runs this op');
    expect(() => calibrateSolo(s, { 0: { F: 1, B: 2 }, 1: { F: 1, B: 2 } }, 0)).toThrow('lanes = 0: must be a number greater than 0');
  });
});

describe('prediction check', () => {
  const runs = [
    fakeRun('gpipe', 4, 4, 1, 1.5),
    fakeRun('1f1b', 4, 4, 1, 1.5),
    fakeRun('1f1b', 4, 16, 1, 1.5),
    fakeRun('zb-h1', 4, 8, 1, 1.5),
    fakeRun('interleaved-1f1b', 2, 4, 2, 1.5),
  ];

  it('fits the lanes the runs were made with, and then predicts held-out runs exactly; today’s prediction misses', () => {
    expect(fitLanes(runs.slice(0, 2), LANE_CANDIDATES)).toBe(1.5);
    for (const r of runs.slice(2)) {
      const row = predictRun(r, 1.5);
      expect(Math.abs(row.sharedError)).toBeLessThan(1e-6);
    }
    // Mean op times stretched by sharing, played as if each rank had its own device, miss the warm-up and cool-down.
    expect(Math.abs(predictRun(runs[0], 1.5).todayError)).toBeGreaterThan(0.02);
  });
});
