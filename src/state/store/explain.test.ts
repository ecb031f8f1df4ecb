import { describe, expect, it } from 'vitest';
import { closedForm, generateSchedule, simulate, timelineStats, type Op } from '../../schedule/index.ts';
import { predict } from './derived.ts';
import { attributeGap, attributeLastStep, closedMakespanInPredictionUnits } from './explain.ts';

function opMs(stages: number, f: (s: number) => number): Record<number, Partial<Record<Op, number>>> {
  const out: Record<number, Partial<Record<Op, number>>> = {};
  for (let s = 0; s < stages; s++) out[s] = { F: f(s), B: 2 * f(s) };
  return out;
}

describe('closed form in prediction units', () => {
  it('agrees with the prediction for every schedule and v (interleaved v = 2 was 57 u against 28.5 u)', () => {
    const cases = [
      { schedule: '1f1b', ranks: 4, microbatches: 8, virtual: 1 },
      { schedule: 'gpipe', ranks: 3, microbatches: 5, virtual: 1 },
      { schedule: 'interleaved-1f1b', ranks: 4, microbatches: 8, virtual: 2 },
      { schedule: 'interleaved-1f1b', ranks: 2, microbatches: 4, virtual: 3 },
      { schedule: 'looped-bfs', ranks: 4, microbatches: 8, virtual: 2 },
      { schedule: 'zb-h1', ranks: 4, microbatches: 8, virtual: 1 },
      { schedule: 'zb-v', ranks: 4, microbatches: 8, virtual: 2 },
    ] as const;
    for (const c of cases) {
      const p = predict(c)!;
      expect(p.closed, c.schedule).not.toBeNull();
      expect(closedMakespanInPredictionUnits(p.closed!, p.schedule), `${c.schedule} v=${c.virtual}`).toBeCloseTo(p.result.makespan, 9);
    }
    const p = predict({ schedule: 'interleaved-1f1b', ranks: 4, microbatches: 8, virtual: 2 })!;
    expect(p.closed!.makespan).toBe(57);
    expect(closedMakespanInPredictionUnits(p.closed!, p.schedule)).toBe(28.5);
  });
});

describe('gap attribution', () => {
  const schedule = generateSchedule('1f1b', 4, 8, 1);
  const closed = closedForm('1f1b', 4, 8, 1)!.bubble;

  it('balanced stages, free links: nothing from stages or communication; the rest is the device', () => {
    const a = attributeGap({ schedule, meanOpMs: opMs(4, () => 1.5), commMsPerCrossing: 0, bubble: { measured: 0.4, simulated: 0, closedForm: closed } }, null)!;
    expect(a.steps.map((s) => s.id)).toEqual(['closed', 'stages', 'comm', 'device']);
    expect(a.steps[1].adds).toBeCloseTo(0, 12);
    expect(a.steps[2].adds).toBeCloseTo(0, 12);
    expect(a.steps[3].adds).toBeCloseTo(0.4 - closed, 12);
    // The parts add up to the whole gap.
    expect(a.steps.reduce((s, x) => s + x.adds, 0)).toBeCloseTo(0.4 - closed, 12);
  });

  it('one slow stage raises the bubble by what a simulation with those costs gives; latency adds on top', () => {
    const slow = (s: number) => (s === 2 ? 3 : 1);
    const a = attributeGap({ schedule, meanOpMs: opMs(4, slow), commMsPerCrossing: 0.5, bubble: { measured: 0.6, simulated: 0, closedForm: closed } }, null)!;
    // Independent: a hand-built cost model for the same schedule.
    const F = [1, 1, 3, 1];
    const expectStages = simulate(schedule, { F, B: F.map((x) => 2 * x), unit: 'ms' }).bubble;
    expect(a.steps[1].bubble).toBeCloseTo(expectStages, 12);
    expect(a.steps[1].adds).toBeGreaterThan(0.1);
    expect(a.steps[2].adds).toBeGreaterThan(0);
    expect(a.stageMs).toEqual([3, 3, 9, 3]);
    expect(a.steps[3].bubble).toBe(0.6);
  });

  it('a data-parallel run adds an all-reduce row: the idle share of the whole step, collectives included', () => {
    // 4 lanes busy 60% of a 10 ms compute makespan (bubble 0.4); the step with its all-reduce takes 12.5 ms.
    const allReduce = { perStage: [], stepMs: 12.5, exposedMs: 2.5, share: 0.2, ringBytesPerWorker: 0 };
    const a = attributeGap({ schedule, meanOpMs: opMs(4, () => 1.5), commMsPerCrossing: 0, bubble: { measured: 0.4, simulated: 0, closedForm: closed }, makespanMs: { measured: 10, simulated: 0 }, allReduce }, null)!;
    expect(a.steps.map((s) => s.id)).toEqual(['closed', 'stages', 'comm', 'device', 'allreduce']);
    // Busy 0.6 · 10 ms per lane over a 12.5 ms step: idle 1 − 6 / 12.5 = 0.52.
    expect(a.steps[4].bubble).toBeCloseTo(0.52, 12);
    expect(a.steps[4].adds).toBeCloseTo(0.12, 12);
  });

  it('PipeDream-2BW on replicas adds the waits for each block\'s all-reduce inside the stream (the report\'s own simulation) before the rest', () => {
    const stream = generateSchedule('pipedream-2bw', 4, 16);
    const allReduce = { perStage: [], stepMs: 12.5, exposedMs: 0.5, share: 0.04, ringBytesPerWorker: 0 };
    const a = attributeGap({ schedule: stream, meanOpMs: opMs(4, () => 1), commMsPerCrossing: 0, bubble: { measured: 0.4, simulated: 0.3, closedForm: 3 / 19 }, makespanMs: { measured: 12, simulated: 0 }, allReduce }, null)!;
    expect(a.steps.map((s) => s.id)).toEqual(['closed', 'stages', 'comm', 'blocks', 'device', 'allreduce']);
    // Balanced stages, free links: the stream's own 3/19; the blocks' waits take it to the simulation's 0.3, the device the rest.
    expect(a.steps[2].bubble).toBeCloseTo(3 / 19, 12);
    expect(a.steps[3].bubble).toBe(0.3);
    expect(a.steps[3].adds).toBeCloseTo(0.3 - 3 / 19, 12);
    expect(a.steps[4].adds).toBeCloseTo(0.1, 12);
    expect(a.steps[5].label).toBe('the last block’s all-reduce (after the stream’s last compute)');
    // One pipeline (no all-reduce): no such row.
    expect(attributeGap({ schedule: stream, meanOpMs: opMs(4, () => 1), commMsPerCrossing: 0, bubble: { measured: 0.4, simulated: 0.3, closedForm: 3 / 19 } }, null)!.steps.map((s) => s.id)).toEqual(['closed', 'stages', 'comm', 'device']);
  });

  it('needs a closed form or a given starting point', () => {
    expect(attributeGap({ schedule, meanOpMs: opMs(4, () => 1), commMsPerCrossing: 0, bubble: { measured: 0.4, simulated: 0, closedForm: null } }, null)).toBeNull();
    expect(attributeGap({ schedule, meanOpMs: opMs(4, () => 1), commMsPerCrossing: 0, bubble: { measured: 0.4, simulated: 0, closedForm: null } }, 0.2)?.steps[0].bubble).toBe(0.2);
  });
});

describe('gap attribution of the last step', () => {
  it('ends at the bubble of the step drawn, not at the mean', () => {
    const schedule = generateSchedule('zb-h1', 4, 8, 1);
    const F = [1, 2, 1, 1];
    const drawn = simulate(schedule, { F, I: F, W: F, latency: 0.3, unit: 'ms' }).timeline;
    const meanOpMs: Record<number, Partial<Record<Op, number>>> = {};
    F.forEach((f, s) => (meanOpMs[s] = { F: f, I: f, W: f }));
    const a = attributeLastStep({ schedule, meanOpMs, commMsPerCrossing: 0.3, timeline: drawn, bubble: { measured: 0.99, simulated: 0, closedForm: closedForm('zb-h1', 4, 8, 1)!.bubble } })!;
    const last = timelineStats({ ...drawn, intervals: drawn.intervals.filter((iv) => iv.op !== 'comm') }).bubble;
    expect(a.steps[3].bubble).toBeCloseTo(last, 12);
    // The timeline is itself that simulation, so nothing is left for the device.
    expect(a.steps[3].adds).toBeCloseTo(0, 9);
  });
});
