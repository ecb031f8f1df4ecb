/**
 * Fault injection for tests of the failure paths: a run configuration may name
 * one fault, which the rank that owns the action injects when it reaches it.
 */
import type { Action } from '../schedule/types.ts';

export type FaultKind = 'throw' | 'lose-device' | 'drop-message' | 'malformed-message' | 'crash-worker' | 'nan-loss';
export const FAULT_KINDS: readonly FaultKind[] = ['throw', 'lose-device', 'drop-message', 'malformed-message', 'crash-worker', 'nan-loss'];

export interface Fault {
  kind: FaultKind;
  /** The action (as PyTorch writes it, e.g. "1F2") at which the fault fires. */
  action: string;
  /** The step (0-based) in which it fires; default 0. */
  step?: number;
}

export function faultFires(f: Fault | undefined, a: Action, step: number): boolean {
  return !!f && f.action === `${a.stage}${a.op}${a.mb}` && (f.step ?? 0) === step;
}
