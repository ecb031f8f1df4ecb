/**
 * Turns a run configuration into what the ranks run: one plain-JSON copy of
 * it, validated (once per run, here), the model spec built (once, and sent to every
 * rank), the model cut into ranks × virtual stages (balanced, contiguous), and
 * a validated schedule spanning one window of the schedule's update policy.
 * Everything here runs before any worker starts.
 */
import { buildModelSpec } from '../nn/model-config.ts';
import { blockCosts, type ModelSpec } from '../nn/model-spec.ts';
import { partitionBlocks, type BlockRange } from '../nn/partition.ts';
import { scheduleKind, UPDATE_WINDOWS, type ScheduleKind, type UpdateWindows } from '../schedule/registry.ts';
import { assertValidSchedule } from '../schedule/validate.ts';
import type { Schedule } from '../schedule/types.ts';
import { snapshotRunConfig } from './config-snapshot.ts';
import { runStages, toTrainConfig, validateRunConfig, type RunConfig } from './run-config.ts';

export interface RunPlan {
  config: RunConfig;
  spec: ModelSpec;
  kind: ScheduleKind;
  /** The schedule of one window (a step under 'flush'; the whole run for a stream). */
  schedule: Schedule;
  stageBlocks: BlockRange[];
  /** How the run's steps map onto windows under the schedule's update policy. */
  windows: UpdateWindows;
}

export function planRun(input: RunConfig): RunPlan {
  // One plain-JSON copy, read once; validated once, here.
  const config = snapshotRunConfig(input);
  validateRunConfig(config);
  const spec = buildModelSpec(toTrainConfig(config));
  const stageBlocks = partitionBlocks(spec.blocks.length, blockCosts(spec), runStages(config));
  const kind = scheduleKind(config.schedule);
  const windows = UPDATE_WINDOWS[kind.update];
  const m = windows.microbatches(config.microbatches, config.steps);
  kind.validateParams(config.ranks, m, config.virtual);
  const schedule = kind.generate(config.ranks, m, config.virtual);
  assertValidSchedule(schedule);
  return { config, spec, kind, schedule, stageBlocks, windows };
}
