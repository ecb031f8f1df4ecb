import { describe, expect, it } from 'vitest';
import type { Timeline } from '../../schedule/timeline.ts';
import { stepEndFigures } from './report-step-end.ts';
import { runPipeline } from '../coordinator.ts';
import { InProcessRankHost } from '../executor/in-process-host.ts';
import { CpuBackend } from '../../nn/cpu-backend.ts';
import { defaultRunConfig } from '../../config/run-config.ts';
import { simulate, type CostModel } from '../../schedule/simulate.ts';
import type { RunReport } from './report-types.ts';

/** The simulator's costs the report took for a run on one pipeline (dp 1, no tp): each stage's mean op times, the time per message. */
function measuredCosts(report: RunReport): CostModel {
  const per = (op: 'F' | 'B' | 'I' | 'W') => Array.from({ length: report.schedule.stages }, (_, s) => report.meanOpMs[s]?.[op] ?? 0);
  return { F: per('F'), B: per('B'), I: per('I'), W: per('W'), latency: report.commMsPerCrossing, unit: 'ms' };
}

const timeline = (ends: number[]): Timeline => ({
  source: 'measured', ranks: 2, stages: 2, microbatches: 1, unit: 'ms',
  intervals: ends.map((end, rank) => ({ rank, stage: rank, op: 'F' as const, mb: 0, start: 0, end })),
});

describe('the end of a step the timeline does not draw', () => {
  it('worked by hand: the step on the workers’ clocks, what follows the last interval, the longest update, each rank’s tail', () => {
    // Step 1: workers start at 1000 and 1002 (the timeline's 0 is 1000), its intervals end at 40 and 50, the workers
    // end their updates at 1056 and 1061: the step 61, 11 after the timeline. Step 2: 30, nothing after it.
    // Tails (a worker's end after its last action or collective; a message in flight is not its own): step 1, 16 and
    // 11 (rank 1's send ending at 1058 aside); step 2, rank 0's slowest worker (a second replica) 18, rank 1 5.
    const f = (rank: number, start: number, end: number, op: 'F' | 'comm' = 'F') => ({ rank, stage: rank, op, mb: 0, start, end });
    const figures = stepEndFigures([
      {
        timeline: timeline([40, 50]),
        results: [
          { rank: 0, intervals: [f(0, 1000, 1040)], stepStart: 1000, stepEnd: 1056, optimizerMs: 4 },
          { rank: 1, intervals: [f(1, 1002, 1050), f(1, 1050, 1058, 'comm')], stepStart: 1002, stepEnd: 1061, optimizerMs: 9 },
        ],
      },
      {
        timeline: timeline([30, 20]),
        results: [
          { rank: 0, intervals: [f(0, 2000, 2030)], stepStart: 2000, stepEnd: 2030, optimizerMs: 1 },
          { rank: 1, intervals: [f(1, 2000, 2020)], stepStart: 2000, stepEnd: 2025, optimizerMs: 2 },
          { rank: 0, intervals: [f(0, 2000, 2010)], stepStart: 2000, stepEnd: 2028, optimizerMs: 1 },
        ],
      },
    ]);
    expect(figures).toEqual({ wallMs: (61 + 30) / 2, afterMs: (11 + 0) / 2, updateMs: (9 + 2) / 2, tailMs: [(16 + 18) / 2, (11 + 5) / 2] });
    expect(stepEndFigures([])).toBeNull();
  });

  it('a run’s report holds it: the step on the workers at least the drawn step', async () => {
    const cfg = { ...defaultRunConfig(), hidden: 8, batchSize: 16, microbatches: 4, ranks: 2, steps: 3, evalEvery: 0 };
    const report = await runPipeline(cfg, { hostFactory: (r) => new InProcessRankHost(r, new CpuBackend()) });
    const e = report.stepEnd;
    if (!e) throw new Error('the report says how its steps end');
    expect(e.wallMs).toBeGreaterThanOrEqual(report.makespanMs.measured - 1e-9);
    expect(e.afterMs).toBeGreaterThanOrEqual(0);
    expect(e.afterMs).toBeLessThanOrEqual(e.wallMs);
    expect(e.updateMs).toBeGreaterThan(0);
    // The simulator plays each rank's tail after its last action: its step on the workers' clocks is that play.
    expect(e.tailMs).toHaveLength(2);
    const sim = simulate(report.schedule, { ...measuredCosts(report), stepEnd: e.tailMs });
    expect(e.simulated?.wallMs).toBeCloseTo(sim.stepEnd!.step, 9);
    expect(e.simulated!.wallMs).toBeGreaterThanOrEqual(report.makespanMs.simulated + Math.min(...e.tailMs) - 1e-9);
    expect(e.simulated!.afterMs).toBeCloseTo(sim.stepEnd!.step - sim.makespan, 9);
  });
});
