// Causal multi-head self-attention, forward and backward, and the residual add.
// Layouts (attention-shapes.ts): qkv [B*T, 3C] (q | k | v per row, head h owns
// columns h*D .. h*D+D-1 of each part); scores / probs and their gradients
// [B*H*T, T], row (b*H + h)*T + t, column j, masked (0) for j > t.
//
// Every kernel is a grid-stride loop over its outputs, one output (or one row)
// per thread, with a fixed summation order: results do not depend on the grid.

const WG: u32 = 64u;

struct Params {
  n: u32,      // outputs (or rows) the kernel writes
  T: u32,
  H: u32,
  D: u32,
  scale: f32,
  a_cols: u32, // causal_pair_dots only
  a_off: u32,
  b_off: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> A: array<f32>;
@group(0) @binding(2) var<storage, read> B2: array<f32>;
@group(0) @binding(3) var<storage, read> C3: array<f32>;
@group(0) @binding(4) var<storage, read> D4: array<f32>;
@group(0) @binding(5) var<storage, read_write> Out: array<f32>;

fn first(lid: vec3<u32>, wid: vec3<u32>) -> u32 {
  return wid.x * WG + lid.x;
}

fn stride(nwg: vec3<u32>) -> u32 {
  return nwg.x * WG;
}

// The (b, h, t, j) of element i of a [B*H*T, T] scores-shaped array.
fn score_index(i: u32) -> vec4<u32> {
  let j = i % p.T;
  let row = i / p.T;
  let t = row % p.T;
  let bh = row / p.T;
  return vec4<u32>(bh / p.H, bh % p.H, t, j);
}

// Causal pair dots, the scores and their gradient dP alike. A has a_cols columns,
// B2 = qkv. Out[(bh*T + t)*T + j] = scale * sum_d A[b*T+t, a_off + h*D + d] * B2[b*T+j, b_off + h*D + d]
// for j <= t, else 0. Scores: A = qkv, a_off = 0 (q), b_off = C (k). dP: A = dy, b_off = 2C (v), scale 1.
@compute @workgroup_size(WG)
fn causal_pair_dots(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
                    @builtin(num_workgroups) nwg: vec3<u32>) {
  let C = p.H * p.D;
  for (var i = first(lid, wid); i < p.n; i += stride(nwg)) {
    let ix = score_index(i);
    let b = ix.x;
    let h = ix.y;
    let t = ix.z;
    let j = ix.w;
    var s = 0.0;
    if (j <= t) {
      let ao = (b * p.T + t) * p.a_cols + p.a_off + h * p.D;
      let bo = (b * p.T + j) * 3u * C + p.b_off + h * p.D;
      for (var d = 0u; d < p.D; d++) {
        s += A[ao + d] * B2[bo + d];
      }
      s = p.scale * s;
    }
    Out[i] = s;
  }
}

// causal softmax: A = scores; one thread per row (n = rows).
@compute @workgroup_size(WG)
fn causal_softmax(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
                  @builtin(num_workgroups) nwg: vec3<u32>) {
  for (var r = first(lid, wid); r < p.n; r += stride(nwg)) {
    let t = r % p.T;
    let o = r * p.T;
    var mx = A[o];
    for (var j = 1u; j <= t; j++) {
      mx = max(mx, A[o + j]);
    }
    var s = 0.0;
    for (var j = 0u; j <= t; j++) {
      s += exp(A[o + j] - mx);
    }
    let inv = 1.0 / s;
    for (var j = 0u; j < p.T; j++) {
      var v = 0.0;
      if (j <= t) {
        v = exp(A[o + j] - mx) * inv;
      }
      Out[o + j] = v;
    }
  }
}

// softmax backward: A = probs, B2 = dProbs; one thread per row.
@compute @workgroup_size(WG)
fn causal_softmax_bwd(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
                      @builtin(num_workgroups) nwg: vec3<u32>) {
  for (var r = first(lid, wid); r < p.n; r += stride(nwg)) {
    let t = r % p.T;
    let o = r * p.T;
    var dot = 0.0;
    for (var j = 0u; j <= t; j++) {
      dot += A[o + j] * B2[o + j];
    }
    for (var j = 0u; j < p.T; j++) {
      var v = 0.0;
      if (j <= t) {
        v = A[o + j] * (B2[o + j] - dot);
      }
      Out[o + j] = v;
    }
  }
}

// weighted sum: A = probs, B2 = qkv. Out[(b*T + t)*C + c] = sum_{j<=t} P[b,h,t,j] v[b,j,c].
@compute @workgroup_size(WG)
fn attn_values(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
               @builtin(num_workgroups) nwg: vec3<u32>) {
  let C = p.H * p.D;
  for (var i = first(lid, wid); i < p.n; i += stride(nwg)) {
    let c = i % C;
    let bt = i / C;
    let t = bt % p.T;
    let b = bt / p.T;
    let h = c / p.D;
    let po = ((b * p.H + h) * p.T + t) * p.T;
    var s = 0.0;
    for (var j = 0u; j <= t; j++) {
      s += A[po + j] * B2[(b * p.T + j) * 3u * C + 2u * C + c];
    }
    Out[i] = s;
  }
}

// dqkv: A = qkv, B2 = probs, C3 = dScores, D4 = dy. One output element per thread:
//   dq_t = scale sum_{j<=t} dS[t,j] k_j;  dk_t = scale sum_{i>=t} dS[i,t] q_i;  dv_t = sum_{i>=t} P[i,t] dy_i.
@compute @workgroup_size(WG)
fn attn_dqkv(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
             @builtin(num_workgroups) nwg: vec3<u32>) {
  let C = p.H * p.D;
  let C3w = 3u * C;
  for (var i = first(lid, wid); i < p.n; i += stride(nwg)) {
    let col = i % C3w;
    let bt = i / C3w;
    let t = bt % p.T;
    let b = bt / p.T;
    let part = col / C;
    let c = col % C;
    let h = c / p.D;
    let bh = b * p.H + h;
    var s = 0.0;
    if (part == 0u) {
      let so = (bh * p.T + t) * p.T;
      for (var j = 0u; j <= t; j++) {
        s += C3[so + j] * A[(b * p.T + j) * C3w + C + c];
      }
      s = p.scale * s;
    } else if (part == 1u) {
      for (var r = t; r < p.T; r++) {
        s += C3[(bh * p.T + r) * p.T + t] * A[(b * p.T + r) * C3w + c];
      }
      s = p.scale * s;
    } else {
      for (var r = t; r < p.T; r++) {
        s += B2[(bh * p.T + r) * p.T + t] * D4[(b * p.T + r) * C + c];
      }
    }
    Out[i] = s;
  }
}

// residual add: Out = A + B2 (n elements).
@compute @workgroup_size(WG)
fn residual_add(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
                @builtin(num_workgroups) nwg: vec3<u32>) {
  for (var i = first(lid, wid); i < p.n; i += stride(nwg)) {
    Out[i] = A[i] + B2[i];
  }
}
