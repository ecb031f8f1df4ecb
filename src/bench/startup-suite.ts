/**
 * The startup suite: from a run's start (what the page's Run does: runInBrowser
 * on the default configuration) to its first step's report, for a first run and
 * a second run in the same page, with the phases each run's report holds: the
 * ranks' start (workers, devices, warm-up), and per rank the device, the warm-up
 * and the kernels it compiled. The peer is the figure before this suite existed
 * (in the suite's notes): before and after cannot run in one build.
 */
import { runInBrowser } from '../runtime/browser-run.ts';
import { defaultRunConfig } from '../runtime/run-config.ts';
import { warmWorkers } from '../runtime/warm-workers.ts';

export interface StartupBenchRow {
  run: number;
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

/** `runs` runs of the default configuration, `steps` steps each, one after the other; the first starts cold (warm workers other suites left are ended). */
export async function benchStartup(runs: number, steps: number): Promise<StartupBenchRow[]> {
  warmWorkers.clear();
  const rows: StartupBenchRow[] = [];
  for (let run = 1; run <= runs; run++) {
    const cfg = { ...defaultRunConfig(), steps };
    const t0 = performance.now();
    let first = -1;
    const report = await runInBrowser(cfg, {
      onStep: () => {
        if (first < 0) first = performance.now() - t0;
      },
    });
    const ranks = report.phases.ranks;
    rows.push({
      run,
      firstStepMs: first,
      startMs: report.phases.startMs,
      reportFirstStepMs: report.phases.firstStepMs,
      deviceMsMax: Math.max(...ranks.map((r) => r.deviceMs)),
      warmUpMsMax: Math.max(...ranks.map((r) => r.warmUpMs)),
      kernels: ranks.reduce((s, r) => s + r.kernels, 0),
      compiled: ranks.reduce((s, r) => s + r.compiled, 0),
      ranks: ranks.length,
    });
  }
  return rows;
}
