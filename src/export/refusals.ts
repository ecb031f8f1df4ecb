/**
 * The runs the PyTorch exporter refuses, and why. The page shows the same
 * message beside its disabled "Export for PyTorch" button, the CLI prints it,
 * and the bundle README lists the refused schedules.
 */
import type { RunConfig, RunScheduleName } from '../runtime/run-config.ts';
import { SCHEDULE_NAMES } from '../schedule/registry.ts';
import { ConfigError } from '../util/errors.ts';

/** Schedules train.py does not execute, with the rule a person reads. */
export const TORCH_REFUSED_SCHEDULES: Readonly<Partial<Record<RunScheduleName, string>>> = {
  pipedream:
    `cannot be exported for PyTorch: PipeDream updates the weights after every backward with stashed weight versions (no flush), and train.py runs synchronous schedules only (a flush per step); pick one of ${SCHEDULE_NAMES.join(', ')}`,
};

/** The refusal for this configuration, or null when it exports. */
export function torchExportRefusal(cfg: Pick<RunConfig, 'schedule'>): ConfigError | null {
  const rule = TORCH_REFUSED_SCHEDULES[cfg.schedule];
  return rule === undefined ? null : new ConfigError('schedule', cfg.schedule, rule);
}

export function assertTorchExportable(cfg: Pick<RunConfig, 'schedule'>): void {
  const e = torchExportRefusal(cfg);
  if (e) throw e;
}
