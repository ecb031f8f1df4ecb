/**
 * A run that loses nothing: its progress saved into a CheckpointStore every
 * checkpointEvery steps and at its end or stop (RunSaver, beside training);
 * optionally started from the configuration's last checkpoint (resume); and,
 * when it fails after a step (a worker crashed, a device was lost, a step
 * threw), restarted from the last checkpoint saved (or the one it resumed
 * from; with neither, from step 0: the start is a function of the
 * configuration, a checkpoint for free), the injected test fault not
 * firing again: with recovery = 'fresh' (the default) on fresh workers in the
 * same mesh; with 'fewer' on the workers that remain, the run re-planned on a
 * smaller mesh (./recut.ts; no smaller mesh ends the run saying why) and the
 * checkpoint loaded onto the new cut by parameter name. A recovered run that
 * fails again after steps of its own recovers again, up to MAX_RECOVERIES
 * times (each 'fewer' recovery one mesh smaller); a recovery that fails before
 * its first step, or one failure too many, ends the run with a message naming
 * every failure. The report counts the steps redone and each recovery's time
 * and names the mesh before and after.
 */
import { snapshotRunConfig } from '../config/config-snapshot.ts';
import { RunError, type RunOptions } from '../runtime/coordinator.ts';
import { MemoryBudgetError } from '../runtime/budget-check.ts';
import type { MeshShape, RecoveryFigures, RunReport } from '../runtime/report/index.ts';
import { checkpointEveryOf, recoveryOf, validateRunConfig, type RunConfig } from '../config/run-config.ts';
import { ConfigError } from '../util/errors.ts';
import { CheckpointError } from './checkpoint-error.ts';
import type { CheckpointStore } from './checkpoint-store.ts';
import { fewerWorkers, meshShape, type Recut } from './recut.ts';
import { RunSaver } from './run-saver.ts';
import { stateConfig, type RunState } from './run-state.ts';

/** Recoveries one run makes at most: a run that keeps failing ends, naming every failure. */
export const MAX_RECOVERIES = 3;

export type DurableRunner = (config: RunConfig, opts: Omit<RunOptions, 'hostFactory'>) => Promise<RunReport>;

export interface DurableOptions {
  store: CheckpointStore;
  /** Start from the configuration's last checkpoint (refused when none is stored). */
  resume?: boolean;
  /** Restart from the last checkpoint when the run fails after a step, up to MAX_RECOVERIES times (default true). */
  recover?: boolean;
  /** Once a resumed run's checkpoint is loaded, before its workers start. */
  onResumed?: (state: RunState) => void;
  /** After each save that landed, or each refused one. */
  onSaved?: (r: { step: number } | { error: string }) => void;
  /** When a recovery starts: what failed, the steps done by the checkpoint it restarts from, and the mesh it restarts on. */
  onRecovery?: (r: { failure: string; fromStep: number; mesh: MeshShape }) => void;
}

function messageOf(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** Runs `input` with `runner`, saving, resuming and recovering as `durable` says. */
export async function runDurably(input: RunConfig, opts: Omit<RunOptions, 'hostFactory'>, durable: DurableOptions, runner: DurableRunner): Promise<RunReport> {
  const config = snapshotRunConfig(input);
  validateRunConfig(config);
  const { store } = durable;
  const resumed: RunState | undefined = durable.resume ? await store.load(config) : undefined;
  if (resumed && resumed.stepsDone >= config.steps) {
    throw new RunError(`nothing to resume: the last checkpoint of this configuration is of step ${resumed.stepsDone}, its last (steps = ${config.steps})`);
  }
  if (resumed) durable.onResumed?.(resumed);
  const every = checkpointEveryOf(config);
  const saver = every > 0 ? new RunSaver(store, config, durable.onSaved) : null;
  let stepsDone = resumed?.stepsDone ?? 0;
  let stepsThisRun = 0;
  const attempt = (cfg: RunConfig, from: RunState | undefined, onFirstStep?: () => void) =>
    runner(cfg, {
      ...opts,
      from,
      ...(saver ? { progressEvery: every, onProgress: (p) => saver.take(p) } : {}),
      onStep: (p) => {
        if (stepsThisRun++ === 0) onFirstStep?.();
        stepsDone = p.step + 1;
        opts.onStep?.(p);
      },
      // A stream's (PipeDream, 2BW) onStep calls all come at its end: its steps done while it runs are its progress,
      // so a failure inside it recovers (from 2BW's last checkpoint inside it; PipeDream, which saves none, from step 0).
      onStreamProgress: (p) => {
        if (stepsThisRun++ === 0) onFirstStep?.();
        stepsDone = p.stepsDone;
        opts.onStreamProgress?.(p);
      },
    });

  let report: RunReport | undefined;
  const recoveries: RecoveryFigures[] = [];
  const failures: string[] = [];
  let current = config;
  let from = resumed;
  let onFirstStep: (() => void) | undefined;
  while (!report) {
    try {
      report = await attempt(current, from, onFirstStep);
    } catch (e) {
      const failure = messageOf(e);
      const failedAtStep = stepsDone;
      // Nothing to recover: stopped, refused, a failure before this attempt's first step (a first run's, or a recovery's), or none left.
      const progressed = stepsThisRun > 0;
      const recoverable = (durable.recover ?? true) && progressed && !opts.signal?.aborted && !(e instanceof ConfigError) && !(e instanceof CheckpointError) && !(e instanceof MemoryBudgetError);
      const saved = recoverable && saver ? (await saver.settled()).steps : [];
      const fromStep = saved.length > 0 ? Math.max(...saved) : (resumed?.stepsDone ?? 0);
      // With no checkpoint saved yet (nor resumed from), the run recovers from step 0: the state at the start
      // is a function of the configuration (seeded weights, fresh optimizer, data order), a checkpoint for free.
      if (!recoverable || recoveries.length >= MAX_RECOVERIES) {
        if (failures.length === 0) throw e;
        const why = recoverable && recoveries.length >= MAX_RECOVERIES ? ` (${MAX_RECOVERIES} recoveries are the most a run makes)` : '';
        throw new RunError(`${failures.join('; ')}; ${recoveries.length === 1 ? 'its recovery' : `its recovery ${recoveries.length}`} from step ${recoveries.at(-1)!.fromStep} failed too${why}: ${failure}`);
      }
      failures.push(`the run failed at step ${failedAtStep} (${failure})`);
      const tFail = performance.now();
      const mode = recoveryOf(config);
      // 'fewer': the workers that remain, on the smaller mesh; none: the failure ends the run, saying why.
      let recut: Recut | undefined;
      if (mode === 'fewer') {
        try {
          recut = fewerWorkers(current);
        } catch (e2) {
          throw new RunError(`${failures.join('; ')}; recovery = 'fewer' cannot restart it: ${messageOf(e2)}`);
        }
      }
      // The mesh on fresh workers (or the smaller one); a test's injected fault fired once and does not fire again.
      const again = stateConfig(recut?.config ?? current);
      if (config.checkpointEvery !== undefined) again.checkpointEvery = config.checkpointEvery;
      if (config.recovery !== undefined) again.recovery = config.recovery;
      if (config.memoryBudget !== undefined) again.memoryBudget = config.memoryBudget;
      if (config.offloadOptimizer !== undefined) again.offloadOptimizer = config.offloadOptimizer;
      // Swapping names stages of the run's cut: a re-cut run keeps it only where every named stage is still there.
      if (config.swap !== undefined && (config.swap === 'all' || config.swap.every((s) => s < again.ranks * again.virtual))) again.swap = config.swap;
      // The checkpoint is of the run's own configuration (its saves are stored under it, whatever the mesh).
      try {
        from = saved.length > 0 ? await store.load(config, fromStep) : resumed; // neither: from the configuration's step 0
      } catch (e2) {
        throw new RunError(`${failures.join('; ')}; its recovery could not read the checkpoint of step ${fromStep}: ${messageOf(e2)}`);
      }
      const figures: RecoveryFigures = {
        failure,
        failedAtStep,
        fromStep,
        stepsRedone: failedAtStep - fromStep,
        recoveryMs: 0,
        mode,
        meshBefore: meshShape(current),
        meshAfter: meshShape(again),
        ...(recut ? { recut: recut.how } : {}),
      };
      recoveries.push(figures);
      durable.onRecovery?.({ failure, fromStep, mesh: meshShape(again) });
      onFirstStep = () => (figures.recoveryMs = performance.now() - tFail);
      stepsThisRun = 0;
      current = again;
    }
  }
  if (recoveries.length > 0) {
    // The report's config is the one its steps ran on: the run's own with 'fresh', the smaller mesh with 'fewer'.
    report = { ...report, config: recoveryOf(config) === 'fewer' ? current : config, recovery: recoveries.at(-1), recoveries };
  }
  const saves = saver ? await saver.settled() : undefined;
  return { ...report, ...(resumed ? { resumedFrom: resumed.stepsDone } : {}), ...(saves ? { checkpointSaves: saves } : {}) };
}
