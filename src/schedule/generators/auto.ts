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
 * is taken knowing everything that has arrived by then. It is run for the
 * in-flight limits of candidateLimits(p) up to the cap (and the cap itself), in
 * three flavours (I first, F first, or F while the next rank starves; at most
 * GREEDY_BUDGET actions in all, most promising first), and beside them the known schedules 1F1B and ZB-H1;
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
import { play } from '../engine.ts';
import { linkDelayOf, peakMemory, resolveCosts, simulate, type CostModel, type RankMemory, type ResolvedCosts, type SimulationResult } from '../simulate.ts';
import type { Action, Schedule } from '../types.ts';
import { oneFOneB } from './one-f-one-b.ts';
import { zbH1 } from './zb-h1.ts';
import { HEURISTIC_VARIANTS, zbHeuristic } from './zb-heuristic.ts';

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

/** One greedy play: the order it chose, as a Schedule, and its makespan (the engine's timing rules, so play() agrees). */
function greedy(p: number, m: number, c: ResolvedCosts, limit: number, capBytes: number, flavour: Flavour): { schedule: Schedule; makespan: number } {
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
  let makespan = 0;
  const canF = (r: number) => nextF[r] < m && nextF[r] - nextW[r] < limit && bytes[r] + c.heldBytes[r] <= capBytes;
  // Each rank's next choice and when it can start it; only a commit by the rank or a neighbour changes it.
  const when = new Float64Array(p);
  const what: ('F' | 'I' | 'W')[] = new Array(p).fill('W');
  const decide = (r: number): void => {
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
    when[r] = time;
    what[r] = op;
  };
  // A tournament tree over the ranks: tree[1] is the rank that can start earliest (the lowest on a tie).
  let leaves = 1;
  while (leaves < p) leaves *= 2;
  const tree = new Int32Array(2 * leaves).fill(-1);
  const better = (a: number, b: number): number => (a < 0 ? b : b < 0 ? a : when[b] < when[a] || (when[b] === when[a] && b < a) ? b : a);
  const update = (r: number): void => {
    decide(r);
    let i = (leaves + r) >> 1;
    while (i >= 1) {
      tree[i] = better(tree[2 * i], tree[2 * i + 1]);
      i >>= 1;
    }
  };
  for (let r = 0; r < p; r++) {
    decide(r);
    tree[leaves + r] = r;
  }
  for (let i = leaves - 1; i >= 1; i--) tree[i] = better(tree[2 * i], tree[2 * i + 1]);
  while (left > 0) {
    const bestRank = tree[1];
    const bestTime = bestRank >= 0 ? when[bestRank] : Infinity;
    if (!(bestTime < Infinity)) throw new Error('auto schedule: the greedy play got stuck (a bug)');
    const r = bestRank;
    const op = what[r];
    const mb = op === 'F' ? nextF[r]++ : op === 'I' ? nextI[r]++ : nextW[r]++;
    const end = bestTime + c.op[op][r];
    free[r] = end;
    if (end > makespan) makespan = end;
    order[r].push({ stage: r, op, mb });
    left--;
    if (op === 'F') {
      bytes[r] += c.heldBytes[r];
      if (r + 1 < p) fIn[r + 1][mb] = end + delay(r, r + 1, r);
      else gIn[r][mb] = end;
    } else if (op === 'I') {
      bytes[r] -= c.heldBytes[r] - c.heldAfterInput[r];
      if (r > 0) gIn[r - 1][mb] = end + delay(r, r - 1, r - 1);
    } else {
      bytes[r] -= c.heldAfterInput[r];
    }
    update(r);
    if (r > 0) update(r - 1);
    if (r + 1 < p) update(r + 1);
  }
  return { schedule: { name: 'auto', stages: p, ranks: p, microbatches: m, stageToRank: stageToRankMap(p, 1, 'loop'), order }, makespan };
}

/**
 * In-flight limits tried: every k up to 8, then the landmarks of p (p/2, p, p+1, 3p/2, 2p, 2p+1, 3p), so
 * the work stays bounded for large p; every cap in this list also sees the candidates of the smaller ones.
 */
export function candidateLimits(p: number): number[] {
  const out = new Set<number>();
  for (let k = 1; k <= Math.min(8, 3 * p); k++) out.add(k);
  for (const k of [Math.ceil(p / 2), p, p + 1, Math.ceil((3 * p) / 2), 2 * p, 2 * p + 1, 3 * p]) out.add(k);
  return [...out].sort((a, b) => a - b);
}

/** Actions the greedy plays may take in all, so that large sizes stay interactive (about a second). */
export const GREEDY_BUDGET = 1_500_000;

/** Priority of an in-flight limit: the cap, then p, 2p, 2p + 1, 3p, p + 1, then the rest. */
function rank(k: number, cap: number, p: number): number {
  const i = [cap, p, 2 * p, 2 * p + 1, 3 * p, p + 1].indexOf(k);
  return i < 0 ? 6 : i;
}

function fits(memory: readonly RankMemory[], cap: MemoryCap): boolean {
  return memory.every((x) => (cap.microbatches === undefined || x.peakMicrobatches <= cap.microbatches) && (cap.bytes === undefined || x.peakBytes <= cap.bytes));
}

/** Makespan of a candidate by the engine's play alone (no timeline), or Infinity if it gets stuck. */
function quickMakespan(s: Schedule, c: ResolvedCosts): number {
  const r = play(s, { duration: (a) => c.op[a.op][a.stage], linkDelay: linkDelayOf(c) });
  if (r.stuck.length > 0) return Infinity;
  let end = 0;
  for (const e of r.end) for (const t of e) if (t > end) end = t;
  return end;
}

/**
 * The longest time any rank spends from its first action's start to its last action's end: the period of
 * a pipeline whose steps tile one after the other (the zero-bubble paper's post-validated optimizer step),
 * what that paper's automatic scheduler minimises; Infinity if the play gets stuck.
 */
export function quickSpan(s: Schedule, c: ResolvedCosts): number {
  const r = play(s, { duration: (a) => c.op[a.op][a.stage], linkDelay: linkDelayOf(c) });
  if (r.stuck.length > 0) return Infinity;
  let span = 0;
  for (let k = 0; k < r.end.length; k++) {
    if (r.end[k].length === 0) continue;
    let end = 0;
    for (const t of r.end[k]) if (t > end) end = t;
    span = Math.max(span, end - r.start[k][0]);
  }
  return span;
}

export interface AutoOptions {
  /**
   * What to minimise: the step's makespan (default; a flush ends every step), or the longest per-rank
   * span from first start to last end (steps that tile, as in the zero-bubble paper's measurements).
   */
  objective?: 'makespan' | 'span';
}

/**
 * The fastest schedule found for p ranks and m micro-batches under `costs`
 * (per stage; see simulate.ts) whose peak activations stay within `cap`.
 * Candidates: 1F1B and ZB-H1 when they fit, the greedy plays above, and the
 * zero-bubble paper's heuristic (zb-heuristic.ts, its eight variants).
 */
export function autoSchedule(ranks: number, microbatches: number, costs: CostModel, cap: MemoryCap, opts: AutoOptions = {}): AutoResult {
  const p = requireInt('ranks', ranks, 1);
  const m = requireInt('microbatches', microbatches, 1);
  checkCap(cap, resolveCosts(costs, p).heldBytes);
  const capCount = Math.floor(Math.min(cap.microbatches ?? Infinity, m));
  const capBytes = cap.bytes ?? Infinity;
  const limits = new Set<number>();
  for (const k of candidateLimits(p)) if (k <= capCount) limits.add(k);
  limits.add(capCount);
  const resolved = resolveCosts(costs, p);
  // The known schedules, when they fit; the greedy plays keep within the cap by construction.
  const candidates: [string, () => { schedule: Schedule; makespan: number } | null][] = (
    [
      ['zb-h1', zbH1],
      ['1f1b', oneFOneB],
    ] as const
  ).map(([name, make]): [string, () => { schedule: Schedule; makespan: number } | null] => [
    name,
    () => {
      const s = { ...make(p, m), name: 'auto' };
      return fits(peakMemory(s, resolved.heldBytes, resolved.heldAfterInput), cap) ? { schedule: s, makespan: quickMakespan(s, resolved) } : null;
    },
  ]);
  // Most promising first (the cap itself, then the landmarks of p, I first), as many as the work budget allows.
  const order = [...limits].sort((a, b) => rank(a, capCount, p) - rank(b, capCount, p) || b - a);
  const runs = Math.max(1, Math.floor(GREEDY_BUDGET / (3 * p * m)));
  const plays: [number, Flavour][] = [];
  for (const flavour of ['I-first', 'F-first', 'feed'] as const) for (const k of order) plays.push([k, flavour]);
  for (const [k, flavour] of plays.slice(0, runs)) candidates.push([`greedy ${flavour} k=${k}`, () => greedy(p, m, resolved, k, capBytes, flavour)]);
  HEURISTIC_VARIANTS.forEach((v, i) => {
    candidates.push([
      `zb-heuristic ${i}`,
      () => {
        const s = zbHeuristic(p, m, resolved, capBytes, v);
        return s && fits(peakMemory(s, resolved.heldBytes, resolved.heldAfterInput), cap) ? { schedule: s, makespan: quickMakespan(s, resolved) } : null;
      },
    ]);
  });
  const score = opts.objective === 'span' ? (c: { schedule: Schedule }) => quickSpan(c.schedule, resolved) : (c: { makespan: number }) => c.makespan;
  let best: { schedule: Schedule; makespan: number; candidate: string; score: number } | null = null;
  for (const [name, make] of candidates) {
    const c = make();
    if (!c) continue;
    const x = score(c);
    if (!best || x < best.score) best = { ...c, candidate: name, score: x };
  }
  // The greedy with k = 1 holds one micro-batch per rank, within any cap checkCap let through.
  if (!best) throw new Error('auto schedule: no candidate fits a cap that one micro-batch fits (a bug)');
  // The winner goes through the validator and the simulator like any schedule, which must agree with the play that chose it.
  // (With dp replicas in the costs the simulation's makespan adds the all-reduce; the play is the compute.)
  const simulation = simulate(best.schedule, costs);
  const compute = simulation.dp?.computeMakespan ?? simulation.makespan;
  if (Math.abs(compute - best.makespan) > 1e-9 * Math.max(1, compute)) {
    throw new Error(`auto schedule: ${best.candidate} played ${best.makespan} but simulates ${compute} (a bug)`);
  }
  return { schedule: best.schedule, simulation, candidate: best.candidate };
}
