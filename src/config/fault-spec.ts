/**
 * The fault a run configuration may name, for tests of the failure paths: what
 * fires, at which action (or data-parallel collective), in which step and on
 * which replica. The configuration's type only; the runtime's wrappers that
 * inject it are src/runtime/faults.ts.
 */

export type FaultKind = 'throw' | 'lose-device' | 'drop-message' | 'malformed-message' | 'crash-worker' | 'nan-loss';
export const FAULT_KINDS: readonly FaultKind[] = ['throw', 'lose-device', 'drop-message', 'malformed-message', 'crash-worker', 'nan-loss'];

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
