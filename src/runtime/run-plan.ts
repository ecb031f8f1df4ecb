/**
 * Turns a run configuration into what the ranks run: the model cut into
 * ranks × virtual stages (contiguous; balanced FLOPs or equal block counts)
 * and a validated schedule ('auto': built for the model's FLOPs within memCap).
 * Everything here runs before any worker starts.
 */
import type { ModelSpec } from '../nn/model-spec.ts';
import type { BlockRange } from '../nn/partition.ts';
import { generateSchedule } from '../schedule/registry.ts';
import { assertValidSchedule } from '../schedule/validate.ts';
import type { Schedule } from '../schedule/types.ts';
import { autoForRun } from '../plan/plan.ts';
import { pipedreamSchedule } from './pipedream.ts';
import { validateRunConfig, type RunConfig } from './run-config.ts';
import { stageCut } from './run-limits.ts';

export interface RunPlan {
  spec: ModelSpec;
  schedule: Schedule;
  stageBlocks: BlockRange[];
  /** True for PipeDream's asynchronous 1F1B: no flush, a weight update after every backward. */
  async: boolean;
}

export function planRun(config: RunConfig): RunPlan {
  validateRunConfig(config);
  // The same cut the work limits were checked on: by FLOPs, or by block count (config.partition).
  const { spec, stageBlocks } = stageCut(config);
  const isAsync = config.schedule === 'pipedream';
  const schedule = isAsync
    ? pipedreamSchedule(config.ranks, config.steps * config.microbatches)
    : config.schedule === 'auto'
      ? autoForRun(spec, stageBlocks, config.ranks, config.microbatches, Math.max(1, Math.floor(config.batchSize / config.microbatches)), config.memCap || config.ranks)
      : generateSchedule(config.schedule, config.ranks, config.microbatches, config.virtual);
  assertValidSchedule(schedule);
  return { spec, schedule, stageBlocks, async: isAsync };
}
