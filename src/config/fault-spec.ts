/**
 * The fault a run configuration may name, for tests of the failure paths: what
 * fires, at which action (or data-parallel collective), in which step and on
 * which replica, and the check that it names an action the run has. The
 * runtime's wrappers that
 * inject it are src/runtime/executor/faults.ts.
 */
import { parseAction } from '../schedule/action-text.ts';
import { UPDATE_WINDOWS, type ScheduleKind } from '../schedule/registry.ts';
import type { Op } from '../schedule/types.ts';
import { ConfigError } from '../util/errors.ts';

/**
 * 'skip-gather' (ZeRO-3): the weights the action's all-gather brings are not written into its stage's buffers, which
 * get storage back from the pool all the same (the collective still runs, so the ring stays in step): the action
 * computes on whatever that storage holds, the missed gather that freeing alone cannot catch. It fires where the
 * named action gathers (with reshard = step, only a stage's first weight-reading action in the step does).
 */
export type FaultKind = 'throw' | 'lose-device' | 'drop-message' | 'malformed-message' | 'crash-worker' | 'nan-loss' | 'skip-gather';
export const FAULT_KINDS: readonly FaultKind[] = ['throw', 'lose-device', 'drop-message', 'malformed-message', 'crash-worker', 'nan-loss', 'skip-gather'];

export interface Fault {
  kind: FaultKind;
  /**
   * The action (as PyTorch writes it, e.g. "1F2") at which the fault fires, or
   * `AR<stage>` (e.g. "AR1"): in the middle of that stage's data-parallel
   * collective (its all-reduce or ZeRO-1 update), at its second chunk exchange.
   */
  action: string;
  /** The step (0-based) in which it fires; default 0. */
  step?: number;
  /** The replica whose worker fires it (data-parallel runs); default 0. */
  replica?: number;
}

/** What a fault's action is checked against: the run's shape and its schedule's kind. */
export interface FaultTarget {
  kind: ScheduleKind;
  ranks: number;
  virtual: number;
  microbatches: number;
  steps: number;
  dp: number;
}

/**
 * Refuses a fault whose action names no action of the run, so that it could
 * never fire: an action (`1F2`) must be one the schedule runs (checked on the
 * generated schedule; for a schedule built from stage costs, `auto`, against the
 * stages, micro-batches and ops it may use), `AR<stage>` a stage's collective
 * of a data-parallel run. The message names the actions that exist.
 */
export function checkFaultAction(action: string, t: FaultTarget): void {
  const virtual = t.kind.virtualFor(t.virtual);
  // DualPipe's two model copies: twice the stages (copies.ts).
  const stages = t.ranks * virtual * t.kind.copies;
  const microbatches = UPDATE_WINDOWS[t.kind.update].microbatches(t.microbatches, t.steps);
  const ops: Op[] = t.kind.splitBackward ? ['F', 'B', 'I', 'W'] : ['F', 'B'];
  const collective = /^AR(\d+)$/.exec(action);
  const ar = t.dp > 1 ? `, or AR0…AR${stages - 1} for a stage's all-reduce` : ' (AR<stage> needs dp ≥ 2: one replica has no all-reduce)';
  const exist = `this run's actions are <stage><${ops.join('|')}><micro-batch> with stage 0…${stages - 1} and micro-batch 0…${microbatches - 1} (e.g. "0F0", "${stages - 1}${ops[1]}${microbatches - 1}")${ar}`;
  if (collective) {
    if (t.dp > 1 && Number(collective[1]) < stages) return;
    throw new ConfigError('fault.action', action, `names no collective of this run; ${exist}`);
  }
  const a = parseAction(action);
  const known = a !== null && a.stage < stages && a.mb < microbatches && ops.includes(a.op);
  const runs = known && (t.kind.fromStageCosts || t.kind.generate(t.ranks, microbatches, virtual).order.some((row) => row.some((x) => x.stage === a.stage && x.op === a.op && x.mb === a.mb)));
  if (!runs) throw new ConfigError('fault.action', action, `names no action of this run's ${t.kind.name} schedule, so it would never fire; ${exist}`);
}
