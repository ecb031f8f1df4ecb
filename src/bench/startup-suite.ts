/**
 * The startup suite: from a run's start (what the page's Run does: runInBrowser
 * on the default configuration) to its first step's report, for a first run and
 * a second run in the same page, with the phases each run's report holds: the
 * ranks' start (workers, devices, warm-up), and per rank the device, the warm-up
 * and the kernels it compiled. The peer is the figure before this suite existed
 * (in the suite's notes): before and after cannot run in one build.
 *
 * Three kinds of run: 'cold' (no warm worker: what the first Run paid before
 * the page prepared its workers at load, and still pays when Run is pressed
 * before the preparation could start), 'prepared' (the first Run after the
 * page's load-time preparation, prepareWorkers, has finished; its time is
 * `prepareMs`), and 'again' (a later run on the workers a run left warm).
 */
import { prepareWorkers, runInBrowser } from '../runtime/browser-run.ts';
import { defaultRunConfig } from '../config/run-config.ts';
import { warmWorkers } from '../runtime/executor/index.ts';

export type StartupRunKind = 'cold' | 'prepared' | 'again';

export interface StartupBenchRow {
  run: number;
  kind: StartupRunKind;
  /** 'prepared': how long the preparation (prepareWorkers) took before Run, ms; 0 otherwise. */
  prepareMs: number;
  /** Run start to the first step's report (onStep), ms, measured in the page. */
  firstStepMs: number;
  /** The coordinator's own figures: run start to the ranks up, and to the first step's report. */
  startMs: number;
  reportFirstStepMs: number;
  /** The slowest rank's device acquisition and warm-up, ms. */
  deviceMsMax: number;
  warmUpMsMax: number;
  /** Kernels the ranks' steps use, and how many their warm-ups compiled, summed over ranks. */
  kernels: number;
  compiled: number;
  ranks: number;
}

/**
 * A cold run then `runs - 1` runs again (warm workers), and then a run after a
 * fresh preparation (the pool emptied, prepareWorkers awaited), `steps` steps each.
 */
export async function benchStartup(runs: number, steps: number): Promise<StartupBenchRow[]> {
  const rows: StartupBenchRow[] = [];
  const cfg = { ...defaultRunConfig(), steps };
  await warmWorkers.settled();
  warmWorkers.clear();
  for (let run = 1; run <= runs; run++) rows.push(await timedRun(run, run === 1 ? 'cold' : 'again', 0, cfg));
  warmWorkers.clear();
  const t0 = performance.now();
  await prepareWorkers(cfg);
  rows.push(await timedRun(runs + 1, 'prepared', performance.now() - t0, cfg));
  return rows;
}

async function timedRun(run: number, kind: StartupRunKind, prepareMs: number, cfg: ReturnType<typeof defaultRunConfig>): Promise<StartupBenchRow> {
  const t0 = performance.now();
  let first = -1;
  const report = await runInBrowser(cfg, {
    onStep: () => {
      if (first < 0) first = performance.now() - t0;
    },
  });
  const ranks = report.phases.ranks;
  return {
    run,
    kind,
    prepareMs,
    firstStepMs: first,
    startMs: report.phases.startMs,
    reportFirstStepMs: report.phases.firstStepMs,
    deviceMsMax: Math.max(...ranks.map((r) => r.deviceMs)),
    warmUpMsMax: Math.max(...ranks.map((r) => r.warmUpMs)),
    kernels: ranks.reduce((s, r) => s + r.kernels, 0),
    compiled: ranks.reduce((s, r) => s + r.compiled, 0),
    ranks: ranks.length,
  };
}
