/**
 * The float64 reference of the mixture-of-experts ops (layouts in moe-shapes.ts), on plain arrays: the CPU
 * backend runs these, and the GPU kernels (shaders/moe.wgsl) are checked against them.
 *
 * Routing (Switch top-1, GShard top-2): each token's k best experts by probability, ties to the lower index; then
 * positions in each expert's buffer in token order, every token's first choice before any second choice (GShard:
 * the second choices queue behind the group's first choices); a choice past `cap` is dropped (slot −1).
 */

export interface RouteArrays {
  sel: Int32Array;
  slot: Int32Array;
  rowToken: Int32Array;
  /** [E, 3]: per expert, the tokens whose first choice it is, whose second choice it is, and its choices dropped (past `cap`). */
  load: Float64Array;
}

/** The columns of a route's load [E, 3]. */
export const LOAD_FIRST = 0;
export const LOAD_SECOND = 1;
export const LOAD_DROPPED = 2;
export const LOAD_COLS = 3;

/** Softmax of each row of x [n, c]. */
export function softmaxRowsRef(x: ArrayLike<number>, n: number, c: number): Float64Array {
  const out = new Float64Array(n * c);
  for (let r = 0; r < n; r++) {
    let m = -Infinity;
    for (let j = 0; j < c; j++) m = Math.max(m, x[r * c + j]);
    let s = 0;
    for (let j = 0; j < c; j++) s += out[r * c + j] = Math.exp(x[r * c + j] - m);
    for (let j = 0; j < c; j++) out[r * c + j] /= s;
  }
  return out;
}

/** dx = p ⊙ (dp − Σ_j p·dp), per row. */
export function softmaxRowsBackwardRef(p: ArrayLike<number>, dp: ArrayLike<number>, n: number, c: number): Float64Array {
  const out = new Float64Array(n * c);
  for (let r = 0; r < n; r++) {
    let s = 0;
    for (let j = 0; j < c; j++) s += p[r * c + j] * dp[r * c + j];
    for (let j = 0; j < c; j++) out[r * c + j] = p[r * c + j] * (dp[r * c + j] - s);
  }
  return out;
}

/** The route of S tokens over E experts: top-k choices, then positions within `cap` rows per expert. */
export function routeRef(probs: ArrayLike<number>, S: number, E: number, k: number, cap: number): RouteArrays {
  const sel = new Int32Array(S * k);
  for (let s = 0; s < S; s++) {
    for (let j = 0; j < k; j++) {
      let best = -1;
      for (let e = 0; e < E; e++) {
        if (j === 1 && e === sel[s * k]) continue;
        if (best < 0 || probs[s * E + e] > probs[s * E + best]) best = e; // strictly greater: ties keep the lower index
      }
      sel[s * k + j] = best;
    }
  }
  const slot = new Int32Array(S * k).fill(-1);
  const rowToken = new Int32Array(E * cap).fill(-1);
  const used = new Int32Array(E);
  const load = new Float64Array(E * LOAD_COLS);
  for (let j = 0; j < k; j++) {
    for (let s = 0; s < S; s++) {
      const e = sel[s * k + j];
      const pos = used[e]++;
      load[e * LOAD_COLS + j]++;
      if (pos < cap) {
        slot[s * k + j] = e * cap + pos;
        rowToken[e * cap + pos] = s * k + j;
      } else load[e * LOAD_COLS + LOAD_DROPPED]++;
    }
  }
  return { sel, slot, rowToken, load };
}

/** Gates [S, k]: top-1 the chosen probability (Switch, not renormalised); top-2 each over the two's sum (GShard). */
export function gatesRef(probs: ArrayLike<number>, sel: ArrayLike<number>, S: number, E: number, k: number): Float64Array {
  const g = new Float64Array(S * k);
  for (let s = 0; s < S; s++) {
    if (k === 1) {
      g[s] = probs[s * E + sel[s]];
      continue;
    }
    const p1 = probs[s * E + sel[s * 2]], p2 = probs[s * E + sel[s * 2 + 1]];
    g[s * 2] = p1 / (p1 + p2);
    g[s * 2 + 1] = p2 / (p1 + p2);
  }
  return g;
}

/** dprobs [S, E] from dgates [S, k] (zero where no expert was chosen). */
export function gatesBackwardRef(probs: ArrayLike<number>, sel: ArrayLike<number>, dg: ArrayLike<number>, S: number, E: number, k: number): Float64Array {
  const dp = new Float64Array(S * E);
  for (let s = 0; s < S; s++) {
    if (k === 1) {
      dp[s * E + sel[s]] = dg[s];
      continue;
    }
    const e1 = sel[s * 2], e2 = sel[s * 2 + 1];
    const p1 = probs[s * E + e1], p2 = probs[s * E + e2];
    const q = (p1 + p2) * (p1 + p2);
    dp[s * E + e1] = (p2 * (dg[s * 2] - dg[s * 2 + 1])) / q;
    dp[s * E + e2] = (p1 * (dg[s * 2 + 1] - dg[s * 2])) / q;
  }
  return dp;
}

/**
 * The load-balancing loss E·Σ_e f_e·P_e (Switch; GShard's as fairseq computes it): f_e the fraction of the group's
 * tokens whose first choice is e, P_e the mean probability of e. Its gradient: ∂/∂probs[s, e] = E·f_e / S (f is
 * discrete: no gradient).
 */
export function auxLossRef(probs: ArrayLike<number>, sel: ArrayLike<number>, S: number, E: number, k: number): { loss: number; dprobs: Float64Array } {
  const f = new Float64Array(E);
  for (let s = 0; s < S; s++) f[sel[s * k]] += 1 / S;
  let loss = 0;
  for (let e = 0; e < E; e++) {
    let P = 0;
    for (let s = 0; s < S; s++) P += probs[s * E + e];
    loss += f[e] * (P / S);
  }
  const dprobs = new Float64Array(S * E);
  for (let s = 0; s < S; s++) for (let e = 0; e < E; e++) dprobs[s * E + e] = (E * f[e]) / S;
  return { loss: E * loss, dprobs };
}

/** xe [R, C]: row r a copy of its token's row of x [S, C], zero when empty. */
export function dispatchRef(x: ArrayLike<number>, rowToken: ArrayLike<number>, C: number, k: number): Float64Array {
  const R = rowToken.length;
  const out = new Float64Array(R * C);
  for (let r = 0; r < R; r++) {
    const t = rowToken[r];
    if (t < 0) continue;
    const s = Math.floor(t / k);
    for (let c = 0; c < C; c++) out[r * C + c] = x[s * C + c];
  }
  return out;
}

/** dx [S, C] = Σ_j dxe[slot[s, j]] over the token's kept choices. */
export function dispatchBackwardRef(dxe: ArrayLike<number>, slot: ArrayLike<number>, S: number, k: number, C: number): Float64Array {
  const out = new Float64Array(S * C);
  for (let s = 0; s < S; s++) {
    for (let j = 0; j < k; j++) {
      const r = slot[s * k + j];
      if (r < 0) continue;
      for (let c = 0; c < C; c++) out[s * C + c] += dxe[r * C + c];
    }
  }
  return out;
}

/** y [S, C] = Σ_j gates[s, j]·ye[slot[s, j]] over the kept choices (a dropped token: 0, the residual alone). */
export function combineRef(ye: ArrayLike<number>, slot: ArrayLike<number>, gates: ArrayLike<number>, S: number, k: number, C: number): Float64Array {
  const out = new Float64Array(S * C);
  for (let s = 0; s < S; s++) {
    for (let j = 0; j < k; j++) {
      const r = slot[s * k + j];
      if (r < 0) continue;
      const g = gates[s * k + j];
      for (let c = 0; c < C; c++) out[s * C + c] += g * ye[r * C + c];
    }
  }
  return out;
}

/** dye [R, C] = gate·dy of the row's token (0 when empty); dgates [S, k] = dy[s]·ye[slot] (0 when dropped). */
export function combineBackwardRef(
  dy: ArrayLike<number>, ye: ArrayLike<number>, slot: ArrayLike<number>, gates: ArrayLike<number>, rowToken: ArrayLike<number>, S: number, k: number, C: number,
): { dye: Float64Array; dgates: Float64Array } {
  const R = rowToken.length;
  const dye = new Float64Array(R * C);
  for (let r = 0; r < R; r++) {
    const t = rowToken[r];
    if (t < 0) continue;
    const s = Math.floor(t / k);
    for (let c = 0; c < C; c++) dye[r * C + c] = gates[t] * dy[s * C + c];
  }
  const dgates = new Float64Array(S * k);
  for (let i = 0; i < S * k; i++) {
    const r = slot[i];
    if (r < 0) continue;
    const s = Math.floor(i / k);
    let acc = 0;
    for (let c = 0; c < C; c++) acc += dy[s * C + c] * ye[r * C + c];
    dgates[i] = acc;
  }
  return { dye, dgates };
}
