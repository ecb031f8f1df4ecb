/**
 * Turns a run configuration into what the ranks run: the model cut into
 * ranks × virtual stages (balanced, contiguous) and a validated schedule.
 * Everything here runs before any worker starts.
 */
import { buildModelSpec } from '../nn/model-config.ts';
import { blockCosts, type ModelSpec } from '../nn/model-spec.ts';
import { partitionBlocks, type BlockRange } from '../nn/partition.ts';
import { generateSchedule } from '../schedule/registry.ts';
import { assertValidSchedule } from '../schedule/validate.ts';
import type { Schedule } from '../schedule/types.ts';
import { autoForRun } from '../plan/plan.ts';
import { pipedreamSchedule } from './pipedream.ts';
import { runStages, toTrainConfig, validateRunConfig, type RunConfig } from './run-config.ts';

export interface RunPlan {
  spec: ModelSpec;
  schedule: Schedule;
  stageBlocks: BlockRange[];
  /** True for PipeDream's asynchronous 1F1B: no flush, a weight update after every backward. */
  async: boolean;
}

export function planRun(config: RunConfig): RunPlan {
  validateRunConfig(config);
  const spec = buildModelSpec(toTrainConfig(config));
  const stages = runStages(config);
  const stageBlocks = partitionBlocks(spec.blocks.length, blockCosts(spec), stages);
  const isAsync = config.schedule === 'pipedream';
  const schedule = isAsync
    ? pipedreamSchedule(config.ranks, config.steps * config.microbatches)
    : config.schedule === 'auto'
      ? autoForRun(spec, stageBlocks, config.ranks, config.microbatches, Math.max(1, Math.floor(config.batchSize / config.microbatches)))
      : generateSchedule(config.schedule, config.ranks, config.microbatches, config.virtual);
  assertValidSchedule(schedule);
  return { spec, schedule, stageBlocks, async: isAsync };
}
