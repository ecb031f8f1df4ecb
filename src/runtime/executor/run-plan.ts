/**
 * Turns a run configuration into what the ranks run: one plain-JSON copy of
 * it, validated (once per run, here), the model spec built (once, and sent to
 * every rank), the model cut into ranks × virtual stages (contiguous; balanced
 * FLOPs or equal block counts; a schedule with model copies, DualPipe, repeats
 * the cut once per copy), and a validated schedule spanning one window of
 * the schedule's update policy (a schedule planned from stage costs, 'auto', is
 * built for the model's FLOPs within memCap). Everything here runs before any
 * worker starts.
 */
import type { ModelSpec } from '../../nn/model-spec.ts';
import type { BlockRange } from '../../nn/partition.ts';
import { autoForRun } from '../../plan/plan.ts';
import { generateWindow, scheduleKind, UPDATE_WINDOWS, type ScheduleKind, type UpdateWindows } from '../../schedule/registry.ts';
import { assertValidSchedule } from '../../schedule/validate.ts';
import type { Schedule } from '../../schedule/types.ts';
import { snapshotRunConfig } from '../../config/config-snapshot.ts';
import { validateRunConfig, type RunConfig } from '../../config/run-config.ts';
import { stageCut } from '../../config/run-limits.ts';
import { checkMemoryBudget, type BudgetTarget } from '../../config/memory-budget.ts';
import type { TextCorpus } from '../../data/text-corpus.ts';
import { requireCorpus } from '../../data/text-registry.ts';

export interface RunPlan {
  config: RunConfig;
  spec: ModelSpec;
  kind: ScheduleKind;
  /** The schedule of one window (a step under 'flush'; the whole run for a stream). */
  schedule: Schedule;
  stageBlocks: BlockRange[];
  /** How the run's steps map onto windows under the schedule's update policy. */
  windows: UpdateWindows;
  /** A run on "your text": the loaded text it names, for the workers. */
  corpus?: TextCorpus;
}

/** The `auto` schedule a run plans: the fastest found from the model's FLOPs per stage (each micro-batch's rows) within its memory cap (memCap, 0: 1F1B's p micro-batches). */
export function autoScheduleForRun(config: RunConfig, spec: ModelSpec, cut: readonly (readonly [number, number])[]): Schedule {
  const rows = Math.max(1, Math.floor(config.batchSize / (config.dp * config.microbatches)));
  return autoForRun(spec, cut, config.ranks, config.microbatches, rows, config.memCap || config.ranks);
}

/**
 * The order of one window of `steps` steps, as a run builds it: a synchronous schedule's one step (whatever `steps`),
 * a stream's order over steps × microbatches (`auto` is planned from the model instead: autoScheduleForRun).
 */
export function windowOrder(cfg: Pick<RunConfig, 'schedule' | 'ranks' | 'microbatches' | 'virtual'>, steps: number): Schedule {
  return generateWindow(cfg.schedule, cfg.ranks, cfg.microbatches, steps, scheduleKind(cfg.schedule).virtualFor(cfg.virtual));
}

/** `budgetTarget`: where the run's memory lives ('gpu': a GPU backend's workers, whose plan adds the GPU's own overheads; 'cpu', the default: the float64 CPU host, the CLI and the export). */
export function planRun(input: RunConfig, budgetTarget: BudgetTarget = 'cpu'): RunPlan {
  // One plain-JSON copy, read once; validated once, here.
  const config = snapshotRunConfig(input);
  validateRunConfig(config);
  // A run whose planned per-worker peak passes its memory budget is refused here, before any worker starts.
  checkMemoryBudget(config, budgetTarget);
  // The same cut the work limits were checked on: by FLOPs, or by block count (config.partition).
  const { spec, stageBlocks: cut } = stageCut(config);
  const kind = scheduleKind(config.schedule);
  const windows = UPDATE_WINDOWS[kind.update];
  if (kind.fromStageCosts) kind.validateParams(config.ranks, config.microbatches, config.virtual);
  const schedule = kind.fromStageCosts ? autoScheduleForRun(config, spec, cut) : windowOrder(config, config.steps);
  assertValidSchedule(schedule);
  // Model copies (DualPipe): the model is cut once; stage c·k + j of the schedule holds the same blocks as stage j (copies.ts).
  const stageBlocks = kind.copies > 1 ? Array.from({ length: kind.copies }, () => cut.map((r): BlockRange => [r[0], r[1]])).flat() : cut;
  const corpus = config.dataset === 'text' ? requireCorpus(config.textHash) : undefined;
  return { config, spec, kind, schedule, stageBlocks, windows, ...(corpus ? { corpus } : {}) };
}
