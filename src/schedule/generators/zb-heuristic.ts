/**
 * The zero-bubble paper's heuristic schedule builder (Qi et al., ICLR 2024,
 * arXiv:2401.10241, §3.1 "heuristic algorithm"; the authors' reference is
 * `manual_order` in sail-sg/zero-bubble-pipeline-parallelism,
 * megatron/core/pipeline_parallel/auto_schedule.py), here for one stage per
 * rank and per-stage costs and memory:
 *
 *  1. Warm-up: micro-batch 0 flows down; then each stage schedules as many
 *     forwards as fit the memory limit and the time until the gradient of
 *     micro-batch 0 comes back to it (strictly fewer than the stage before, so
 *     every forward has its input), then the I's of micro-batch 0 flow up.
 *  2. Steady state, for each next micro-batch: a forward on every stage that
 *     needs one (and whose later stages do), then its I from the last stage
 *     back; a W goes before an action whenever memory requires it or it fits in
 *     the wait for that action's input, or the wait is a bubble worth filling.
 *  3. The remaining W's.
 *
 * Eight variants (`allow bubble before the first I`, `prioritise I`, `fill
 * every wait with W`) as in the reference; each is timed by the same rules as
 * engine.ts (an action starts when its rank is free and its input has arrived,
 * link delays included), and the caller keeps the best. Memory per micro-batch:
 * heldBytes from F, freed down to heldAfterInput at I and to 0 at W.
 */
import { linkDelayOf, type ResolvedCosts } from '../simulate.ts';
import { stageToRankMap } from '../placement.ts';
import type { Action, Op, Schedule } from '../types.ts';

export interface HeuristicVariant {
  allowBubbleBeforeFirstI: boolean;
  prioritizeI: boolean;
  fillWaitsWithW: boolean;
}

export const HEURISTIC_VARIANTS: HeuristicVariant[] = [true, false].flatMap((a) => [true, false].flatMap((p) => [true, false].map((g) => ({ allowBubbleBeforeFirstI: a, prioritizeI: p, fillWaitsWithW: g }))));

/** One variant's schedule for p ranks (one stage each), m micro-batches, within `capBytes` per rank; null when it cannot keep within the cap. */
export function zbHeuristic(p: number, m: number, c: ResolvedCosts, capBytes: number, v: HeuristicVariant): Schedule | null {
  const delay = linkDelayOf(c);
  const order: Action[][] = Array.from({ length: p }, () => []);
  const f = new Int32Array(p);
  const b = new Int32Array(p);
  const w = new Int32Array(p);
  const e = new Float64Array(p);
  const mem = new Float64Array(p);
  const bubble = new Float64Array(p);
  // Completion times of F (0) and I (1) of (stage, micro-batch).
  const done = [Array.from({ length: p }, () => new Float64Array(m)), Array.from({ length: p }, () => new Float64Array(m))];
  const cost = (j: number, op: Op) => c.op[op][j];
  const memOf = (j: number, op: Op) => (op === 'F' ? c.heldBytes[j] : op === 'I' ? c.heldAfterInput[j] - c.heldBytes[j] : -c.heldAfterInput[j]);
  const arrivalF = (j: number, mb: number) => done[0][j - 1][mb] + delay(j - 1, j, j - 1);
  const arrivalI = (j: number, mb: number) => done[1][j + 1][mb] + delay(j + 1, j, j);
  const maxBubble = () => bubble.reduce((a, x) => Math.max(a, x), 0);
  const put = (j: number, op: Op): void => {
    const mb = op === 'F' ? f[j] : op === 'I' ? b[j] : w[j];
    const free = e[j] + cost(j, op);
    let end = free;
    if (op === 'F' && j > 0) end = Math.max(end, arrivalF(j, mb) + cost(j, op));
    if (op === 'I' && j < p - 1) end = Math.max(end, arrivalI(j, mb) + cost(j, op));
    if (f[j] > 0) bubble[j] += end - free;
    e[j] = end;
    mem[j] += memOf(j, op);
    if (op === 'F') done[0][j][f[j]++] = end;
    else if (op === 'I') done[1][j][b[j]++] = end;
    else w[j]++;
    order[j].push({ stage: j, op, mb });
  };
  /** W's before an action whose input arrives at `at`: those that fit the wait, and one more if the wait is a bubble to fill. */
  const fillWait = (j: number, at: number): void => {
    while (w[j] < b[j] && e[j] + cost(j, 'W') <= at) put(j, 'W');
    if (w[j] < b[j] && e[j] < at && (!v.fillWaitsWithW ? at - e[j] > maxBubble() - bubble[j] : true)) put(j, 'W');
  };
  /** W's until `need` more bytes fit; false when there are none left to free. */
  const makeRoom = (j: number, need: number): boolean => {
    while (mem[j] + need > capBytes) {
      if (w[j] >= b[j]) return false;
      put(j, 'W');
    }
    return true;
  };

  for (let j = 0; j < p; j++) if (!makeRoom(j, memOf(j, 'F'))) return null;
  for (let j = 0; j < p; j++) put(j, 'F');
  // Warm-up: forwards to fill the wait for micro-batch 0's gradient.
  const want = new Int32Array(p);
  let lastT = 0;
  for (let j = p - 1; j >= 0; j--) {
    if (j === p - 1) {
      lastT = done[0][j][0] + cost(j, 'I');
      continue;
    }
    let bytes = mem[j];
    let t = e[j];
    const back = j + 1 < p ? delay(j + 1, j, j) : 0;
    while (f[j] + want[j] < m && bytes + memOf(j, 'F') <= capBytes) {
      if (v.allowBubbleBeforeFirstI ? t + cost(j, 'F') > lastT + back : t >= lastT + back) break;
      bytes += memOf(j, 'F');
      t += cost(j, 'F');
      want[j]++;
    }
    lastT = Math.max(t, lastT + back) + cost(j, 'I');
  }
  for (let j = 1; j < p; j++) while (want[j] > 0 && want[j] >= want[j - 1] && f[j] + want[j] < m) want[j]--;
  for (let j = 0; j < p; j++) for (let k = 0; k < want[j]; k++) put(j, 'F');
  for (let j = p - 1; j >= 0; j--) put(j, 'I');

  for (let i = 1; i < m; i++) {
    want.fill(0);
    for (let j = 0; j < p; j++) {
      if (f[j] >= m) continue;
      if (v.prioritizeI && j + 1 < p && f[j] >= f[j + 1] + 2) {
        const nextPlusFI = e[j + 1] + cost(j + 1, 'F') + cost(j + 1, 'I') + delay(j + 1, j, j);
        if (e[j] >= nextPlusFI) continue;
        let wCost = 0;
        let withW = mem[j] + memOf(j, 'F');
        for (let k = w[j]; withW > capBytes && k < b[j]; k++) {
          wCost += cost(j, 'W');
          withW += memOf(j, 'W');
        }
        if (e[j] + cost(j, 'F') + wCost <= nextPlusFI) {
          want[j] = 1;
          continue;
        }
        if (nextPlusFI - e[j] <= maxBubble() - bubble[j]) continue;
      }
      want[j] = 1;
    }
    for (let j = p - 2; j >= 0; j--) want[j] = Math.min(want[j], want[j + 1]);
    for (let j = 0; j < p; j++) {
      if (want[j] === 0) continue;
      if (!makeRoom(j, memOf(j, 'F'))) return null;
      if (j > 0) fillWait(j, done[0][j - 1][f[j]] + delay(j - 1, j, j - 1));
      put(j, 'F');
    }
    for (let j = p - 1; j >= 0; j--) {
      if (b[j] !== i || f[j] <= i) return null;
      if (j + 1 < p) fillWait(j, done[1][j + 1][i] + delay(j + 1, j, j));
      if (j === 0 && f[j] === m) while (w[j] < b[j]) put(j, 'W');
      put(j, 'I');
    }
  }
  for (let j = 0; j < p; j++) while (w[j] < m) put(j, 'W');
  return { name: 'auto', stages: p, ranks: p, microbatches: m, stageToRank: stageToRankMap(p, 1, 'loop'), order };
}
