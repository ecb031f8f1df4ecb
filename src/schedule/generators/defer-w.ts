/**
 * The zero-bubble paper's split backward on an existing order (Qi et al.,
 * ICLR 2024, arXiv:2401.10241, §3.1): every B becomes I (the input gradient,
 * on the critical path) followed, later, by its W (the weight gradient, which
 * nothing waits for). Rank r keeps at most lag(r) W's pending: after each I, if
 * more than lag(r) are pending the oldest is run, and the rest run after the
 * rank's last I, filling its cool-down. F's and I's keep the order's sequence,
 * so the result is deadlock-free whenever the order is (no action waits on a W).
 *
 * Each deferred W keeps its micro-batch's activations until it runs, so a
 * rank's peak is at most the order's peak + lag(r) (simulate.ts peakMemory).
 * ZB-H1 is 1F1B with lag(r) = r (zb-h1.ts); the interleaved zero bubble is
 * interleaved 1F1B with the same lag (interleaved-zb.ts).
 */
import type { Action, Schedule } from '../types.ts';

export function deferWeightGradients(s: Schedule, lagOf: (rank: number) => number, name: string): Schedule {
  const order = s.order.map((list, r): Action[] => {
    const lag = lagOf(r);
    const out: Action[] = [];
    const pending: Action[] = [];
    for (const a of list) {
      if (a.op !== 'B') {
        out.push(a);
        continue;
      }
      out.push({ ...a, op: 'I' });
      pending.push({ ...a, op: 'W' });
      if (pending.length > lag) out.push(pending.shift() as Action);
    }
    out.push(...pending);
    return out;
  });
  return { ...s, name, order };
}
