/**
 * Closed forms: the third source of the numbers the simulator and the runtime
 * produce. All assume the default per-stage costs F = 1, B = 2, I = W = 1,
 * identical stages and free links, and are checked against the simulator
 * exactly (integer makespans) for p = 1..16, m = 1..64 in theory.test.ts.
 *
 *   gpipe, 1f1b        makespan 3(m + p − 1)                   bubble (p−1)/(m+p−1)
 *   interleaved-1f1b   makespan 3(v·m + p − 1)   (m mod p = 0)  bubble (p−1)/(v·m+p−1)
 *   zb-h1              makespan 3m + p − 1 + max(0, p − m)     bubble (p−1)/(3m+p−1) when m ≥ p
 *   zb-v               makespan 6m + max(p − 1, 4p − 2m − 2)   bubble (p−1)/(6m+p−1) when m ≥ 2p−1
 *   looped-bfs         makespan 3(v−1)·max(m, p) + 3(m + p − 1) bubble (p−1)/(v·m+p−1) when m ≥ p
 *   dualpipe-v         makespan 6m + max(p − 1, 5p − 2m − 1 − 2·[m ≤ p])  bubble (p−1)/(6m+p−1) when m ≥ 2p
 *
 * Each rank does 3·v·m units of work (6m for zb-v and dualpipe-v, whose two
 * stages each cost F = I = W = 1, B = 2), and bubble = 1 − work / makespan.
 *
 * DualPipe-V: once m ≥ 2p its bubble equals ZB-V's, p − 1 per rank, here
 * where F and B run one after the other; DualPipe's own gain, overlapping the
 * F of one micro-batch with the B of another (and their communication), is
 * not in this cost model. With fewer micro-batches its warm-up is not filled:
 * the tail is 5p − 2m − 3 for m ≤ p and 5p − 2m − 1 for p < m < 2p.
 *
 * ZB-H1 against the paper: Qi et al. give a bubble of (p−1)(T_F + T_B − T_W)
 * for ZB-H1, T_B being the input-gradient pass I. With T_F = T_I = T_W = 1 that
 * is p − 1 per rank, a third of 1F1B's (p−1)(T_F + T_B) = 3(p − 1) with the
 * full B = I + W = 2; our generator reaches it exactly once m ≥ p
 * (derivation in generators/zb-h1.ts). With m < p there are too few
 * micro-batches to fill the warm-up and the makespan is 2m + 2p − 1.
 *
 * Interleaving and model cost: the per-stage costs above make a rank's share
 * of the model cost 3v, so the bubble fraction, which does not depend on the
 * time unit, is Megatron's (p−1)/(v·m+p−1) for a rank model costing F = 1, B = 2.
 */
import type { ScheduleName } from './registry.ts';

export interface ClosedForm {
  /** Makespan under the default per-stage costs, in time units. */
  makespan: number;
  /** Compute per rank. */
  work: number;
  /** Bubble fraction, 1 − work / makespan, in the textbook form where there is one. */
  bubble: number;
  /** The formula in words. */
  formula: string;
}

export function closedForm(name: ScheduleName | string, p: number, m: number, v = 1): ClosedForm | null {
  switch (name) {
    case 'gpipe':
    case '1f1b':
      if (v !== 1) return null;
      return { makespan: 3 * (m + p - 1), work: 3 * m, bubble: (p - 1) / (m + p - 1), formula: '(p−1)/(m+p−1)' };
    case 'interleaved-1f1b':
      if (m % p !== 0) return null;
      return { makespan: 3 * (v * m + p - 1), work: 3 * v * m, bubble: (p - 1) / (v * m + p - 1), formula: '(p−1)/(v·m+p−1)' };
    case 'zb-h1': {
      if (v !== 1) return null;
      const makespan = 3 * m + p - 1 + Math.max(0, p - m);
      const bubble = m >= p ? (p - 1) / (3 * m + p - 1) : 1 - (3 * m) / makespan;
      return { makespan, work: 3 * m, bubble, formula: m >= p ? '(p−1)/(3m+p−1)' : '1 − 3m/(2m+2p−1)' };
    }
    case 'zb-v': {
      if (v !== 2) return null;
      const tail = Math.max(p - 1, 4 * p - 2 * m - 2);
      return {
        makespan: 6 * m + tail,
        work: 6 * m,
        bubble: tail / (6 * m + tail),
        formula: tail === p - 1 ? '(p−1)/(6m+p−1)' : '(4p−2m−2)/(4m+4p−2)',
      };
    }
    case 'dualpipe-v': {
      if (v !== 2) return null;
      const tail = Math.max(p - 1, 5 * p - 2 * m - 1 - (m <= p ? 2 : 0));
      return {
        makespan: 6 * m + tail,
        work: 6 * m,
        bubble: tail / (6 * m + tail),
        formula: tail === p - 1 ? '(p−1)/(6m+p−1)' : m <= p ? '(5p−2m−3)/(4m+5p−3)' : '(5p−2m−1)/(4m+5p−1)',
      };
    }
    case 'looped-bfs': {
      const makespan = 3 * (v - 1) * Math.max(m, p) + 3 * (m + p - 1);
      const bubble = m >= p ? (p - 1) / (v * m + p - 1) : 1 - (3 * v * m) / makespan;
      return { makespan, work: 3 * v * m, bubble, formula: m >= p ? '(p−1)/(v·m+p−1)' : '1 − v·m/((v−1)·p+m+p−1)' };
    }
    default:
      return null;
  }
}

/** The closed-form bubble fraction, or null where this module knows none. */
export function closedFormBubble(name: ScheduleName | string, p: number, m: number, v = 1): number | null {
  return closedForm(name, p, m, v)?.bubble ?? null;
}

/**
 * Peak (stage, micro-batch) activations held per rank, or null where unknown:
 * GPipe holds all m on every rank; 1F1B holds min(p − r, m) on rank r (p on
 * the first); ZB-H1 holds min(p, m) on every rank (its W's, which keep the
 * activations, trail by r); interleaved rank r holds its warm-up plus one,
 * min(2(p−r−1) + (v−1)·p + 1, v·m) chunk activations, each 1/v of a stage's.
 */
export function closedFormPeakActivations(name: ScheduleName | string, p: number, m: number, v = 1): number[] | null {
  const ranks = Array.from({ length: p }, (_, r) => r);
  switch (name) {
    case 'gpipe':
      return v === 1 ? ranks.map(() => m) : null;
    case '1f1b':
      return v === 1 ? ranks.map((r) => Math.min(p - r, m)) : null;
    case 'zb-h1':
      return v === 1 ? ranks.map(() => Math.min(p, m)) : null;
    case 'interleaved-1f1b':
      return m % p === 0 ? ranks.map((r) => Math.min(2 * (p - r - 1) + (v - 1) * p + 1, v * m)) : null;
    default:
      return null;
  }
}
