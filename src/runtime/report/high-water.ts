/**
 * The one reading of "this worker's high-water mark this step, by kind" that the budget check (budget-check.ts) and
 * the run report's held bytes (held-bytes.ts) share. Fed today from what the worker reports after a step: its
 * update policy's held bytes at rest and in transit (policy.ts HeldBytes) and its stages' largest stash (summed over
 * the stages it holds). The allocator's count (issue 52) replaces the body of `stepHighWater` alone.
 */
import type { BytesByKind } from '../../config/memory-budget.ts';
import type { StepResult } from '../executor/index.ts';

/** Bytes a worker held at its most in a step, by kind (weights, gradients, optimizer state, stash, transient). */
export type HighWater = BytesByKind;

/** Worker `r`'s high-water mark of the step it reports, by kind. */
export function stepHighWater(r: Pick<StepResult, 'held' | 'optimizerBytes' | 'peakStashBytes'>): HighWater {
  const h = r.held ?? { weights: 0, grads: 0, optimizer: r.optimizerBytes ?? 0, transient: 0 };
  const stash = Object.values(r.peakStashBytes).reduce((a, b) => a + b, 0);
  return { weights: h.weights, grads: h.grads, optimizer: h.optimizer, stash, transient: h.transient };
}
