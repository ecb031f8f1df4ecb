/**
 * The rules of the fields that change where a run's bytes live, not what it computes (issue 54): each worker's
 * memory budget (MiB, absent: none) and ZeRO-Offload's optimizer state in host memory. Each refusal names the
 * field, the value and the rule. The budget against the run's planned peak is memory-budget.ts's (it needs the
 * whole validated run); these are the field's own rules.
 */
import { ConfigError } from '../util/errors.ts';
import { generateWindow, scheduleKind, type RunScheduleName } from '../schedule/registry.ts';
import { stageMemory, type LimitInput } from './run-limits.ts';

export interface MemoryFields {
  memoryBudget?: number;
  offloadOptimizer?: boolean;
  zero: number;
}

const SWAP_RULE = "must be 'all' or the stages to swap, distinct whole numbers separated by commas (e.g. 0,2)";

/** `swap` as a link or a flag writes it: `all`, or stage numbers separated by commas. */
export function parseSwapText(raw: string): 'all' | number[] {
  const t = raw.trim();
  if (t === 'all') return 'all';
  const parts = t.split(',').map((x) => x.trim());
  if (t === '' || parts.some((x) => !/^\d+$/.test(x))) throw new ConfigError('swap', raw, SWAP_RULE);
  return parts.map(Number);
}

/** The run's stages (of its ranks × virtual cut) whose stash a run with `swap` sends to the host. */
export function swappedStages(cfg: { swap?: 'all' | number[]; ranks: number; virtual: number }): number[] {
  if (cfg.swap === undefined) return [];
  return cfg.swap === 'all' ? Array.from({ length: cfg.ranks * cfg.virtual }, (_, s) => s) : [...cfg.swap];
}

/**
 * Throws a ConfigError unless `swap` is absent, 'all', or distinct stages of the run's cut, each of which stashes
 * something between its forward and its backward (run-limits.ts stageMemory: what a micro-batch keeps). Call on a
 * configuration that passed its other rules.
 */
export function validateSwap(cfg: LimitInput & { swap?: unknown }): void {
  const sw = cfg.swap;
  if (sw === undefined || sw === 'all') return;
  const stages = cfg.ranks * cfg.virtual;
  if (!Array.isArray(sw) || sw.length === 0 || sw.some((s) => !Number.isInteger(s)) || new Set(sw).size !== sw.length) throw new ConfigError('swap', sw, SWAP_RULE);
  const outside = (sw as number[]).find((s) => s < 0 || s >= stages);
  if (outside !== undefined) throw new ConfigError('swap', sw, `names stage ${outside}, but the run has stages 0–${stages - 1} (ranks × virtual = ${stages})`);
  const per = stageMemory(cfg);
  const empty = (sw as number[]).find((s) => !(per[s].kept > 0));
  if (empty !== undefined) throw new ConfigError('swap', sw, `stage ${empty} stashes nothing between its forward and its backward: there is nothing of it to swap`);
  const kind = scheduleKind(cfg.schedule);
  if (kind.fromStageCosts) return;
  // A stash swaps only while it waits: from its forward to a backward that is not the rank's very next action.
  const order = generateWindow(cfg.schedule, cfg.ranks, cfg.microbatches, Math.min(cfg.steps, 2), kind.virtualFor(cfg.virtual));
  const waits = new Set<number>();
  for (const list of order.order) {
    list.forEach((a, i) => {
      const next = list[i + 1];
      if (a.op === 'F' && !(next && next.stage === a.stage && next.mb === a.mb && next.op !== 'F')) waits.add(a.stage % stages);
    });
  }
  const idle = (sw as number[]).find((s) => !waits.has(s));
  if (idle !== undefined) {
    throw new ConfigError('swap', sw, `stage ${idle} stashes nothing that waits: under ${cfg.schedule} its rank runs every micro-batch's backward right after its forward, so no stash of it could leave the device`);
  }
}

/** Throws a ConfigError naming the first bad memory field, its value and the rule. */
export function validateMemoryFields(cfg: MemoryFields, schedule: RunScheduleName): void {
  const b = cfg.memoryBudget;
  if (b !== undefined && !(typeof b === 'number' && Number.isFinite(b) && b > 0)) {
    throw new ConfigError('memoryBudget', b, "must be a positive number of MiB (each worker's memory budget), or absent for none");
  }
  const o = cfg.offloadOptimizer;
  if (o === undefined || o === false) return;
  if (o !== true) throw new ConfigError('offloadOptimizer', o, 'must be true or false');
  const kind = scheduleKind(schedule);
  if (kind.update !== 'flush') {
    const name = kind.title.split(':')[0];
    throw new ConfigError(
      'offloadOptimizer',
      true,
      `offload moves the optimizer step of a flush to the CPU; ${name} (schedule = ${schedule}) updates inside its stream window, ${kind.update === 'double-buffered' ? 'every m micro-batches' : 'after every backward'}, with no step's end to offload (use a flush schedule such as 1f1b)`,
    );
  }
  if (cfg.zero >= 3) {
    throw new ConfigError(
      'offloadOptimizer',
      true,
      `offload holds a flush's optimizer state (ZeRO 0, or ZeRO-1's and ZeRO-2's shard with its gradients) on the CPU; ZeRO-3 (zero = ${cfg.zero}) also shards the weights and gathers them onto the device before each use, and offloading those (ZeRO-Infinity's parameter offload) is not built here: use zero ≤ 2`,
    );
  }
}
