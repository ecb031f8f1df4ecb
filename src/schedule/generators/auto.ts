/**
 * The automatic schedule: given p ranks (one stage each), m micro-batches, the
 * per-stage costs of F, I and W, the communication between stages, and a
 * per-rank cap on live activations (in micro-batches, in bytes, or both), it
 * returns the fastest schedule it can find whose peak stays within the cap, in
 * the spirit of the zero-bubble paper's automatic scheduler (Qi et al., ICLR
 * 2024, arXiv:2401.10241, section 4).
 *
 * How. A greedy list scheduler plays the pipeline with the real costs: a rank
 * that is free runs, among what its inputs allow right now, an I (the critical
 * path), else an F if its live activations stay within the limit, else a
 * deferred W (the zero-bubble idea: W fills what would be bubble), else it
 * waits for the next input. Decisions are made in global time order, so each
 * is taken knowing everything that has arrived by then. It is run for every
 * in-flight limit k = 1 … min(cap, 3p) (and the cap itself), in two flavours
 * (I first, or F first), and beside them the known schedules 1F1B and ZB-H1;
 * every candidate is simulated by simulate.ts, those over the cap are dropped,
 * and the shortest makespan wins (the earliest candidate on a tie). So the
 * result is never slower than 1F1B or ZB-H1 whenever they fit the cap, and it
 * holds ZB-H1's memory when the cap equals 1F1B's (p micro-batches on rank 0).
 *
 * A cap no schedule can meet (below one micro-batch on some rank) is refused
 * with the smallest cap that works.
 */
import { ConfigError, requireInt } from '../../util/errors.ts';
import { stageToRankMap } from '../placement.ts';
import { linkDelayOf, resolveCosts, simulate, type CostModel, type SimulationResult } from '../simulate.ts';
import type { Action, Schedule } from '../types.ts';
import { oneFOneB } from './one-f-one-b.ts';
import { zbH1 } from './zb-h1.ts';

export interface MemoryCap {
  /** Most micro-batches' activations a rank may hold at once. */
  microbatches?: number;
  /** Most bytes (costs.heldBytes per micro-batch) a rank may hold at once. */
  bytes?: number;
}

export interface AutoResult {
  schedule: Schedule;
  simulation: SimulationResult;
  /** Which candidate won, e.g. `greedy I-first k=4`, `zb-h1`. */
  candidate: string;
}

/** I-first: I over F; F-first: F over I; feed: F over I while the next rank has no forward input waiting. */
type Flavour = 'I-first' | 'F-first' | 'feed';

/** Checks the cap against what one micro-batch needs; throws a ConfigError naming the smallest cap that works. */
function checkCap(cap: MemoryCap, held: Float64Array): void {
  if (cap.microbatches === undefined && cap.bytes === undefined) {
    throw new ConfigError('memCap', cap, 'needs a cap in micro-batches, in bytes, or both');
  }
  if (cap.microbatches !== undefined) {
    if (typeof cap.microbatches !== 'number' || Number.isNaN(cap.microbatches) || cap.microbatches < 1) {
      throw new ConfigError('memCap.microbatches', cap.microbatches, 'must be at least 1: no schedule runs with less than one micro-batch in flight; the smallest cap that works is 1');
    }
  }
  if (cap.bytes !== undefined) {
    let worst = 0;
    let stage = 0;
    held.forEach((b, s) => {
      if (b > worst) {
        worst = b;
        stage = s;
      }
    });
    if (typeof cap.bytes !== 'number' || Number.isNaN(cap.bytes) || cap.bytes < worst) {
      throw new ConfigError(
        'memCap.bytes',
        cap.bytes,
        `is below one micro-batch of stage ${stage} (${worst} bytes): no schedule meets it; the smallest cap that works is ${worst} bytes`,
      );
    }
  }
}

/** One greedy play; the order it chose, as a Schedule. */
function greedy(p: number, m: number, costs: CostModel, limit: number, capBytes: number, flavour: Flavour): Schedule {
  const c = resolveCosts(costs, p);
  const delay = linkDelayOf(c);
  const order: Action[][] = Array.from({ length: p }, () => []);
  const nextF = new Int32Array(p);
  const nextI = new Int32Array(p);
  const nextW = new Int32Array(p);
  const free = new Float64Array(p);
  const bytes = new Float64Array(p);
  // fIn[r][i]: when stage r has micro-batch i's activation; gIn[r][i]: its output gradient; NaN until known.
  const fIn = Array.from({ length: p }, (_, r) => new Float64Array(m).fill(r === 0 ? 0 : NaN));
  const gIn = Array.from({ length: p }, () => new Float64Array(m).fill(NaN));
  let left = 3 * p * m;
  const canF = (r: number) => nextF[r] < m && nextF[r] - nextW[r] < limit && bytes[r] + c.heldBytes[r] <= capBytes;
  while (left > 0) {
    // The rank that can start something earliest, and what.
    let bestRank = -1;
    let bestTime = Infinity;
    let bestOp: 'F' | 'I' | 'W' = 'W';
    for (let r = 0; r < p; r++) {
      const t0 = free[r];
      const f = canF(r) ? fIn[r][nextF[r]] : NaN;
      const g = nextI[r] < nextF[r] ? gIn[r][nextI[r]] : NaN;
      const fNow = f <= t0;
      const gNow = g <= t0;
      let time = Infinity;
      let op: 'F' | 'I' | 'W' = 'W';
      const preferF = flavour === 'F-first' || (flavour === 'feed' && r + 1 < p && !(fIn[r + 1][nextF[r + 1]] >= 0));
      if (gNow && (!preferF || !fNow)) {
        time = t0;
        op = 'I';
      } else if (fNow) {
        time = t0;
        op = 'F';
      } else if (nextW[r] < nextI[r]) {
        time = t0;
        op = 'W';
      } else {
        // Wait for the first input to arrive (NaN compares false: unknown yet).
        if (f < time) {
          time = f;
          op = 'F';
        }
        if (g < time || (g === time && !preferF)) {
          time = g;
          op = 'I';
        }
      }
      if (time < bestTime) {
        bestTime = time;
        bestRank = r;
        bestOp = op;
      }
    }
    if (bestRank < 0) throw new Error('auto schedule: the greedy play got stuck (a bug)');
    const r = bestRank;
    const op = bestOp;
    const mb = op === 'F' ? nextF[r]++ : op === 'I' ? nextI[r]++ : nextW[r]++;
    const end = bestTime + c.op[op][r];
    free[r] = end;
    order[r].push({ stage: r, op, mb });
    left--;
    if (op === 'F') {
      bytes[r] += c.heldBytes[r];
      if (r + 1 < p) fIn[r + 1][mb] = end + delay(r, r + 1, r);
      else gIn[r][mb] = end;
    } else if (op === 'I') {
      if (r > 0) gIn[r - 1][mb] = end + delay(r, r - 1, r - 1);
    } else {
      bytes[r] -= c.heldBytes[r];
    }
  }
  return { name: 'auto', stages: p, ranks: p, microbatches: m, stageToRank: stageToRankMap(p, 1, 'loop'), order };
}

function fits(r: SimulationResult, cap: MemoryCap): boolean {
  return r.memory.every((x) => (cap.microbatches === undefined || x.peakMicrobatches <= cap.microbatches) && (cap.bytes === undefined || x.peakBytes <= cap.bytes));
}

/**
 * The fastest schedule found for p ranks and m micro-batches under `costs`
 * (per stage; see simulate.ts) whose peak activations stay within `cap`.
 */
export function autoSchedule(ranks: number, microbatches: number, costs: CostModel, cap: MemoryCap): AutoResult {
  const p = requireInt('ranks', ranks, 1);
  const m = requireInt('microbatches', microbatches, 1);
  const held = resolveCosts(costs, p).heldBytes;
  checkCap(cap, held);
  const capCount = Math.floor(Math.min(cap.microbatches ?? Infinity, m));
  const capBytes = cap.bytes ?? Infinity;
  const limits = new Set<number>();
  for (let k = 1; k <= Math.min(capCount, 3 * p); k++) limits.add(k);
  limits.add(capCount);
  const candidates: [string, () => Schedule][] = [
    ['zb-h1', () => zbH1(p, m)],
    ['1f1b', () => oneFOneB(p, m)],
  ];
  for (const k of limits) {
    for (const flavour of ['I-first', 'F-first', 'feed'] as const) candidates.push([`greedy ${flavour} k=${k}`, () => greedy(p, m, costs, k, capBytes, flavour)]);
  }
  let best: AutoResult | null = null;
  for (const [name, make] of candidates) {
    const s = { ...make(), name: 'auto' };
    const r = simulate(s, costs);
    if (!fits(r, cap)) continue;
    if (!best || r.makespan < best.simulation.makespan) best = { schedule: s, simulation: r, candidate: name };
  }
  // The greedy with k = 1 holds one micro-batch per rank, within any cap checkCap let through.
  if (!best) throw new Error('auto schedule: no candidate fits a cap that one micro-batch fits (a bug)');
  return best;
}
