/**
 * The rules of the fields that change where a run's bytes live, not what it computes (issue 54): each worker's
 * memory budget (MiB, absent: none) and ZeRO-Offload's optimizer state in host memory. Each refusal names the
 * field, the value and the rule. The budget against the run's planned peak is memory-budget.ts's (it needs the
 * whole validated run); these are the field's own rules.
 */
import { ConfigError } from '../util/errors.ts';
import { scheduleKind, type RunScheduleName } from '../schedule/registry.ts';

export interface MemoryFields {
  memoryBudget?: number;
  offloadOptimizer?: boolean;
  zero: number;
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
  if (cfg.zero >= 2) {
    throw new ConfigError('offloadOptimizer', true, `offload holds the optimizer state of a flush (ZeRO 0, or ZeRO-1's shard) on the CPU; ZeRO-${cfg.zero}'s sharded step (zero = ${cfg.zero}) keeps its state beside its gradient shards on the device: use zero ≤ 1`);
  }
}
