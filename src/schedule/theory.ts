/**
 * Closed forms: the third source of the numbers the simulator and the runtime
 * produce. All assume the default per-stage costs F = 1, B = 2, I = W = 1,
 * identical stages and free links, and are checked against the simulator
 * exactly (integer makespans) for p = 1..16, m = 1..64 in theory.test.ts.
 *
 *   gpipe, 1f1b        makespan 3(m + p − 1)                   bubble (p−1)/(m+p−1)
 *   interleaved-1f1b   makespan 3(v·m + p − 1)   (m ≥ p)        bubble (p−1)/(v·m+p−1)
 *                      makespan 3((v−1)·p + m + p − 1) (m < p)  bubble 1 − v·m/((v−1)·p + m + p − 1)
 *   zb-h1              makespan 3m + p − 1 + max(0, p − m)     bubble (p−1)/(3m+p−1) when m ≥ p
 *   interleaved-zb     makespan 3v·m + p − 1     (m ≥ p)        bubble (p−1)/(3v·m+p−1); none here for m < p
 *   zb-v               makespan 6m + max(p − 1, 4p − 2m − 2)   bubble (p−1)/(6m+p−1) when m ≥ 2p−1
 *   looped-bfs         makespan 3(v−1)·max(m, p) + 3(m + p − 1) bubble (p−1)/(v·m+p−1) when m ≥ p
 *   dualpipe-v         makespan 6m + max(p − 1, 5p − 2m − 1 − 2·[m ≤ p])  bubble (p−1)/(6m+p−1) when m ≥ 2p
 *   dualpipe           makespan 3m + p/2 − 1                  bubble (p/2−1)/(3m+p/2−1) (p even, m even ≥ 2p)
 *   hanayo             makespan 3v·m + 4(p − 1)  (m a multiple of p)  bubble 4(p−1)/(3v·m+4(p−1))
 *                      + 2(v − 2)(p − m mod p) for other m ≥ p; + (3v − 4)(p − m) for m < p
 *
 * Each rank does 3·v·m units of work (6m for zb-v and dualpipe-v, whose two
 * stages each cost F = I = W = 1, B = 2), and bubble = 1 − work / makespan.
 *
 * Hanayo (v = 2W stages per rank in W waves, generators/hanayo.ts): idle time 4(p − 1) per rank
 * against interleaved 1F1B's 3(p − 1) at the same v, so its bubble is the larger,
 * 4(p−1)/(3v·m+4(p−1)) against (p−1)/(v·m+p−1), and falls with W as interleaved's does; its
 * last round, when m is not a multiple of p, is laid out as a whole one and idles
 * 2(v − 2)(p − m mod p) more (none with one wave). Found from the slots of its order and
 * checked against the simulator for p = 1..10, m = 1..24, W = 1..3 (hanayo.test.ts).
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
 * DualPipe (two model copies, m/2 micro-batches each): rank r runs stage r
 * of copy 0 and stage p−1−r of copy 1, 3m units in all. Its idle time per
 * rank, p/2 − 1, is DualPipeV's for p/2 ranks, under the default costs and
 * the bound of every m ≥ 2p. DualPipe's README gives (p/2 − 1)(F&B + B − 3W),
 * F&B being the time of an F overlapped with a B: that is what the order
 * gives when each such pair runs as one block that waits for both of its
 * inputs (with F = I, checked in dualpipe.test.ts by playing the pairs so).
 * Here a pair's F and B run one after the other, the F not waiting for its
 * partner B's gradient, and the idle time is less: p/2 − 1 per rank rather
 * than the README's 2(p/2 − 1) with F&B = F + B = 3, B = 2, W = 1.
 *
 * Interleaving and model cost: the per-stage costs above make a rank's share
 * of the model cost 3v, so the bubble fraction, which does not depend on the
 * time unit, is Megatron's (p−1)/(v·m+p−1) for a rank model costing F = 1, B = 2.
 */
import { interleavedRounds } from './generators/interleaved.ts';
import { ringAllReduceTime } from './allreduce-cost.ts';
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
    case 'interleaved-1f1b': {
      // Any m (rounds of ≥ p micro-batches, generators/interleaved.ts); with m < p a chunk's round cannot fill the pipeline.
      if (m >= p) return { makespan: 3 * (v * m + p - 1), work: 3 * v * m, bubble: (p - 1) / (v * m + p - 1), formula: '(p−1)/(v·m+p−1)' };
      const makespan = 3 * ((v - 1) * p + m + p - 1);
      return { makespan, work: 3 * v * m, bubble: 1 - (3 * v * m) / makespan, formula: '1 − v·m/((v−1)·p+m+p−1)' };
    }
    case 'zb-h1': {
      if (v !== 1) return null;
      const makespan = 3 * m + p - 1 + Math.max(0, p - m);
      const bubble = m >= p ? (p - 1) / (3 * m + p - 1) : 1 - (3 * m) / makespan;
      return { makespan, work: 3 * m, bubble, formula: m >= p ? '(p−1)/(3m+p−1)' : '1 − 3m/(2m+2p−1)' };
    }
    case 'interleaved-zb': {
      // Interleaved 1F1B's order with rank r's W's trailing by r (generators/interleaved-zb.ts): ZB-H1's p − 1 per rank.
      if (m < p) return null;
      const makespan = 3 * v * m + p - 1;
      return { makespan, work: 3 * v * m, bubble: (p - 1) / makespan, formula: '(p−1)/(3v·m+p−1)' };
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
    case 'dualpipe': {
      if (v !== 1 || p % 2 !== 0 || m % 2 !== 0 || m < 2 * p) return null;
      const tail = p / 2 - 1;
      return { makespan: 3 * m + tail, work: 3 * m, bubble: tail / (3 * m + tail), formula: '(p/2−1)/(3m+p/2−1)' };
    }
    case 'hanayo': {
      if (v < 2 || v % 2 !== 0) return null;
      const k = m % p;
      const extra = m < p ? (3 * v - 4) * (p - m) : k === 0 ? 0 : 2 * (v - 2) * (p - k);
      const makespan = 3 * v * m + 4 * (p - 1) + extra;
      return {
        makespan,
        work: 3 * v * m,
        bubble: 1 - (3 * v * m) / makespan,
        formula: extra === 0 ? '4(p−1)/(3v·m+4(p−1))' : m < p ? '1 − 3v·m/(3v·m+4(p−1)+(3v−4)(p−m))' : '1 − 3v·m/(3v·m+4(p−1)+2(v−2)(p−m mod p))',
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
 * min(2(p−r−1) + (v−1)·g + 1, v·m) chunk activations, each 1/v of a stage's,
 * g the first round's micro-batches (p when m is a multiple of p).
 * DualPipe holds p + 1 on every rank (its README's PP + 1), over its two copies' stages.
 * ZB-V holds 2p chunk activations on every rank once m ≥ 2p − 1 (the regime of its bubble's closed form): each
 * chunk half a stage's, so p stages' worth everywhere: 1F1B's first rank's, on every rank (the zero-bubble paper
 * presents the V shape as keeping 1F1B's peak memory, balanced); below that it varies by rank and is left to the
 * simulator.
 * Hanayo holds v·p chunk activations on every rank once m ≥ 2p (p micro-batches of each rank's share; at most that
 * for any m ≥ p): generators/hanayo.ts, checked in hanayo.test.ts.
 * The interleaved zero bubble holds interleaved 1F1B's plus its r deferred W's on rank r,
 * min(2p − r − 1 + (v−1)·g, v·m): rank 0's, the most, is interleaved 1F1B's.
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
    case 'dualpipe':
      return v === 1 && closedForm(name, p, m, v) ? ranks.map(() => p + 1) : null;
    case 'zb-v':
      return v === 2 && m >= 2 * p - 1 ? ranks.map(() => 2 * p) : null;
    case 'hanayo':
      return v >= 2 && v % 2 === 0 && m >= 2 * p ? ranks.map(() => v * p) : null;
    case 'interleaved-1f1b':
      return ranks.map((r) => Math.min(2 * (p - r - 1) + (v - 1) * interleavedRounds(p, m)[0] + 1, v * m));
    case 'interleaved-zb':
      return ranks.map((r) => Math.min(2 * p - r - 1 + (v - 1) * interleavedRounds(p, m)[0], v * m));
    default:
      return null;
  }
}

/** The second axis of a closed form: dp replicas, each stage's gradients (equal stages) and the α–β ring. */
export interface MeshCosts {
  dp: number;
  /** Bytes of each stage's gradients (every stage the same). */
  gradBytes: number;
  latency: number;
  bandwidth: number;
  overlap: boolean;
}

export interface MeshClosedForm {
  /** The pipeline's closed form (m micro-batches per replica): makespan, work, bubble. */
  pipeline: ClosedForm;
  /** One stage's ring all-reduce: 2(dp − 1)·α + 2(dp − 1)/dp · gradBytes / β. */
  allReduce: number;
  /** All-reduces each stage runs: 1 at a flush; a stream's, one per block (step). */
  blocks: number;
  /** The step: compute makespan plus the exposed all-reduce. */
  step: number;
  exposed: number;
  /** exposed / step. */
  allReduceShare: number;
  formula: string;
}

/** Stages each rank holds in a schedule's closed form. */
function stagesPerRank(name: string, v: number): number {
  if (name === 'dualpipe') return 2;
  return name === 'interleaved-1f1b' || name === 'interleaved-zb' || name === 'looped-bfs' || name === 'zb-v' || name === 'dualpipe-v' || name === 'hanayo' ? v : 1;
}

/**
 * A dp × pp step under the closed forms' costs (per stage F = 1, B = 2, I = W = 1, free
 * point-to-point links), m micro-batches per replica, each of the k stages on a rank holding
 * `gradBytes` of gradients whose all-reduce takes A (allreduce-cost.ts). T is the pipeline's
 * makespan (closedForm).
 *
 *   without overlap   every collective starts at T; a rank's k stages share its link:
 *                     step = T + k·A.
 *   with overlap, k = 1 (gpipe, 1f1b, zb-h1): each stage starts when its last backward ends;
 *                     the step's last compute action is a backward, so step = T + A.
 *   with overlap, interleaved-1f1b: the last micro-batch's backward runs down the stages one
 *                     after the other in the cool-down, 2 per stage, so stage s is ready at
 *                     T − 2s; rank 0's link takes its stages (v−1)p, …, p, 0 in that order:
 *                     e = max(T − 2pc, e) + A for c = v−1 … 0, and step = e (T + A when A ≤ 2p).
 *   zb-v, dualpipe-v, dualpipe, looped-bfs, interleaved-zb, hanayo with overlap: no closed form here (their
 *                     stages' last backwards interleave with W's or with each other's); null.
 */
export function meshClosedForm(name: ScheduleName | string, p: number, m: number, v: number, mc: MeshCosts): MeshClosedForm | null {
  const pipeline = closedForm(name, p, m, v);
  if (!pipeline) return null;
  const T = pipeline.makespan;
  const A = ringAllReduceTime(mc.gradBytes, mc.dp, mc.latency, mc.bandwidth);
  const k = stagesPerRank(name, v);
  let step: number;
  let formula: string;
  if (!mc.overlap) {
    step = T + k * A;
    formula = k === 1 ? 'T + A' : `T + ${k}·A`;
  } else if (k === 1) {
    step = T + A;
    formula = 'T + A';
  } else if (name === 'interleaved-1f1b') {
    let e = -Infinity;
    for (let c = v - 1; c >= 0; c--) e = Math.max(T - 2 * p * c, e) + A;
    step = e;
    formula = step === T + A ? 'T + A (the other chunks hide in the cool-down)' : 'rank 0’s link: e = max(T − 2pc, e) + A, c = v−1 … 0';
  } else return null;
  const exposed = step - T;
  return { pipeline, allReduce: A, blocks: 1, step, exposed, allReduceShare: step > 0 ? exposed / step : 0, formula };
}

/**
 * PipeDream-2BW's stream on dp replicas under the closed forms' costs (F = 1, B = 2, free point-to-point links):
 * S steps of m micro-batches in one 1F1B order, each stage's all-reduce A after its last backward of each block of
 * m, its worker waiting for it (simulate-blocks.ts). The fill and drain are paid once and every block's all-reduce
 * once on the critical path:
 *
 *   stream = 3(S·m + p − 1) + S·A, its compute 3(S·m + p − 1) + (S − 1)·A (the last block's A comes after it).
 *
 * Found and checked against the simulator over p, m ≥ p, S, dp, α and β, any F and B ((F + B) for the 3).
 */
export function streamMeshClosedForm(p: number, m: number, steps: number, mc: MeshCosts): MeshClosedForm {
  const S = steps;
  const T = 3 * (S * m + p - 1);
  const A = ringAllReduceTime(mc.gradBytes, mc.dp, mc.latency, mc.bandwidth);
  const compute = T + (S - 1) * A;
  const step = T + S * A;
  const pipeline: ClosedForm = { makespan: compute, work: 3 * S * m, bubble: compute > 0 ? 1 - (3 * S * m) / compute : 0, formula: '1 − 3S·m/(3(S·m+p−1) + (S−1)·A)' };
  return { pipeline, allReduce: A, blocks: S, step, exposed: A, allReduceShare: step > 0 ? A / step : 0, formula: `3(S·m+p−1) + S·A, S = ${S}` };
}
