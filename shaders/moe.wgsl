// Mixture of experts: the router's row softmax, top-k routing with capacity, gates, the load-balancing loss,
// dispatch / combine and the experts' grouped matmul, forward and backward. Layouts: src/nn/moe/moe-shapes.ts;
// the float64 reference: src/nn/moe/moe-reference.ts, which these follow step for step.
//
// Every kernel is a grid-stride loop, one output (row, token or expert) per thread, with a fixed summation
// order: results do not depend on the grid. Routing is discrete and deterministic: moe_topk picks with strict
// comparisons in expert order (ties to the lower index), and moe_capacity gives each expert one thread that walks
// the group's choices in order (first choices in token order, then second choices), a prefix count per expert.

const WG: u32 = 64u;

struct Params {
  n: u32,    // items the kernel loops over
  S: u32,    // tokens of the group
  E: u32,    // experts (or columns of a row softmax)
  k: u32,    // choices per token
  C: u32,    // row width
  cap: u32,  // rows per expert
  // grouped matmul: per group out [M, N] = op(A_g) · op(B_g); A_g [ar, ac], B_g [br, bc]
  M: u32,
  N: u32,
  K: u32,
  ac: u32,
  bc: u32,
  flags: u32, // bit 0 transA, bit 1 transB, bit 2 accumulate
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> F1: array<f32>;
@group(0) @binding(2) var<storage, read> F2: array<f32>;
@group(0) @binding(3) var<storage, read> I1: array<i32>;
@group(0) @binding(4) var<storage, read> I2: array<i32>;
@group(0) @binding(5) var<storage, read_write> Out: array<f32>;
@group(0) @binding(6) var<storage, read_write> OutI: array<i32>;
@group(0) @binding(7) var<storage, read_write> OutI2: array<i32>;
@group(0) @binding(8) var<storage, read_write> Out2: array<f32>;

fn first(lid: vec3<u32>, wid: vec3<u32>) -> u32 {
  return wid.x * WG + lid.x;
}

fn stride(nwg: vec3<u32>) -> u32 {
  return nwg.x * WG;
}

// Out [n, E] = softmax of each row of F1 [n, E].
@compute @workgroup_size(WG)
fn softmax_rows(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
                @builtin(num_workgroups) nwg: vec3<u32>) {
  for (var r = first(lid, wid); r < p.n; r += stride(nwg)) {
    let base = r * p.E;
    var mx = F1[base];
    for (var j = 1u; j < p.E; j++) {
      mx = max(mx, F1[base + j]);
    }
    var s = 0.0;
    for (var j = 0u; j < p.E; j++) {
      let e = exp(F1[base + j] - mx);
      Out[base + j] = e;
      s += e;
    }
    for (var j = 0u; j < p.E; j++) {
      Out[base + j] = Out[base + j] / s;
    }
  }
}

// Out = F1 ⊙ (F2 − Σ_j F1·F2) per row (F1 = p, F2 = dp).
@compute @workgroup_size(WG)
fn softmax_rows_bwd(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
                    @builtin(num_workgroups) nwg: vec3<u32>) {
  for (var r = first(lid, wid); r < p.n; r += stride(nwg)) {
    let base = r * p.E;
    var s = 0.0;
    for (var j = 0u; j < p.E; j++) {
      s += F1[base + j] * F2[base + j];
    }
    for (var j = 0u; j < p.E; j++) {
      Out[base + j] = F1[base + j] * (F2[base + j] - s);
    }
  }
}

// OutI [S, k] = each token's k best experts of F1 = probs [S, E] (strictly greater wins: ties to the lower index).
@compute @workgroup_size(WG)
fn moe_topk(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
            @builtin(num_workgroups) nwg: vec3<u32>) {
  for (var s = first(lid, wid); s < p.S; s += stride(nwg)) {
    var firstPick = -1;
    for (var j = 0u; j < p.k; j++) {
      var best = -1;
      for (var e = 0u; e < p.E; e++) {
        if (j == 1u && i32(e) == firstPick) {
          continue;
        }
        if (best < 0 || F1[s * p.E + e] > F1[s * p.E + u32(best)]) {
          best = i32(e);
        }
      }
      if (j == 0u) {
        firstPick = best;
      }
      OutI[s * p.k + j] = best;
    }
  }
}

// One thread per expert: I1 = sel [S, k]. OutI = slot [S, k] (written for this expert's choices), OutI2 = rowToken
// [E·cap] (this expert's rows). Positions in order: every first choice by token, then every second choice.
// Out = load [E, 3]: the expert's first choices, second choices, and choices dropped past cap (exact in f32).
@compute @workgroup_size(WG)
fn moe_capacity(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
                @builtin(num_workgroups) nwg: vec3<u32>) {
  for (var e = first(lid, wid); e < p.E; e += stride(nwg)) {
    var used = 0u;
    var dropped = 0u;
    Out[e * 3u + 1u] = 0.0;
    for (var j = 0u; j < p.k; j++) {
      let before = used;
      for (var s = 0u; s < p.S; s++) {
        let i = s * p.k + j;
        if (I1[i] != i32(e)) {
          continue;
        }
        if (used < p.cap) {
          OutI[i] = i32(e * p.cap + used);
          OutI2[e * p.cap + used] = i32(i);
        } else {
          OutI[i] = -1;
          dropped++;
        }
        used++;
      }
      Out[e * 3u + j] = f32(used - before);
    }
    Out[e * 3u + 2u] = f32(dropped);
    for (var r = used; r < p.cap; r++) {
      OutI2[e * p.cap + r] = -1;
    }
  }
}

// Out [S, k] = gates from F1 = probs [S, E] and I1 = sel.
@compute @workgroup_size(WG)
fn moe_gates(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
             @builtin(num_workgroups) nwg: vec3<u32>) {
  for (var s = first(lid, wid); s < p.S; s += stride(nwg)) {
    if (p.k == 1u) {
      Out[s] = F1[s * p.E + u32(I1[s])];
      continue;
    }
    let p1 = F1[s * p.E + u32(I1[s * 2u])];
    let p2 = F1[s * p.E + u32(I1[s * 2u + 1u])];
    Out[s * 2u] = p1 / (p1 + p2);
    Out[s * 2u + 1u] = p2 / (p1 + p2);
  }
}

// Out [S, E] = dprobs from F1 = probs, I1 = sel, F2 = dgates [S, k].
@compute @workgroup_size(WG)
fn moe_gates_bwd(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
                 @builtin(num_workgroups) nwg: vec3<u32>) {
  for (var s = first(lid, wid); s < p.S; s += stride(nwg)) {
    for (var e = 0u; e < p.E; e++) {
      Out[s * p.E + e] = 0.0;
    }
    if (p.k == 1u) {
      Out[s * p.E + u32(I1[s])] = F2[s];
      continue;
    }
    let e1 = u32(I1[s * 2u]);
    let e2 = u32(I1[s * 2u + 1u]);
    let p1 = F1[s * p.E + e1];
    let p2 = F1[s * p.E + e2];
    let q = (p1 + p2) * (p1 + p2);
    let dg1 = F2[s * 2u];
    let dg2 = F2[s * 2u + 1u];
    Out[s * p.E + e1] = (p2 * (dg1 - dg2)) / q;
    Out[s * p.E + e2] = (p1 * (dg2 - dg1)) / q;
  }
}

// One thread per expert e: Out2[e] = f_e · P_e (f from I1 = sel's first choices, P the mean of F1 = probs' column),
// and the gradient's column Out[s·E + e] = E·f_e / S. moe_aux_sum then sums Out2 in expert order.
@compute @workgroup_size(WG)
fn moe_aux(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
           @builtin(num_workgroups) nwg: vec3<u32>) {
  let invS = 1.0 / f32(p.S);
  for (var e = first(lid, wid); e < p.E; e += stride(nwg)) {
    var f = 0.0;
    var P = 0.0;
    for (var s = 0u; s < p.S; s++) {
      if (I1[s * p.k] == i32(e)) {
        f += invS;
      }
      P += F1[s * p.E + e];
    }
    Out2[e] = f * (P / f32(p.S));
    let g = (f32(p.E) * f) / f32(p.S);
    for (var s = 0u; s < p.S; s++) {
      Out[s * p.E + e] = g;
    }
  }
}

// Out[0] = E · Σ_e F1[e] in expert order (one thread).
@compute @workgroup_size(1)
fn moe_aux_sum() {
  var s = 0.0;
  for (var e = 0u; e < p.E; e++) {
    s += F1[e];
  }
  Out[0] = f32(p.E) * s;
}

// Out [R, C]: row r of the experts' buffer = F1 = x's row of its token (I1 = rowToken), 0 when empty.
@compute @workgroup_size(WG)
fn moe_dispatch(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
                @builtin(num_workgroups) nwg: vec3<u32>) {
  for (var i = first(lid, wid); i < p.n; i += stride(nwg)) {
    let r = i / p.C;
    let c = i % p.C;
    let t = I1[r];
    if (t < 0) {
      Out[i] = 0.0;
    } else {
      Out[i] = F1[(u32(t) / p.k) * p.C + c];
    }
  }
}

// Out [S, C] = Σ_j F1 = dxe[slot[s, j]] (I1 = slot), over the kept choices in order.
@compute @workgroup_size(WG)
fn moe_dispatch_bwd(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
                    @builtin(num_workgroups) nwg: vec3<u32>) {
  for (var i = first(lid, wid); i < p.n; i += stride(nwg)) {
    let s = i / p.C;
    let c = i % p.C;
    var acc = 0.0;
    for (var j = 0u; j < p.k; j++) {
      let r = I1[s * p.k + j];
      if (r >= 0) {
        acc += F1[u32(r) * p.C + c];
      }
    }
    Out[i] = acc;
  }
}

// Out [S, C] = Σ_j gates[s, j] · ye[slot[s, j]] (F1 = ye, F2 = gates, I1 = slot), over the kept choices in order.
@compute @workgroup_size(WG)
fn moe_combine(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
               @builtin(num_workgroups) nwg: vec3<u32>) {
  for (var i = first(lid, wid); i < p.n; i += stride(nwg)) {
    let s = i / p.C;
    let c = i % p.C;
    var acc = 0.0;
    for (var j = 0u; j < p.k; j++) {
      let r = I1[s * p.k + j];
      if (r >= 0) {
        acc += F2[s * p.k + j] * F1[u32(r) * p.C + c];
      }
    }
    Out[i] = acc;
  }
}

// Out [R, C] = gates[t] · dy[token(t)] for the choice t = rowToken[r] holding row r (F1 = dy, F2 = gates, I1 = rowToken).
@compute @workgroup_size(WG)
fn moe_combine_bwd_rows(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
                        @builtin(num_workgroups) nwg: vec3<u32>) {
  for (var i = first(lid, wid); i < p.n; i += stride(nwg)) {
    let r = i / p.C;
    let c = i % p.C;
    let t = I1[r];
    if (t < 0) {
      Out[i] = 0.0;
    } else {
      Out[i] = F2[u32(t)] * F1[(u32(t) / p.k) * p.C + c];
    }
  }
}

// Out [S·k] = dy[s] · ye[slot[s, j]] (F1 = dy, F2 = ye, I1 = slot), 0 when dropped.
@compute @workgroup_size(WG)
fn moe_combine_bwd_gates(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
                         @builtin(num_workgroups) nwg: vec3<u32>) {
  for (var i = first(lid, wid); i < p.n; i += stride(nwg)) {
    let r = I1[i];
    var acc = 0.0;
    if (r >= 0) {
      let s = i / p.k;
      for (var c = 0u; c < p.C; c++) {
        acc += F1[s * p.C + c] * F2[u32(r) * p.C + c];
      }
    }
    Out[i] = acc;
  }
}

// The experts' matmuls: n = groups·M·N outputs; output (g, m, nn) = Σ_kk op(A_g)[m, kk] · op(B_g)[kk, nn] in order
// of kk, then (flag 4) added to what Out holds. A_g starts at g·M·K of F1, B_g at g·K·N of F2.
@compute @workgroup_size(WG)
fn grouped_matmul(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
                  @builtin(num_workgroups) nwg: vec3<u32>) {
  let transA = (p.flags & 1u) != 0u;
  let transB = (p.flags & 2u) != 0u;
  let acc = (p.flags & 4u) != 0u;
  let MN = p.M * p.N;
  for (var i = first(lid, wid); i < p.n; i += stride(nwg)) {
    let g = i / MN;
    let m = (i % MN) / p.N;
    let nn = i % p.N;
    let aBase = g * p.M * p.K;
    let bBase = g * p.K * p.N;
    var s = 0.0;
    for (var kk = 0u; kk < p.K; kk++) {
      var a = 0.0;
      if (transA) {
        a = F1[aBase + kk * p.ac + m];
      } else {
        a = F1[aBase + m * p.ac + kk];
      }
      var b = 0.0;
      if (transB) {
        b = F2[bBase + nn * p.bc + kk];
      } else {
        b = F2[bBase + kk * p.bc + nn];
      }
      s += a * b;
    }
    if (acc) {
      Out[i] = Out[i] + s;
    } else {
      Out[i] = s;
    }
  }
}
