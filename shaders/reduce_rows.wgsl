// Sums over the rows of [rows, cols] matrices, per column: the bias gradient
// (col_sum_part: Out0[c] += sum_r X[r, c]) and the LayerNorm weight gradients
// (ln_weight_part: Out0[c] += sum_r DY[r, c] * xhat[r, c], Out1[c] += sum_r DY[r, c],
// xhat = (X - Mean[r]) * Rstd[r]).
//
// Two passes, no barriers: the rows are cut into `parts` runs of `chunk` rows.
//   pass 1 (col_sum_part, ln_weight_part): a 2-D grid, x over column blocks of
//          WG threads (striding beyond 65535 blocks), y over the parts; thread (c, q) sums rows
//          q*chunk .. min((q+1)*chunk, rows) of column c into Out0[q*cols + c]
//          (and Out1) of a [parts, cols] scratch buffer. Neighbouring threads
//          read neighbouring columns of one row (coalesced loads).
//   pass 2 (sum_parts, sum_parts2): one thread per column adds the parts in
//          order into the outputs.
// With one part (`direct` = 1) pass 1 adds straight into the outputs and pass
// 2 is not run. The host picks the cut per adapter (reduce-ops.ts): on a GPU
// many short runs (parallel threads), on a software adapter few long ones.
// Every sum runs in a fixed order for a given cut (deterministic).

const WG: u32 = 64u;

struct Params {
  rows: u32,
  cols: u32,
  chunk: u32,   // rows per part
  parts: u32,   // ceil(rows / chunk)
  direct: u32,  // 1: one part, pass 1 accumulates into the outputs
  _p0: u32,
  _p1: u32,
  _p2: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> X: array<f32>;
@group(0) @binding(2) var<storage, read> Mean: array<f32>;
@group(0) @binding(3) var<storage, read> Rstd: array<f32>;
@group(0) @binding(4) var<storage, read> DY: array<f32>;
@group(0) @binding(5) var<storage, read_write> Out0: array<f32>;
@group(0) @binding(6) var<storage, read_write> Out1: array<f32>;

// pass 2 inputs (same slots, other names): the [parts, cols] partial sums
@group(0) @binding(1) var<storage, read> Part0: array<f32>;
@group(0) @binding(2) var<storage, read> Part1: array<f32>;

// Out0[q*cols + c] = sum over part q's rows (or Out0[c] += the whole sum when direct).
@compute @workgroup_size(WG)
fn col_sum_part(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
                @builtin(num_workgroups) nwg: vec3<u32>) {
  let r0 = wid.y * p.chunk;
  let r1 = min(r0 + p.chunk, p.rows);
  for (var c = wid.x * WG + lid.x; c < p.cols; c += nwg.x * WG) {
    var s = 0.0;
    for (var o = r0 * p.cols + c; o < r1 * p.cols; o += p.cols) {
      s += X[o];
    }
    if (p.direct != 0u) {
      Out0[c] = Out0[c] + s;
    } else {
      Out0[wid.y * p.cols + c] = s;
    }
  }
}

@compute @workgroup_size(WG)
fn ln_weight_part(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
                  @builtin(num_workgroups) nwg: vec3<u32>) {
  let r0 = wid.y * p.chunk;
  let r1 = min(r0 + p.chunk, p.rows);
  for (var c = wid.x * WG + lid.x; c < p.cols; c += nwg.x * WG) {
    var sg = 0.0;
    var sb = 0.0;
    var o = r0 * p.cols + c;
    for (var r = r0; r < r1; r++) {
      let d = DY[o];
      sg += d * ((X[o] - Mean[r]) * Rstd[r]);
      sb += d;
      o += p.cols;
    }
    if (p.direct != 0u) {
      Out0[c] = Out0[c] + sg;
      Out1[c] = Out1[c] + sb;
    } else {
      Out0[wid.y * p.cols + c] = sg;
      Out1[wid.y * p.cols + c] = sb;
    }
  }
}

// Out0[c] += sum_q Part0[q*cols + c]; 1-D grid-stride over columns.
@compute @workgroup_size(WG)
fn sum_parts(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  for (var c = gid.x; c < p.cols; c += nwg.x * WG) {
    var s = 0.0;
    for (var o = c; o < p.parts * p.cols; o += p.cols) {
      s += Part0[o];
    }
    Out0[c] = Out0[c] + s;
  }
}

// sum_parts for two pairs: Out0 += parts of Part0, Out1 += parts of Part1.
@compute @workgroup_size(WG)
fn sum_parts2(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  for (var c = gid.x; c < p.cols; c += nwg.x * WG) {
    var s0 = 0.0;
    var s1 = 0.0;
    for (var o = c; o < p.parts * p.cols; o += p.cols) {
      s0 += Part0[o];
      s1 += Part1[o];
    }
    Out0[c] = Out0[c] + s0;
    Out1[c] = Out1[c] + s1;
  }
}
