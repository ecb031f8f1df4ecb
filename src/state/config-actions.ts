/**
 * Editing the configurations: a change is kept as typed (so the form shows
 * it), checked at once, and named in a message when it breaks a rule; the run
 * button waits until the configuration is valid again.
 */
import { isTwoD, type DatasetName } from '../data/datasets.ts';
import { TWO_D_DEFAULT_NOISE } from '../data/two-d.ts';
import { defaultModelConfig } from '../nn/model-config.ts';
import { defaultTrainConfig } from '../nn/train-config.ts';
import { validateRunConfig, type RunConfig } from '../runtime/run-config.ts';
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

/** A new data set brings its model (2-D sets: the MLP; names: the character MLP) and a fitting noise level. */
export function withDataset(cfg: RunConfig, dataset: DatasetName): RunConfig {
  const crossed = isTwoD(dataset) !== isTwoD(cfg.dataset);
  let next: RunConfig = { ...cfg, dataset };
  if (crossed) {
    const m = defaultModelConfig(dataset);
    const t = defaultTrainConfig(dataset);
    next = { ...next, ...m, layers: Math.max(m.layers, cfg.ranks * cfg.virtual - 1), batchSize: t.batchSize, lr: t.lr, weightDecay: t.weightDecay };
    if (next.batchSize % next.microbatches !== 0) next.batchSize = next.microbatches * Math.max(1, Math.round(next.batchSize / next.microbatches));
  }
  if (isTwoD(dataset)) next.noise = TWO_D_DEFAULT_NOISE[dataset];
  return next;
}

/** A new schedule brings the virtual stages it needs (zb-v: 2; one-stage schedules: 1). */
export function withSchedule(cfg: RunConfig, schedule: RunConfig['schedule']): RunConfig {
  if (schedule === 'pipedream') return { ...cfg, schedule, virtual: 1 };
  const kind = scheduleKind(schedule);
  const virtual = kind.placement === 'v' ? 2 : kind.acceptsVirtual ? cfg.virtual : 1;
  return { ...cfg, schedule, virtual };
}

export function setConfig(next: RunConfig): void {
  usePipeLab.setState({ config: next, configProblem: checkRunConfig(next) });
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
    const kind = scheduleKind(patch.schedule);
    next = { ...next, virtual: kind.placement === 'v' ? 2 : kind.acceptsVirtual ? Math.max(cur.virtual, 2) : 1 };
  }
  setSim(next);
}
