/**
 * The benchmark suites. Each runs in the bench page and returns rows that
 * hold PipeLab's figure beside its peer's, measured in the same run.
 */
import type { Page } from 'playwright';
import type { ScheduleBenchCase, ScheduleBenchRow } from '../../src/bench/schedules-suite.ts';

export interface BenchContext {
  page: Page;
  quick: boolean;
  log(line: string): void;
}

export interface SuiteResult {
  rows: unknown[];
  notes?: string[];
}

async function schedules(ctx: BenchContext): Promise<SuiteResult> {
  const grid: ScheduleBenchCase[] = [];
  const ps = ctx.quick ? [4] : [2, 4];
  const ms = (p: number) => (ctx.quick ? [4, 16] : [p, 2 * p, 4 * p]);
  for (const p of ps) {
    for (const m of ms(p)) {
      for (const schedule of ['gpipe', '1f1b'] as const) grid.push({ schedule, ranks: p, microbatches: m });
      if (!ctx.quick) {
        grid.push({ schedule: 'zb-h1', ranks: p, microbatches: m });
        grid.push({ schedule: 'interleaved-1f1b', ranks: p, microbatches: m, virtual: 2 });
      }
    }
  }
  const steps = ctx.quick ? 4 : 6;
  const rows: ScheduleBenchRow[] = [];
  for (const c of grid) {
    const row = await ctx.page.evaluate(({ c, steps }) => window.pipelabBench.schedule(c, steps), { c, steps });
    ctx.log(
      `${row.schedule} p=${row.p} m=${row.m}: makespan ${row.makespanMeasuredMs.toFixed(1)} ms measured, ${row.makespanSimulatedMs.toFixed(1)} simulated; bubble ${(100 * row.bubbleMeasured).toFixed(1)}% vs ${row.bubbleClosedForm === null ? 'n/a' : (100 * row.bubbleClosedForm).toFixed(1) + '%'} closed form`,
    );
    rows.push(row);
  }
  return {
    rows,
    notes: [
      'names model (char-MLP, hidden 256, tanh), one equal block per stage, 64 rows per micro-batch; the first step of each run is left out of the means.',
      'simulated: the simulator fed with the run\'s own mean per-stage F/B/I/W times and its mean communication time per crossing as link latency.',
    ],
  };
}

export const SUITES = { schedules } satisfies Record<string, (ctx: BenchContext) => Promise<SuiteResult>>;
export type SuiteName = keyof typeof SUITES;
