// LayerNorm over the last axis of X [rows, cols].
//   forward:          y = (x - mean) * rstd * gamma + beta; also writes mean and rstd per row
//   backward input:   dx = rstd/c * (c*g*dy - sum(g*dy) - xhat * sum(g*dy*xhat))
//   (backward weights, dgamma += sum_rows dy*xhat and dbeta += sum_rows dy:
//   reduce_rows.wgsl, with the other sums over rows)
// Rows are one thread each: no barriers, and every sum runs in a fixed order
// (deterministic).

const WG: u32 = 64u;

struct Params {
  rows: u32,
  cols: u32,
  eps: f32,
  _pad: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> X: array<f32>;
@group(0) @binding(2) var<storage, read> Gamma: array<f32>;
@group(0) @binding(3) var<storage, read> Beta: array<f32>;
@group(0) @binding(4) var<storage, read_write> Y: array<f32>;
@group(0) @binding(5) var<storage, read_write> Mean: array<f32>;
@group(0) @binding(6) var<storage, read_write> Rstd: array<f32>;

// backward bindings (same slots, other names)
@group(0) @binding(2) var<storage, read> G: array<f32>;      // gamma
@group(0) @binding(3) var<storage, read> MeanIn: array<f32>;
@group(0) @binding(4) var<storage, read> RstdIn: array<f32>;
@group(0) @binding(5) var<storage, read> DY: array<f32>;
@group(0) @binding(6) var<storage, read_write> DX: array<f32>;

// Grid-stride loops: thread i handles i, i + stride, ... (the host caps the
// number of workgroups; few big workgroups run faster on CPU adapters).
fn first(lid: vec3<u32>, wid: vec3<u32>) -> u32 {
  return wid.x * WG + lid.x;
}

fn stride(nwg: vec3<u32>) -> u32 {
  return nwg.x * WG;
}

@compute @workgroup_size(WG)
fn ln_fwd(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
          @builtin(num_workgroups) nwg: vec3<u32>) {
  for (var r = first(lid, wid); r < p.rows; r += stride(nwg)) {
    let base = r * p.cols;
    let c = f32(p.cols);
    var s = 0.0;
    for (var j = 0u; j < p.cols; j++) {
      s += X[base + j];
    }
    let mu = s / c;
    var v = 0.0;
    for (var j = 0u; j < p.cols; j++) {
      let d = X[base + j] - mu;
      v += d * d;
    }
    let rs = inverseSqrt(v / c + p.eps);
    Mean[r] = mu;
    Rstd[r] = rs;
    for (var j = 0u; j < p.cols; j++) {
      Y[base + j] = (X[base + j] - mu) * rs * Gamma[j] + Beta[j];
    }
  }
}

@compute @workgroup_size(WG)
fn ln_bwd_input(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
                @builtin(num_workgroups) nwg: vec3<u32>) {
  for (var r = first(lid, wid); r < p.rows; r += stride(nwg)) {
    let base = r * p.cols;
    let mu = MeanIn[r];
    let rs = RstdIn[r];
    var s1 = 0.0;
    var s2 = 0.0;
    for (var j = 0u; j < p.cols; j++) {
      let xh = (X[base + j] - mu) * rs;
      let gd = G[j] * DY[base + j];
      s1 += gd;
      s2 += gd * xh;
    }
    let c = f32(p.cols);
    for (var j = 0u; j < p.cols; j++) {
      let xh = (X[base + j] - mu) * rs;
      let gd = G[j] * DY[base + j];
      DX[base + j] = (rs / c) * (c * gd - s1 - xh * s2);
    }
  }
}
