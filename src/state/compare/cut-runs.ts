/**
 * The Plan panel's cuts, run for real: each distinct cut of the table (by
 * block count, by FLOPs, by measured time) trains the current configuration
 * for a few steps with partition = 'cut', one after the other (Compare's
 * sequence, measureEach, in a 'planning' session), and keeps the mean step
 * makespan and bubble its report measured. Results are kept by the exact
 * configuration that ran, so a changed configuration shows none until run again.
 */
import type { BlockRange } from '../../nn/partition.ts';
import type { SplitBy } from '../../plan/splits.ts';
import { cutOfRanges, cutText } from '../../config/explicit-cut.ts';
import { configToQuery, runStages, type RunConfig } from '../../config/run-config.ts';
import { runsAsStream } from '../../schedule/registry.ts';
import { checkRunConfig, setConfig } from '../store/index.ts';
import { cannotMeasureReason, measureEach, stopSession } from './compare.ts';
import { usePipeLab, type CutMeasurement } from '../store/index.ts';
import type { RunReport } from '../../runtime/report/index.ts';

/** A cut's short run takes at most this many steps (the first warms caches and is left out of the means; a stream's are all one window). */
export const CUT_RUN_STEPS = 8;

/** The steps of a cut's short run: min(config.steps, CUT_RUN_STEPS). */
export function cutRunSteps(config: RunConfig): number {
  return Math.min(config.steps, CUT_RUN_STEPS);
}

/** Why the planned cuts cannot be used or run with this configuration (one sentence saying what to change), or null. */
export function cutMismatch(config: RunConfig, plannedStages: number, profileBlocks: number): string | null {
  const stages = runStages(config);
  if (profileBlocks !== config.layers + 1) {
    return `The profile has ${profileBlocks} blocks but the run's model has ${config.layers + 1}: profile this model (or paste a profile of it) to use or run these cuts.`;
  }
  if (plannedStages !== stages) {
    return `These cuts are for ${plannedStages} stages but the run has ranks × virtual = ${stages}: set “Ranks to plan for” to ${stages} (or the run's ranks to ${plannedStages}) to use or run them.`;
  }
  return null;
}

/** The configuration that runs a cut: the current one with partition 'cut' and these ranges. */
export function withCut(config: RunConfig, ranges: readonly BlockRange[]): RunConfig {
  return { ...config, partition: 'cut', cut: cutOfRanges(ranges) };
}

/** The short run of a cut (min(steps, 8) steps, no evaluation). */
export function cutRunConfig(config: RunConfig, ranges: readonly BlockRange[]): RunConfig {
  return { ...withCut(config, ranges), steps: cutRunSteps(config), evalEvery: 0 };
}

/** Where a cut's result is kept: the exact configuration of its short run. */
export function cutRunKey(config: RunConfig, ranges: readonly BlockRange[]): string {
  return configToQuery(cutRunConfig(config, ranges));
}

/** "Use this cut": the run configuration takes partition 'cut' with these ranges. */
export function applyCut(config: RunConfig, ranges: readonly BlockRange[]): void {
  setConfig(withCut(config, ranges));
}

/** The distinct cuts of the table, in its order, each with the rows that share it. */
export function distinctCuts(splits: readonly { by: SplitBy; ranges: BlockRange[] }[]): { ranges: BlockRange[]; by: SplitBy[] }[] {
  const out: { ranges: BlockRange[]; by: SplitBy[] }[] = [];
  for (const s of splits) {
    const same = out.find((o) => cutText(cutOfRanges(o.ranges)) === cutText(cutOfRanges(s.ranges)));
    if (same) same.by.push(s.by);
    else out.push({ ranges: s.ranges, by: [s.by] });
  }
  return out;
}

/**
 * What a cut's short run measured: the mean step makespan and bubble over the steps after the first (which warms
 * caches); a stream (PipeDream, 2BW) is one window of all its steps, so its makespan ÷ the steps it ran, none left out.
 */
export function cutMeasured(r: Pick<RunReport, 'config' | 'schedule' | 'makespanMs' | 'bubble' | 'steps' | 'stageBlocks'>): Pick<CutMeasurement, 'makespanMs' | 'bubble' | 'meanOf' | 'stageBlocks'> {
  const blocks = runsAsStream(r.config.schedule) ? Math.round(r.schedule.microbatches / r.config.microbatches) : null;
  return {
    makespanMs: blocks ? r.makespanMs.measured / blocks : r.makespanMs.measured,
    bubble: r.bubble.measured,
    meanOf: blocks ?? (r.steps.length > 1 ? r.steps.length - 1 : r.steps.length),
    stageBlocks: r.stageBlocks,
  };
}

function setCutRun(key: string, m: Partial<CutMeasurement>): void {
  usePipeLab.setState((s) => {
    const prev: CutMeasurement = s.cutRuns[key] ?? { status: 'queued', makespanMs: null, bubble: null, meanOf: null, stageBlocks: null, error: null };
    return { cutRuns: { ...s.cutRuns, [key]: { ...prev, ...m } } };
  });
}

/**
 * Runs the configuration once per distinct cut, one after the other (the
 * 'planning' session; refused while another session holds the workers).
 * A cut the configuration's rules refuse is reported on its row and not run.
 */
export async function runEachCut(config: RunConfig, cuts: readonly BlockRange[][]): Promise<void> {
  if (cannotMeasureReason() !== null) return;
  const jobs: { key: string; config: RunConfig }[] = [];
  const refused: [string, string][] = [];
  for (const ranges of cuts) {
    const c = cutRunConfig(config, ranges);
    const key = configToQuery(c);
    if (jobs.some((j) => j.key === key)) continue;
    const problem = checkRunConfig(c);
    if (problem) refused.push([key, problem.message]);
    else jobs.push({ key, config: c });
  }
  for (const [key, error] of refused) setCutRun(key, { status: 'error', error });
  await measureEach('planning', jobs, (key, ev) => {
    if (ev.status !== 'done') return setCutRun(key, ev.status === 'error' ? { status: 'error', error: ev.error } : { status: ev.status, error: null });
    setCutRun(key, { status: 'done', ...cutMeasured(ev.report), error: null });
  });
  // Cuts a stop left unrun show nothing, not "queued".
  usePipeLab.setState((st) => ({ cutRuns: Object.fromEntries(Object.entries(st.cutRuns).filter(([, m]) => m.status !== 'queued')) }));
}

export function stopCutRuns(): void {
  stopSession('planning');
}
