/**
 * A run's state (weights and optimizer slots by parameter name) between whole
 * tensors and tensor-parallel pieces. A tp worker's stages and optimizer hold
 * its pieces under piece names (`name@tp1/2`, nn/tp-shard.ts); a checkpoint,
 * the report and the PyTorch export hold whole tensors. `tpView` cuts a whole
 * state into one worker's pieces (a resume, onto any tp); `joinTpWeights` and
 * `joinTpOptimizer` put the group's pieces back together (a checkpoint).
 */
import type { OptimizerState } from '../nn/optimizer.ts';
import { joinTpPieces, parseTpPieceName, tpPieceName, tpSlice, type TpParam } from '../nn/tp-shard.ts';
import type { Weights } from './executor/index.ts';

type Values = Float32Array | Float64Array;

function asValues(v: ArrayLike<number>): Values {
  return v instanceof Float32Array || v instanceof Float64Array ? v : Float64Array.from(v);
}

/** Worker j of t's view of a whole state: every split parameter's piece under its piece name, the rest as given. */
export function tpView<S extends { params: Readonly<Record<string, ArrayLike<number>>>; optimizer: OptimizerState<ArrayLike<number>> }>(
  state: S,
  rules: ReadonlyMap<string, TpParam>,
  t: number,
  j: number,
): S {
  if (t === 1) return state;
  const cut = <V,>(rec: Readonly<Record<string, V>>, each: (name: string, v: V, r: TpParam) => V): Record<string, V> => {
    const out: Record<string, V> = {};
    for (const [name, v] of Object.entries(rec)) {
      const r = rules.get(name);
      if (r) out[tpPieceName(name, j, t)] = each(name, v, r);
      else out[name] = v;
    }
    return out;
  };
  const piece = (v: ArrayLike<number>, r: TpParam) => tpSlice(asValues(v), r.shape, r.rule, t, j);
  const params = cut(state.params, (_n, v, r) => piece(v, r));
  const slots = cut(state.optimizer.slots, (_n, own, r) => {
    const o: Record<string, ArrayLike<number>> = {};
    for (const [slot, v] of Object.entries(own)) o[slot] = piece(v, r);
    return o;
  });
  // PipeDream-2BW's previous weight version is cut as the weights are.
  const previous = (state as { previous?: Readonly<Record<string, ArrayLike<number>>> }).previous;
  return { ...state, params, optimizer: { ...state.optimizer, slots }, ...(previous ? { previous: cut(previous, (_n, v, r) => piece(v, r)) } : {}) };
}

/** Groups the piece names of `rec` by parameter; every split parameter must come with all t pieces. */
function joinByName<V>(rec: Readonly<Record<string, V>>, rules: ReadonlyMap<string, TpParam>, join: (pieces: V[], r: TpParam) => V): Record<string, V> {
  const out: Record<string, V> = {};
  const groups = new Map<string, { t: number; pieces: (V | undefined)[] }>();
  for (const [key, v] of Object.entries(rec)) {
    const p = parseTpPieceName(key);
    if (!p) {
      out[key] = v;
      continue;
    }
    const g = groups.get(p.name) ?? { t: p.t, pieces: new Array<V | undefined>(p.t).fill(undefined) };
    groups.set(p.name, g);
    g.pieces[p.j] = v;
  }
  for (const [name, g] of groups) {
    const r = rules.get(name);
    if (!r) throw new Error(`tp pieces of "${name}", a parameter tensor parallelism does not split`);
    const missing = g.pieces.findIndex((x) => x === undefined);
    if (missing >= 0) throw new Error(`the tp group gave ${g.pieces.filter((x) => x !== undefined).length} of the ${g.t} pieces of "${name}" (piece ${missing} missing)`);
    out[name] = join(g.pieces as V[], r);
  }
  return out;
}

/** Whole weights from a replica's workers' weights (tp pieces joined). */
export function joinTpWeights(w: Weights, rules: ReadonlyMap<string, TpParam>): Weights {
  return joinByName(w, rules, (pieces, r) => {
    const whole = joinTpPieces(pieces, r.shape, r.rule);
    return pieces[0] instanceof Float32Array ? Float32Array.from(whole) : whole;
  });
}

/** Whole optimizer slots from the tp pieces' slots. */
export function joinTpOptimizer<O extends OptimizerState>(opt: O, rules: ReadonlyMap<string, TpParam>): O {
  const slots = joinByName(opt.slots, rules, (pieces, r) => {
    const o: Record<string, Values> = {};
    for (const slot of Object.keys(pieces[0])) {
      const whole = joinTpPieces(pieces.map((p) => p[slot]), r.shape, r.rule);
      o[slot] = pieces[0][slot] instanceof Float32Array ? Float32Array.from(whole) : whole;
    }
    return o;
  });
  return { ...opt, slots };
}
