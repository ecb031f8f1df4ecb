/**
 * Editing the configurations: a change is kept as typed (so the form shows
 * it), checked at once, and named in a message when it breaks a rule; the run
 * button waits until the configuration is valid again.
 */
import { validateRunConfig, type RunConfig } from '../config/run-config.ts';
import { scheduleKind } from '../schedule/index.ts';
import { ConfigError } from '../util/errors.ts';
import { validateSimParams, type SimParams } from './sim-params.ts';
import { problemOf, usePipeLab, type FieldProblem } from './store.ts';

export function checkRunConfig(cfg: RunConfig): FieldProblem | null {
  try {
    validateRunConfig(cfg);
    return null;
  } catch (e) {
    if (e instanceof ConfigError) return problemOf(e);
    return { field: 'config', message: e instanceof Error ? e.message : String(e) };
  }
}

export function checkSimParams(p: SimParams): FieldProblem | null {
  try {
    validateSimParams(p);
    return null;
  } catch (e) {
    if (e instanceof ConfigError) return problemOf(e);
    return { field: 'sim', message: e instanceof Error ? e.message : String(e) };
  }
}

/**
 * A new schedule brings the virtual stages it needs (zb-v: 2; interleaved and
 * looped: at least 2, else they are 1F1B/GPipe; one-stage schedules: 1) and
 * the depth those stages need (a block per stage at least).
 */
export function withSchedule(cfg: RunConfig, schedule: RunConfig['schedule']): RunConfig {
  const virtual = scheduleKind(schedule).virtualFor(Math.max(cfg.virtual, 2));
  return { ...cfg, schedule, virtual, layers: Math.max(cfg.layers, depthFor(cfg.ranks, virtual)) };
}

/** The fewest layers (the model has layers + 1 blocks) that give every one of ranks × virtual stages a block. */
export function depthFor(ranks: number, virtual: number): number {
  return Math.max(1, ranks * virtual - 1);
}

/** Keys set to undefined are left out (a configuration is plain JSON; `{ cut: undefined }` removes the cut). */
export function setConfig(next: RunConfig): void {
  const config = Object.fromEntries(Object.entries(next).filter(([, v]) => v !== undefined)) as unknown as RunConfig;
  usePipeLab.setState({ config, configProblem: checkRunConfig(config) });
}

export function patchConfig(patch: Partial<RunConfig>): void {
  setConfig({ ...usePipeLab.getState().config, ...patch });
}

export function setSim(next: SimParams): void {
  usePipeLab.setState({ sim: next, simProblem: checkSimParams(next) });
}

export function patchSim(patch: Partial<SimParams>): void {
  const cur = usePipeLab.getState().sim;
  let next = { ...cur, ...patch };
  if (patch.schedule && patch.schedule !== cur.schedule) {
    next = { ...next, virtual: scheduleKind(patch.schedule).virtualFor(Math.max(cur.virtual, 2)) };
  }
  setSim(next);
}
