/**
 * The validator: a schedule is accepted only when it is well formed, complete,
 * and runs to the end when every receive blocks. A failure names the first
 * offending action: its rank, its index in that rank's list, and why.
 *
 * Checks, in this order (the first failure is reported):
 *  1. shape: counts are positive integers, stageToRank maps every stage to a
 *     rank, order has one list per rank, `copies` (when given) divides the
 *     stages and the micro-batches;
 *  2. each action, rank by rank in list order: stage, op and micro-batch in
 *     range, the stage is held by this rank, the micro-batch runs through the
 *     stage's model copy (copies.ts), and no duplicate (a second F, a
 *     second B/I/W, or a B mixed with an I/W split of the same micro-batch);
 *  3. completeness, stage by stage and micro-batch by micro-batch (each
 *     micro-batch of the stage's copy): one F, and one B or one I and one W;
 *  4. dependency order and deadlock freedom: the schedule is played (engine.ts)
 *     with unit costs. An action before its own dependency on the same rank
 *     (B or I before its F, W before its I, F before the previous stage's F
 *     when both stages share a rank) is reported as such; otherwise the ranks
 *     that got stuck wait on each other in a cycle, and the cycle is reported.
 */
import { ConfigError, formatValue } from '../util/errors.ts';
import { formatAction } from './action-text.ts';
import { copiesOf, copyOfMicrobatch, copyOfStage, microbatchesOf, stageRuns } from './copies.ts';
import { play, type Play, type PlayCosts, type Wait } from './engine.ts';
import { OPS, type Action, type Op, type Schedule } from './types.ts';

export interface ValidationFailure {
  ok: false;
  /** `field = value: rule`, the message a ConfigError for it carries. */
  error: string;
  /** e.g. `order[1][4]`, or `stageToRank` for problems of shape. */
  field: string;
  rule: string;
  /** The offending value (for actions, their text such as `1B0`). */
  value: unknown;
  /** Rank and index in order[rank] of the offending action; null when none has a place (shape problems). */
  rank: number | null;
  index: number | null;
  /** The offending action, or the missing one for completeness failures. */
  action: Action | null;
}

export type ValidationResult = { ok: true } | ValidationFailure;

function fail(field: string, value: unknown, rule: string, rank: number | null, index: number | null, action: Action | null): ValidationFailure {
  return { ok: false, error: `${field} = ${formatValue(value)}: ${rule}`, field, rule, value, rank, index, action };
}

function failAt(rank: number, index: number, action: Action, rule: string): ValidationFailure {
  return fail(`order[${rank}][${index}]`, formatAction(action), `rank ${rank} ${rule}`, rank, index, action);
}

const isInt = (x: unknown): x is number => typeof x === 'number' && Number.isInteger(x);

function checkShape(s: Schedule): ValidationFailure | null {
  const u = s as unknown as Record<string, unknown>;
  if (typeof u !== 'object' || u === null) return fail('schedule', u, 'must be an object', null, null, null);
  for (const key of ['ranks', 'stages', 'microbatches'] as const) {
    const x = u[key];
    if (!isInt(x) || x < 1) return fail(key, x, 'must be an integer at least 1', null, null, null);
  }
  const { ranks, stages } = s;
  if (u.copies !== undefined) {
    const c = u.copies;
    if (!isInt(c) || c < 1) return fail('copies', c, 'must be an integer at least 1 (model copies)', null, null, null);
    if (stages % c !== 0) return fail('copies', c, `must divide the ${stages} stages: each copy is a whole model of stages / copies stages`, null, null, null);
    if (s.microbatches % c !== 0) return fail('copies', c, `must divide the ${s.microbatches} micro-batches: each copy takes microbatches / copies of them`, null, null, null);
  }
  if (!Array.isArray(s.stageToRank) || s.stageToRank.length !== stages) {
    const len = Array.isArray(s.stageToRank) ? s.stageToRank.length : s.stageToRank;
    return fail('stageToRank.length', len, `must list a rank for each of the ${stages} stages`, null, null, null);
  }
  for (let st = 0; st < stages; st++) {
    const r = s.stageToRank[st];
    if (!isInt(r) || r < 0 || r >= ranks) {
      return fail(`stageToRank[${st}]`, r, `must be a rank between 0 and ${ranks - 1}`, null, null, null);
    }
  }
  if (!Array.isArray(s.order) || s.order.length !== ranks) {
    const len = Array.isArray(s.order) ? s.order.length : s.order;
    return fail('order.length', len, `must hold one action list for each of the ${ranks} ranks`, null, null, null);
  }
  let actions = 0;
  for (let r = 0; r < ranks; r++) {
    if (!Array.isArray(s.order[r])) return fail(`order[${r}]`, s.order[r], 'must be a list of actions', r, null, null);
    actions += s.order[r].length;
  }
  // Each (stage, micro-batch) needs an F and a backward: counts far beyond the actions given cannot be
  // complete, and are refused before the per-pair tables are allocated (their size is stages · microbatches).
  const pairs = (s.stages * s.microbatches) / copiesOf(s);
  if (pairs > Math.max(actions, MIN_PAIRS_CHECKED)) {
    return fail('microbatches', s.microbatches, `stages · microbatches = ${pairs} (stage, micro-batch) pairs need at least ${2 * pairs} actions, but order holds ${actions}`, null, null, null);
  }
  return null;
}

/** Below this many (stage, micro-batch) pairs the tables are small and an incomplete schedule is diagnosed action by action. */
const MIN_PAIRS_CHECKED = 1 << 16;

/** Position of every action, filled by the per-action scan: index+1 in its rank's list, 0 when absent. */
interface Positions {
  F: Int32Array;
  B: Int32Array;
  I: Int32Array;
  W: Int32Array;
}

const OP_INDEX: Readonly<Record<string, number>> = { F: 0, B: 1, I: 2, W: 3 };

function checkActions(s: Schedule, pos: Positions): ValidationFailure | null {
  const m = s.microbatches;
  const S = s.stages;
  const byIndex = [pos.F, pos.B, pos.I, pos.W];
  for (let r = 0; r < s.ranks; r++) {
    const list = s.order[r];
    for (let i = 0; i < list.length; i++) {
      const a = list[i] as unknown as Record<string, unknown>;
      if (typeof a !== 'object' || a === null) return fail(`order[${r}][${i}]`, a, 'must be an action {stage, op, mb}', r, i, null);
      const stage = a.stage;
      const op = a.op;
      const mb = a.mb;
      if (!isInt(stage) || stage < 0 || stage >= S) {
        return fail(`order[${r}][${i}].stage`, stage, `must be a stage between 0 and ${S - 1}`, r, i, null);
      }
      const o = typeof op === 'string' && Object.hasOwn(OP_INDEX, op) ? OP_INDEX[op] : -1;
      if (o < 0) return fail(`order[${r}][${i}].op`, op, `must be one of ${OPS.join(', ')}`, r, i, null);
      if (!isInt(mb) || mb < 0 || mb >= m) {
        return fail(`order[${r}][${i}].mb`, mb, `must be a micro-batch between 0 and ${m - 1}`, r, i, null);
      }
      const k = stage * m + mb;
      const p = byIndex[o];
      const home = s.stageToRank[stage];
      if (!stageRuns(s, stage, mb)) {
        const [lo, hi] = microbatchesOf(s, stage);
        const action: Action = { stage, op: op as Op, mb };
        return failAt(r, i, action, `runs micro-batch ${mb} on stage ${stage} of model copy ${copyOfStage(s, stage)}, which takes micro-batches ${lo} to ${hi - 1} (micro-batch ${mb} runs through copy ${copyOfMicrobatch(s, mb)})`);
      }
      if (home === r && p[k] === 0 && (o === 0 || (o === 1 ? pos.I[k] === 0 && pos.W[k] === 0 : pos.B[k] === 0))) {
        p[k] = i + 1;
        continue;
      }
      // Something is wrong with this action: say what.
      const action: Action = { stage, op: op as Op, mb };
      if (home !== r) return failAt(r, i, action, `runs stage ${stage}, which stageToRank places on rank ${home}`);
      if (p[k] > 0) return failAt(r, i, action, `runs ${formatAction(action)} a second time (first at order[${r}][${p[k] - 1}])`);
      if (op === 'B') {
        const other = pos.I[k] > 0 ? 'I' : 'W';
        return failAt(r, i, action, `runs a full backward of a micro-batch whose backward is split (${formatAction({ stage, op: other, mb })} at order[${r}][${pos[other][k] - 1}])`);
      }
      return failAt(r, i, action, `splits the backward of a micro-batch that already has a full backward (${formatAction({ stage, op: 'B', mb })} at order[${r}][${pos.B[k] - 1}])`);
    }
  }
  return null;
}

function checkComplete(s: Schedule, pos: Positions): ValidationFailure | null {
  const m = s.microbatches;
  const n = s.stages * m;
  for (let k = 0; k < n; k++) {
    const F = pos.F[k];
    const B = pos.B[k];
    const I = pos.I[k];
    const W = pos.W[k];
    if (F > 0 && (B > 0 ? I === 0 && W === 0 : I > 0 && W > 0)) continue;
    const st = Math.floor(k / m);
    const mb = k % m;
    if (!stageRuns(s, st, mb)) continue;
    const r = s.stageToRank[st];
    const missing = (op: Op, rule: string): ValidationFailure => {
      const action: Action = { stage: st, op, mb };
      return fail(`order[${r}]`, formatAction(action), `is missing: ${rule}`, r, null, action);
    };
    if (F === 0) return missing('F', `stage ${st} never runs the forward of micro-batch ${mb}`);
    if (W > 0 && I === 0) {
      const w: Action = { stage: st, op: 'W', mb };
      return failAt(r, W - 1, w, `runs ${formatAction(w)} but never its ${formatAction({ stage: st, op: 'I', mb })}`);
    }
    if (B === 0 && I === 0) return missing('B', `stage ${st} never runs the backward of micro-batch ${mb} (neither B nor I and W)`);
    return missing('W', `stage ${st} runs ${formatAction({ stage: st, op: 'I', mb })} but never its W`);
  }
  return null;
}

const UNIT_COSTS = { duration: () => 1, linkDelay: () => 0 };

/** The action a wait refers to, with its rank and index (it exists: completeness passed). */
function locate(s: Schedule, pos: Positions, w: Wait): { action: Action; rank: number; index: number } {
  const k = w.stage * s.microbatches + w.mb;
  const rank = s.stageToRank[w.stage];
  if (w.slot === 0) return { action: { stage: w.stage, op: 'F', mb: w.mb }, rank, index: pos.F[k] - 1 };
  const op: Op = pos.B[k] > 0 ? 'B' : 'I';
  return { action: { stage: w.stage, op, mb: w.mb }, rank, index: pos[op][k] - 1 };
}

function diagnoseStuck(s: Schedule, pos: Positions, stuck: Wait[]): ValidationFailure {
  const byRank = new Map<number, Wait>();
  for (const w of stuck) byRank.set(w.rank, w);
  // An action placed before its own dependency on the same rank.
  for (const w of stuck) {
    const dep = locate(s, pos, w);
    if (dep.rank === w.rank) {
      const a = s.order[w.rank][w.index];
      return failAt(w.rank, w.index, a, `runs ${formatAction(a)} before ${formatAction(dep.action)} (order[${dep.rank}][${dep.index}]), which it needs`);
    }
  }
  // Otherwise the stuck ranks wait on each other: follow the waits to a cycle.
  const seen = new Map<number, number>();
  const chain: Wait[] = [];
  let w: Wait | undefined = stuck[0];
  while (w && !seen.has(w.rank)) {
    seen.set(w.rank, chain.length);
    chain.push(w);
    w = byRank.get(locate(s, pos, w).rank);
  }
  const cycle = w ? chain.slice(seen.get(w.rank)) : chain;
  let first = 0;
  for (let j = 1; j < cycle.length; j++) if (cycle[j].rank < cycle[first].rank) first = j;
  const ordered = [...cycle.slice(first), ...cycle.slice(0, first)];
  const steps = ordered.map((c) => {
    const a = s.order[c.rank][c.index];
    const dep = locate(s, pos, c);
    return `rank ${c.rank} at ${formatAction(a)} (order[${c.rank}][${c.index}]) waits for ${formatAction(dep.action)}, which rank ${dep.rank} runs later (order[${dep.rank}][${dep.index}])`;
  });
  const head = ordered[0];
  const a = s.order[head.rank][head.index];
  return failAt(head.rank, head.index, a, `deadlocks when receives block: ${steps.join('; ')}`);
}

/**
 * Validates `s` and, when it is well formed and complete, plays it with
 * `costs`, so the simulator gets its timing from the same play that proves the
 * schedule free of deadlock (whether a play gets stuck does not depend on the
 * costs). `play` is null unless the schedule is valid.
 */
export function validateAndPlay(s: Schedule, costs: PlayCosts): { result: ValidationResult; play: Play | null } {
  const shape = checkShape(s);
  if (shape) return { result: shape, play: null };
  const n = s.stages * s.microbatches;
  const pos: Positions = { F: new Int32Array(n), B: new Int32Array(n), I: new Int32Array(n), W: new Int32Array(n) };
  const structural = checkActions(s, pos) ?? checkComplete(s, pos);
  if (structural) return { result: structural, play: null };
  const played = play(s, costs);
  if (played.stuck.length > 0) return { result: diagnoseStuck(s, pos, played.stuck), play: null };
  return { result: { ok: true }, play: played };
}

export function validateSchedule(s: Schedule): ValidationResult {
  return validateAndPlay(s, UNIT_COSTS).result;
}

/** Throws a ConfigError (`order[r][i] = "1B0": rank r ...`) unless the schedule is valid. */
export function assertValidSchedule(s: Schedule): void {
  const v = validateSchedule(s);
  if (!v.ok) throw new ConfigError(v.field, v.value, v.rule);
}

export interface ScheduleSummary {
  name: string;
  ranks: number;
  stages: number;
  microbatches: number;
  actions: number;
  /** Count of each op over the whole schedule. */
  ops: Record<Op, number>;
  /** Stages held by each rank. */
  stagesPerRank: number[][];
  actionsPerRank: number[];
}

export function summarizeSchedule(s: Schedule): ScheduleSummary {
  const ops: Record<Op, number> = { F: 0, B: 0, I: 0, W: 0 };
  let actions = 0;
  for (const list of s.order) {
    for (const a of list) ops[a.op]++;
    actions += list.length;
  }
  const stagesPerRank: number[][] = Array.from({ length: s.ranks }, () => []);
  s.stageToRank.forEach((r, st) => stagesPerRank[r]?.push(st));
  return {
    name: s.name,
    ranks: s.ranks,
    stages: s.stages,
    microbatches: s.microbatches,
    actions,
    ops,
    stagesPerRank,
    actionsPerRank: s.order.map((l) => l.length),
  };
}
