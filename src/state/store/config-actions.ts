/**
 * Editing the configurations: a change is kept as typed (so the form shows
 * it), checked at once, and named in a message when it breaks a rule; the run
 * button waits until the configuration is valid again.
 */
import { validateRunConfig, type RunConfig } from '../../config/run-config.ts';
import { runsAsStream, scheduleKind, streamMeshRefusal } from '../../schedule/index.ts';
import { ConfigError } from '../../util/errors.ts';
import { checkMemoryBudget } from '../../config/memory-budget.ts';
import { validateSimParams, type SimParams } from './sim-params.ts';
import { problemOf, usePipeLab, type FieldProblem } from './store.ts';

export function checkRunConfig(cfg: RunConfig): FieldProblem | null {
  try {
    validateRunConfig(cfg);
    // The budget against the run's plan on the page's GPU backend: refused here as the Run would refuse it, naming what would fit.
    checkMemoryBudget(cfg, 'gpu');
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
 * looped: at least 2, else they are 1F1B/GPipe; hanayo: an even number, 2 per
 * wave; one-stage schedules: 1) and
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

/** A one-click way out of a configuration's problem: what it changes, in words, and the valid configuration it gives. */
export interface ConfigFix {
  label: string;
  config: RunConfig;
}

/**
 * The smallest change that makes `cfg` valid, for the two clashes a form edit meets most (more stages than the
 * model has blocks; a batch the replicas' micro-batches do not divide): deepen the model to one block per stage, round
 * the batch to the nearest multiple of dp × microbatches, or both. Null when `cfg` is valid or neither makes it so.
 */
export function suggestFix(cfg: RunConfig): ConfigFix | null {
  if (!checkRunConfig(cfg)) return null;
  const stages = cfg.ranks * scheduleKind(cfg.schedule).virtualFor(cfg.virtual);
  const deeper = stages > cfg.layers + 1 && Number.isInteger(stages) ? { layers: stages - 1 } : null;
  const unit = (cfg.dp ?? 1) * cfg.microbatches;
  const rounded = Number.isInteger(unit) && unit > 0 && cfg.batchSize % unit !== 0 ? { batchSize: unit * Math.max(1, Math.round(cfg.batchSize / unit)) } : null;
  const candidates: { label: string; patch: Partial<RunConfig> }[] = [];
  if (deeper) candidates.push({ label: `Deepen the model to ${deeper.layers} layers (a block per stage)`, patch: deeper });
  if (rounded) candidates.push({ label: `Set the batch to ${rounded.batchSize} (a multiple of ${cfg.dp > 1 ? 'dp × ' : ''}micro-batches = ${unit})`, patch: rounded });
  if (deeper && rounded) candidates.push({ label: `Deepen the model to ${deeper.layers} layers and set the batch to ${rounded.batchSize}`, patch: { ...deeper, ...rounded } });
  for (const c of candidates) {
    const config = { ...cfg, ...c.patch };
    if (!checkRunConfig(config)) return { label: c.label, config };
  }
  return null;
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
    // A stream takes what replicas it can (stream-replicas.ts): PipeDream none; 2BW a plain all-reduce, overlapped.
    const refused = streamMeshRefusal(patch.schedule, next);
    if (refused?.key === 'dp') next = { ...next, dp: 1, zero: 0, reshard: 'step' };
    else if (runsAsStream(patch.schedule)) next = { ...next, zero: 0, reshard: 'step', overlap: true };
  }
  setSim(next);
}
