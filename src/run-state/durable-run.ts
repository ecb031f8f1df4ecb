/**
 * A run that loses nothing: its progress saved into a CheckpointStore every
 * checkpointEvery steps and at its end or stop (RunSaver, beside training);
 * optionally started from the configuration's last checkpoint (resume); and,
 * when it fails after a step (a worker crashed, a device was lost, a step
 * threw), restarted once from the last checkpoint this run saved (or the one
 * it resumed from; with neither, the failure ends the run), the injected test
 * fault not firing again: with recovery = 'fresh' (the default) on fresh
 * workers in the same mesh; with 'fewer' on the workers that remain, the run
 * re-planned on a smaller mesh (./recut.ts; no smaller mesh ends the run
 * saying why) and the checkpoint loaded onto the new cut by parameter name.
 * The report counts the steps redone and the recovery's time and names the
 * mesh before and after; a second failure inside the recovery ends the run
 * with a message naming both.
 */
import { snapshotRunConfig } from '../runtime/config-snapshot.ts';
import { RunError, type RunOptions } from '../runtime/coordinator.ts';
import type { MeshShape, RunReport } from '../runtime/report-types.ts';
import { checkpointEveryOf, recoveryOf, validateRunConfig, type RunConfig } from '../runtime/run-config.ts';
import { ConfigError } from '../util/errors.ts';
import { CheckpointError } from './checkpoint-error.ts';
import type { CheckpointStore } from './checkpoint-store.ts';
import { fewerWorkers, meshShape, type Recut } from './recut.ts';
import { RunSaver } from './run-saver.ts';
import { stateConfig, type RunState } from './run-state.ts';

export type DurableRunner = (config: RunConfig, opts: Omit<RunOptions, 'hostFactory'>) => Promise<RunReport>;

export interface DurableOptions {
  store: CheckpointStore;
  /** Start from the configuration's last checkpoint (refused when none is stored). */
  resume?: boolean;
  /** Restart once from the last checkpoint when the run fails after a step (default true). */
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
    });

  let report: RunReport;
  try {
    report = await attempt(config, resumed);
  } catch (e) {
    const recoverable = (durable.recover ?? true) && stepsThisRun > 0 && !opts.signal?.aborted && !(e instanceof ConfigError) && !(e instanceof CheckpointError);
    if (!recoverable) throw e;
    const tFail = performance.now();
    const failure = messageOf(e);
    const failedAtStep = stepsDone;
    // The last checkpoint this run saved (its saves land first), else the one it resumed from; none: the failure ends the run.
    const saved = saver ? (await saver.settled()).steps : [];
    if (saved.length === 0 && !resumed) throw e;
    const fromStep = saved.length > 0 ? Math.max(...saved) : (resumed?.stepsDone ?? 0);
    const mode = recoveryOf(config);
    // 'fewer': the workers that remain, on the smaller mesh; none: the failure ends the run, saying why.
    let recut: Recut | undefined;
    if (mode === 'fewer') {
      try {
        recut = fewerWorkers(config);
      } catch (e2) {
        throw new RunError(`the run failed at step ${failedAtStep} (${failure}); recovery = 'fewer' cannot restart it: ${messageOf(e2)}`);
      }
    }
    // The mesh on fresh workers (or the smaller one); a test's injected fault fired once and does not fire again.
    const again = stateConfig(recut?.config ?? config);
    if (config.checkpointEvery !== undefined) again.checkpointEvery = config.checkpointEvery;
    if (config.recovery !== undefined) again.recovery = config.recovery;
    let recoveryMs = 0;
    try {
      // The checkpoint is of the run's own configuration (its saves are stored under it, whatever the mesh).
      const from = saved.length > 0 ? await store.load(config, fromStep) : resumed;
      durable.onRecovery?.({ failure, fromStep, mesh: meshShape(again) });
      stepsThisRun = 0;
      report = await attempt(again, from, () => (recoveryMs = performance.now() - tFail));
    } catch (e2) {
      throw new RunError(`the run failed at step ${failedAtStep} (${failure}); its recovery from step ${fromStep}${recut ? ` on ${recut.after.workers} workers` : ''} failed too: ${messageOf(e2)}`);
    }
    const mesh = { mode, meshBefore: meshShape(config), meshAfter: meshShape(again), ...(recut ? { recut: recut.how } : {}) };
    // The report's config is the one its steps ran on: the run's own with 'fresh', the smaller mesh with 'fewer'.
    report = { ...report, config: recut ? again : config, recovery: { failure, failedAtStep, fromStep, stepsRedone: failedAtStep - fromStep, recoveryMs, ...mesh } };
  }
  const saves = saver ? await saver.settled() : undefined;
  return { ...report, ...(resumed ? { resumedFrom: resumed.stepsDone } : {}), ...(saves ? { checkpointSaves: saves } : {}) };
}
