/**
 * A run's state (weights and optimizer slots by parameter name) between whole tensors and expert-parallel pieces.
 * An ep worker's stages and optimizer hold its experts' rows of each MoE layer's stacked expert weights under piece
 * names (`name@epE/P`, nn/moe/moe-ep.ts): member e holds rows [e·n/P, (e+1)·n/P) of the whole, a contiguous run of
 * its values. A checkpoint, the report and the comparisons hold whole tensors. `epView` cuts a whole state into one
 * worker's pieces (a resume onto any ep); `joinEp` puts the group's pieces back together (a checkpoint, the report).
 */
import type { ModelSpec } from '../nn/model-spec.ts';
import { epPieceName, parseEpPieceName } from '../nn/moe/moe-ep.ts';
import type { OptimizerState } from '../nn/optimizer.ts';
import { placeOf, type Mesh } from '../schedule/mesh.ts';
import type { RankState, Weights } from './executor/index.ts';
import { parsePieceName } from './policies/index.ts';

type Values = Float32Array | Float64Array;

/** The whole names of a model's expert weights (what ep splits): each MoE block's stacked c_fc and c_proj. */
export function expertParamNames(spec: ModelSpec): Set<string> {
  const out = new Set<string>();
  for (const b of spec.blocks) {
    for (const l of b.layers) {
      if (l.kind !== 'gpt-moe-block') continue;
      out.add(`${l.prefix}.mlp.experts.c_fc.weight`);
      out.add(`${l.prefix}.mlp.experts.c_proj.weight`);
    }
  }
  return out;
}

function asValues(v: ArrayLike<number>): Values {
  return v instanceof Float32Array || v instanceof Float64Array ? v : Float64Array.from(v);
}

/** Member e of ep's view of a whole state: every expert weight (and its optimizer slots) as its rows, under its piece name. */
export function epView<S extends { params: Readonly<Record<string, ArrayLike<number>>>; optimizer: OptimizerState<ArrayLike<number>> }>(state: S, experts: ReadonlySet<string>, ep: number, e: number): S {
  if (ep === 1) return state;
  const cut = <V,>(rec: Readonly<Record<string, V>>, each: (v: V) => V): Record<string, V> => {
    const out: Record<string, V> = {};
    for (const [name, v] of Object.entries(rec)) {
      if (experts.has(name)) out[epPieceName(name, e, ep)] = each(v);
      else out[name] = v;
    }
    return out;
  };
  const piece = (v: ArrayLike<number>) => {
    const x = asValues(v);
    const n = x.length / ep;
    return x.slice(e * n, (e + 1) * n);
  };
  const params = cut(state.params, piece);
  const slots = cut(state.optimizer.slots, (own) => Object.fromEntries(Object.entries(own).map(([slot, v]) => [slot, piece(v)])));
  return { ...state, params, optimizer: { ...state.optimizer, slots } };
}

/** `rec` with every complete set of ep pieces `name@epE/P` joined into `name` (in member order). */
export function joinEp<V extends ArrayLike<number>>(rec: Readonly<Record<string, V>>, join: (pieces: V[]) => V): Record<string, V> {
  const out: Record<string, V> = {};
  const groups = new Map<string, (V | undefined)[]>();
  for (const [key, v] of Object.entries(rec)) {
    const p = parseEpPieceName(key);
    if (!p) {
      out[key] = v;
      continue;
    }
    const g = groups.get(p.name) ?? new Array<V | undefined>(p.ep).fill(undefined);
    groups.set(p.name, g);
    g[p.e] = v;
  }
  for (const [name, g] of groups) {
    const missing = g.findIndex((x) => x === undefined);
    if (missing >= 0) throw new Error(`the ep group gave ${g.filter((x) => x !== undefined).length} of the ${g.length} pieces of "${name}" (piece ${missing} missing)`);
    out[name] = join(g as V[]);
  }
  return out;
}

/** The pieces one after another. */
export function concatValues<V extends ArrayLike<number>>(pieces: V[]): V {
  const first = pieces[0] as unknown as Values;
  const out = new (first.constructor as new (n: number) => Values)(pieces.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of pieces) {
    out.set(p as unknown as Values, at);
    at += p.length;
  }
  return out as unknown as V;
}

/** Whole weights from an ep group's weights. */
export function joinEpWeights(w: Weights): Weights {
  return joinEp(w, concatValues);
}

/** Whole optimizer slots from the ep pieces' slots. */
export function joinEpOptimizer<S extends OptimizerState>(opt: S): S {
  const byPiece = new Map<string, Record<string, Values>>(Object.entries(opt.slots));
  const names = [...new Set([...byPiece.keys()].flatMap((k) => Object.keys(byPiece.get(k) ?? {})))];
  const slots: Record<string, Record<string, Values>> = {};
  for (const slot of names) {
    const one: Record<string, Values> = {};
    for (const [param, own] of byPiece) if (own[slot]) one[param] = own[slot];
    for (const [param, v] of Object.entries(joinEp(one, concatValues))) (slots[param] ??= {})[slot] = v;
  }
  return { ...opt, slots };
}

function isEpPiece(key: string): boolean {
  return parseEpPieceName(parsePieceName(key)?.name ?? key) !== null;
}

function piecesOnly(w: Weights): Weights {
  return Object.fromEntries(Object.entries(w).filter(([k]) => isEpPiece(k)));
}

/** With ep > 1 every member of an ep group holds the dense parameters alike: read from ep rank 0 only, so each value is covered once. */
export function epRankOnce(m: Mesh, w: number, s: RankState): RankState {
  if ((m.ep ?? 1) === 1 || placeOf(m, w).epRank === 0) return s;
  return { params: piecesOnly(s.params), optimizer: { ...s.optimizer, pieces: s.optimizer.pieces.filter((p) => isEpPiece(p.param)) }, ...(s.previous ? { previous: piecesOnly(s.previous) } : {}) };
}

/** Weights of ep rank 0, the expert pieces of every rank (for joinWeights). */
export function epWeightsOnce(m: Mesh, byWorker: readonly Weights[]): Weights[] {
  if ((m.ep ?? 1) === 1) return [...byWorker];
  return byWorker.map((ws, i) => (placeOf(m, i).epRank === 0 ? ws : piecesOnly(ws)));
}
