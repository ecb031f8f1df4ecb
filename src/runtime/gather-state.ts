/**
 * A run's progress gathered from its workers between steps: the weights of
 * replica 0 (every replica holds the same), the optimizer state of replica 0's
 * workers — or, with ZeRO, the pieces every worker's shards hold, joined
 * into whole parameters (with ZeRO-3 the weights too) — and the step count,
 * checked equal on every worker. With tensor parallelism the tp pieces are
 * joined last (tp-state.ts), so the progress holds whole tensors by name.
 */
import type { TrainProgress } from '../nn/train.ts';
import type { EvalReport } from '../nn/train.ts';
import { placeOf, stageWorkers, workerCount, type Mesh } from '../schedule/mesh.ts';
import type { RankHost, RankState, Weights } from './executor/index.ts';
import type { ZeroStage } from '../config/run-config.ts';
import { parsePieceName } from './policies/index.ts';
import { parseTpPieceName, type TpParam } from '../nn/tp-shard.ts';
import { joinTpOptimizer, joinTpWeights } from './tp-state.ts';
import { epRankOnce, epWeightsOnce, joinEpOptimizer, joinEpWeights } from './ep-state.ts';

/**
 * The run's weights from its workers' own (`byWorker`): replica 0's whole
 * parameters, or with ZeRO-3, where no worker holds a whole parameter between
 * steps, every worker's pieces `name[lo:hi]` joined; every value must be
 * covered exactly once (a schedule's model copies, DualPipe, hold the same piece
 * twice in a replica: the copies are equal bit for bit, copy-sum.ts, so it is
 * taken once, and two unequal copies of a piece are an error).
 */
export function joinWeights(m: Mesh, zero: ZeroStage, byWorker: readonly Weights[]): Weights {
  if (zero !== 3) {
    const out: Weights = {};
    for (const w of byWorker.slice(0, m.ranks * stageWorkers(m))) Object.assign(out, w);
    return out;
  }
  const pieces: { name: string; lo: number; hi: number; values: Weights[string] }[] = [];
  const seen = new Map<string, Weights[string]>();
  for (const w of byWorker) {
    for (const [k, values] of Object.entries(w)) {
      const p = parsePieceName(k);
      if (!p) throw new Error(`a ZeRO-3 worker gave the whole parameter "${k}"; it holds pieces name[lo:hi]`);
      const before = seen.get(k);
      if (before) {
        if (before.length !== values.length || before.some((v, i) => v !== values[i])) throw new Error(`two workers gave the ZeRO-3 piece "${k}" with different values`);
        continue;
      }
      seen.set(k, values);
      pieces.push({ ...p, values });
    }
  }
  const size = new Map<string, number>();
  for (const p of pieces) size.set(p.name, Math.max(size.get(p.name) ?? 0, p.hi));
  const out: Weights = {};
  const covered = new Map<string, number>();
  for (const p of pieces) {
    const whole = (out[p.name] ??= p.values instanceof Float64Array ? new Float64Array(size.get(p.name) ?? 0) : new Float32Array(size.get(p.name) ?? 0));
    whole.set(p.values, p.lo);
    covered.set(p.name, (covered.get(p.name) ?? 0) + p.hi - p.lo);
  }
  for (const [name, v] of Object.entries(out)) {
    if (covered.get(name) !== v.length) throw new Error(`the workers' ZeRO-3 shards cover ${covered.get(name) ?? 0} of the ${v.length} values of "${name}"`);
  }
  return out;
}

/**
 * With tp > 1 every member of a tp group holds the parameters tp does not split (embeddings, LayerNorms,
 * the head) alike: read from tp rank 0 only, so each value is covered once.
 */
function tpRankOnce(m: Mesh, w: number, s: RankState): RankState {
  if (m.tp === 1 || placeOf(m, w).tpRank === 0) return s;
  return { params: splitOnly(s.params), optimizer: { ...s.optimizer, pieces: s.optimizer.pieces.filter((p) => isSplit(p.param)) }, ...(s.previous ? { previous: splitOnly(s.previous) } : {}) };
}

/** Whether a parameter (or its ZeRO piece `name[lo:hi]`) is a tp piece `name@tpJ/T`. */
function isSplit(key: string): boolean {
  return parseTpPieceName(parsePieceName(key)?.name ?? key) !== null;
}

function splitOnly(w: Weights): Weights {
  return Object.fromEntries(Object.entries(w).filter(([k]) => isSplit(k)));
}

/** The run's whole weights: joinWeights, then the tp pieces joined (`rules`: nn/tp-shard.ts tpParams of the run's model). */
export function wholeWeights(m: Mesh, zero: ZeroStage, byWorker: readonly Weights[], rules: ReadonlyMap<string, TpParam>): Weights {
  // The unsplit parameters from tp rank 0 only (tpRankOnce; the other tp workers' copies are checked against them,
  // weight-agreement.ts tpDifference); with ZeRO-3 every worker gives its pieces.
  // With ep the dense parameters from ep rank 0 and every rank's expert pieces, joined (ep-state.ts).
  const w = joinWeights(m, zero, epWeightsOnce(m, m.tp > 1 ? byWorker.map((ws, i) => (placeOf(m, i).tpRank === 0 ? ws : splitOnly(ws))) : byWorker));
  if ((m.ep ?? 1) > 1) return joinEpWeights(w);
  return m.tp > 1 ? joinTpWeights(w, rules) : w;
}

/** Joins workers' optimizer pieces into whole parameters (sizes from `params`); every value must be covered exactly once. */
export function joinOptimizer(parts: readonly RankState['optimizer'][], params: Weights): TrainProgress['optimizer'] {
  const first = parts[0];
  if (!first) throw new Error('no worker gave its optimizer state');
  const slots: TrainProgress['optimizer']['slots'] = {};
  const covered = new Map<string, number>();
  for (const part of parts) {
    if (part.name !== first.name || part.steps !== first.steps) {
      throw new Error(`the workers' optimizer states differ: ${first.name} after ${first.steps} steps, and ${part.name} after ${part.steps}`);
    }
    for (const piece of part.pieces) {
      const whole = params[piece.param];
      if (!whole) throw new Error(`optimizer state of "${piece.param}", a parameter no worker holds`);
      const own = (slots[piece.param] ??= {});
      for (const [slot, v] of Object.entries(piece.slots)) {
        const dst = (own[slot] ??= whole instanceof Float64Array ? new Float64Array(whole.length) : new Float32Array(whole.length));
        dst.set(v, piece.lo);
      }
      covered.set(piece.param, (covered.get(piece.param) ?? 0) + piece.hi - piece.lo);
    }
  }
  for (const [name, v] of Object.entries(params)) {
    if (covered.get(name) !== v.length) throw new Error(`the workers' optimizer states cover ${covered.get(name) ?? 0} of the ${v.length} values of "${name}"`);
  }
  return { name: first.name, steps: first.steps, slots };
}

/** How many workers' states make the run's (the first that many in worker order): replica 0's, or with ZeRO every worker's shards. */
export function stateReaders(m: Mesh, zero: ZeroStage): number {
  return zero > 0 ? workerCount(m) : m.ranks * stageWorkers(m);
}

/** The progress after `stepsDone` steps from the readers' states (stateReaders, in worker order), `losses` one per step done. */
export function joinProgress(
  m: Mesh,
  zero: ZeroStage,
  read: readonly RankState[],
  stepsDone: number,
  losses: readonly number[],
  evals: readonly EvalReport[],
  rules: ReadonlyMap<string, TpParam>,
): TrainProgress {
  const states = read.map((s, w) => epRankOnce(m, w, tpRankOnce(m, w, s)));
  const params = joinWeights(m, zero, states.map((s) => s.params));
  const optimizer = joinOptimizer(
    states.map((s) => s.optimizer),
    params,
  );
  // PipeDream-2BW's version before the latest: every worker gives it once its stream has updated, or none does.
  const withPrevious = states.filter((s) => s.previous).length;
  if (withPrevious > 0 && withPrevious < states.length) throw new Error(`${withPrevious} of the ${states.length} workers gave a previous weight version`);
  const previous = withPrevious > 0 ? joinWeights(m, zero, states.map((s) => s.previous as Weights)) : undefined;
  const tail = { stepsDone, losses: losses.slice(0, stepsDone), evals: [...evals] };
  if ((m.ep ?? 1) > 1) return { ...tail, params: joinEpWeights(params), optimizer: joinEpOptimizer(optimizer) };
  if (m.tp === 1) return { ...tail, params, optimizer, ...(previous ? { previous } : {}) };
  return { ...tail, params: joinTpWeights(params, rules), optimizer: joinTpOptimizer(optimizer, rules), ...(previous ? { previous: joinTpWeights(previous, rules) } : {}) };
}

/** The progress after `stepsDone` steps, read from the workers between steps: `hosts` in worker order (replica-major). */
export async function gatherProgress(
  m: Mesh,
  zero: ZeroStage,
  hosts: readonly RankHost[],
  stepsDone: number,
  losses: readonly number[],
  evals: readonly EvalReport[],
  rules: ReadonlyMap<string, TpParam>,
): Promise<TrainProgress> {
  // Replica 0 holds every weight and, without ZeRO, every optimizer slot; with it, each worker holds a shard.
  const read = await Promise.all(hosts.slice(0, stateReaders(m, zero)).map((h) => h.readState()));
  return joinProgress(m, zero, read, stepsDone, losses, evals, rules);
}
