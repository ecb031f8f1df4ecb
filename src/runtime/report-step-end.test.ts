import { describe, expect, it } from 'vitest';
import type { Timeline } from '../schedule/timeline.ts';
import { stepEndFigures } from './report-step-end.ts';
import { runPipeline } from './coordinator.ts';
import { InProcessRankHost } from './in-process-host.ts';
import { CpuBackend } from '../nn/cpu-backend.ts';
import { defaultRunConfig } from '../config/run-config.ts';

const timeline = (ends: number[]): Timeline => ({
  source: 'measured', ranks: 2, stages: 2, microbatches: 1, unit: 'ms',
  intervals: ends.map((end, rank) => ({ rank, stage: rank, op: 'F' as const, mb: 0, start: 0, end })),
});

describe('the end of a step the timeline does not draw', () => {
  it('worked by hand: the step on the workers’ clocks, what follows the last interval, the longest update', () => {
    // Step 1: workers start at 1000 and 1002 (the timeline's 0 is 1000), its intervals end at 40 and 50, the workers
    // end their updates at 1056 and 1061: the step 61, 11 after the timeline. Step 2: 30, nothing after it.
    const f = stepEndFigures([
      { timeline: timeline([40, 50]), results: [{ stepStart: 1000, stepEnd: 1056, optimizerMs: 4 }, { stepStart: 1002, stepEnd: 1061, optimizerMs: 9 }] },
      { timeline: timeline([30, 20]), results: [{ stepStart: 2000, stepEnd: 2030, optimizerMs: 1 }, { stepStart: 2000, stepEnd: 2025, optimizerMs: 2 }] },
    ]);
    expect(f).toEqual({ wallMs: (61 + 30) / 2, afterMs: (11 + 0) / 2, updateMs: (9 + 2) / 2 });
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
  });
});
