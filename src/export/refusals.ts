/**
 * The runs the PyTorch exporter refuses, and why. The page shows the same
 * message beside its disabled "Export for PyTorch" button, the CLI prints it,
 * and the bundle README lists the refused schedules.
 */
import type { RunConfig, RunScheduleName } from '../config/run-config.ts';
import { RUN_SCHEDULE_NAMES, SCHEDULE_NAMES, SCHEDULES, type UpdatePolicyName } from '../schedule/registry.ts';
import { ConfigError } from '../util/errors.ts';

/** What train.py cannot do for a schedule whose weights are not updated by a flush per step (the registry's update policy). */
const UPDATE_RULES: Readonly<Record<Exclude<UpdatePolicyName, 'flush'>, string>> = {
  'stash-and-update-after-backward': 'updates the weights after every backward with stashed weight versions (no flush)',
  'double-buffered': 'updates the weights every m micro-batches with gradients one weight version stale, keeping two versions (no flush)',
};

/** Schedules train.py does not execute (every one whose update policy is not a flush), with the rule a person reads. */
export const TORCH_REFUSED_SCHEDULES: Readonly<Partial<Record<RunScheduleName, string>>> = Object.fromEntries(
  RUN_SCHEDULE_NAMES.flatMap((name) => {
    const update = SCHEDULES[name].update;
    const who = SCHEDULES[name].title.split(':')[0];
    // Model copies (DualPipe) flush too: train.py holds a stage of each copy per rank and sums their gradients (copies.py).
    if (update === 'flush') return [];
    return [[name, `cannot be exported for PyTorch: ${who} ${UPDATE_RULES[update]}, and train.py runs synchronous schedules only (a flush per step); pick one of ${SCHEDULE_NAMES.join(', ')}`]];
  }),
);

/** The refusal for this configuration, or null when it exports. */
export function torchExportRefusal(cfg: Pick<RunConfig, 'schedule'>): ConfigError | null {
  const rule = TORCH_REFUSED_SCHEDULES[cfg.schedule];
  return rule === undefined ? null : new ConfigError('schedule', cfg.schedule, rule);
}

export function assertTorchExportable(cfg: Pick<RunConfig, 'schedule'>): void {
  const e = torchExportRefusal(cfg);
  if (e) throw e;
}
