/**
 * Two readings of "what this worker held in a step, by kind" (weights, gradients, optimizer state, stash, transient):
 *  - `stepHighWater`, the allocator's count (nn/memory-ledger.ts, DESIGN.md "Memory: counted where it is
 *    allocated"): the live bytes at the step's high-water mark, its ledger kinds folded into the plan's
 *    (gathered weights, staging and temporaries are the plan's transient). The budget check (budget-check.ts) reads
 *    it, against the plan the run was admitted on (config/memory-budget.ts), which counts the same things.
 *  - `policyHeld`, what the update policy and the stages report of their own (policy.ts HeldBytes, the stages'
 *    largest stash): each kind at its own most, the run report's per-kind figures (held-bytes.ts) beside the count.
 * A worker that reports no count (none does today: every backend has its ledger) falls back to the policy's.
 */
import type { BytesByKind } from '../../config/memory-budget.ts';
import { byKind, type MemoryKind, type StepMemory } from '../../nn/memory-ledger.ts';
import type { StepResult } from '../executor/index.ts';

/** Bytes a worker held in a step, by kind (weights, gradients, optimizer state, stash, transient). */
export type HighWater = BytesByKind;

/** The allocator's kinds folded into the plan's: gathered weights, staging and temporaries are its transient. */
export function planKinds(k: Record<MemoryKind, number>): HighWater {
  return { weights: k.weights, grads: k.grads, optimizer: k.optimizer, stash: k.stash, transient: k.gathered + k.staging + k.temp };
}

/** The allocator's high-water mark of a step, by the plan's kinds. */
export function ledgerHighWater(m: StepMemory): HighWater {
  return planKinds(byKind(m.peak.live));
}

/** Worker `r`'s high-water mark of the step it reports, by kind: the allocator's count where it has one. */
export function stepHighWater(r: Pick<StepResult, 'held' | 'optimizerBytes' | 'peakStashBytes' | 'memory'>): HighWater {
  return r.memory ? ledgerHighWater(r.memory) : policyHeld(r);
}

/** What the worker's update policy and stages report they held in the step, each kind at its own most. */
export function policyHeld(r: Pick<StepResult, 'held' | 'optimizerBytes' | 'peakStashBytes'>): HighWater {
  const h = r.held ?? { weights: 0, grads: 0, optimizer: r.optimizerBytes ?? 0, transient: 0 };
  const stash = Object.values(r.peakStashBytes).reduce((a, b) => a + b, 0);
  return { weights: h.weights, grads: h.grads, optimizer: h.optimizer, stash, transient: h.transient };
}
