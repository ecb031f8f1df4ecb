/**
 * Where a worker's actions go on the run's clock when nothing waited for them (rank-executor.ts): each action's
 * interval is set at the step's end from its GPU span (gpu/action-clock.ts).
 *
 * - 'timestamp' spans are on the device's own clock. One offset per worker and step puts them on the epoch clock:
 *   the GPU cannot start an action's kernels before they were issued, so offset ≥ bound − span start for every
 *   action (bound: the moment its commands were all encoded when one submit carried them, else the moment it
 *   began issuing them), and it cannot end them after the step's end saw them done, so offset ≤ doneBy − last end.
 *   The smallest offset the first allows (capped by the second) is taken: exact for an action that found the GPU
 *   idle (the step's first, one after a wait for its input), and the gaps between actions are the GPU's own.
 * - 'wall' spans have only an end (a completion callback's time, already on the epoch clock); the start is the
 *   later of the action's issue and the previous action's end.
 *
 * Either way a worker's actions stay in their order and never overlap (a start before the previous end, as
 * browsers' quantized timestamps can give, is moved to it), and `gpuMs` keeps the span's own length.
 *
 * A read that the CPU began while the GPU still ran an action issued before it (a send's readback, the flush's
 * gather of the gradients) waited for that action too: its interval starts when the action ended (settleReads), so
 * that a crossing's cost is the copy and the map, not the compute before it.
 */
import type { ActionSpan } from '../../gpu/action-clock.ts';
import type { Interval } from '../../schedule/timeline.ts';

/** An action issued and not waited for: its interval (placed later) and what the CPU knew of it. */
export interface IssuedAction {
  iv: Interval;
  /** Epoch ms when it began issuing its kernels. */
  issuedAt: number;
  /** Epoch ms when its commands were all encoded (not yet submitted). */
  encodedAt: number;
  /** Whether one submit carried all its commands (none was made while it issued them). */
  oneSubmit: boolean;
}

/** The epoch offset of a step's device-clock spans (see above); 0 for none. */
export function timestampOffset(actions: readonly IssuedAction[], spans: readonly ActionSpan[], doneBy: number): number {
  let lower = -Infinity;
  let lastEnd = -Infinity;
  actions.forEach((a, i) => {
    const [s, e] = spans[i];
    lower = Math.max(lower, (a.oneSubmit ? a.encodedAt : a.issuedAt) - s);
    lastEnd = Math.max(lastEnd, e);
  });
  if (!Number.isFinite(lower)) return 0;
  return Math.min(lower, doneBy - lastEnd);
}

/** Sets each action's start, end (and, from timestamps, gpuMs) from its span; spans[i] belongs to actions[i]. */
export function placeActions(actions: readonly IssuedAction[], spans: readonly ActionSpan[], source: 'timestamp' | 'wall', doneBy: number): void {
  if (spans.length !== actions.length) throw new Error(`${actions.length} actions issued but ${spans.length} GPU spans read back`);
  const offset = source === 'timestamp' ? timestampOffset(actions, spans, doneBy) : 0;
  let prevEnd = -Infinity;
  actions.forEach((a, i) => {
    const [s, e] = spans[i];
    const start = Math.max(source === 'timestamp' ? s + offset : a.issuedAt, prevEnd);
    const end = Math.max(e + offset, start);
    a.iv.start = start;
    a.iv.end = end;
    if (source === 'timestamp') a.iv.gpuMs = Math.max(0, e - s);
    prevEnd = end;
  });
}

/** Reads that waited for actions issued before them start at the latest such action's end (see above). */
export function settleReads(intervals: readonly Interval[], actions: readonly IssuedAction[]): void {
  for (const iv of intervals) {
    const isRead = (iv.op === 'comm' && iv.comm === 'readback') || (iv.op === 'collective' && iv.coll === 'gather-grads');
    if (!isRead) continue;
    let ready = -Infinity;
    for (const a of actions) {
      if (a.encodedAt > iv.start) break;
      ready = a.iv.end;
    }
    iv.start = Math.min(Math.max(iv.start, ready), iv.end);
  }
}
