// Workgroup-memory tiled matmul with vec4 loads, for real GPUs (appended to
// matmul_common.wgsl).
//
//   matmul_tiled  one workgroup computes a TBM x TBN block of C (TBM = WG_Y*TM,
//                 TBN = WG_X*TN); each thread TM x TN outputs (multiples of 4)
//                 held as vec4 registers. The A and B tiles of BK values of k
//                 go through var<workgroup> as vec4 (k-major: 4 rows, or 4
//                 columns, per vec4), loaded from global memory with vec4 loads;
//                 the next tiles' loads are issued into registers before the
//                 current tiles are used, so memory latency hides behind the
//                 FMAs. Two barriers per k-tile.
//
// A thread's rows are 4*(ty + ii*WG_Y) + r and its columns 4*(tx + jj*WG_X) + c
// (ii < TM/4, jj < TN/4, r, c < 4): neighbouring threads read neighbouring vec4
// of the B tile and store neighbouring 16-byte runs of C.
//
// The host checks that TBM*BK/4 and TBN*BK/4 are multiples of WG_X*WG_Y (every
// thread loads the same number of vec4 per tile) and that the tiles fit the
// device's workgroup storage.

const TBM: u32 = WG_Y * TM;
const TBN: u32 = WG_X * TN;
const TNT: u32 = WG_X * WG_Y;
const TBM4: u32 = TBM / 4u;
const TBN4: u32 = TBN / 4u;
const BK4: u32 = BK / 4u;
const LA: u32 = TBM * BK4 / TNT; // vec4 of the A tile each thread loads
const LB: u32 = TBN * BK4 / TNT;

var<workgroup> tA: array<vec4<f32>, TBM4 * BK>; // [BK][TBM/4]: tA[k*TBM4 + m/4][m%4] = A[m, k]
var<workgroup> tB: array<vec4<f32>, TBN4 * BK>; // [BK][TBN/4]: tB[k*TBN4 + n/4][n%4] = B[k, n]

// The e-th vec4 of the A tile at rows rowBase.., k-tile k0, in stored order
// (zero outside the stored matrix and beyond K).
fn tiledLoadA(rowBase: u32, k0: u32, e: u32) -> vec4<f32> {
  let lda4 = p.lda / 4u;
  if (TRANS_A) {
    // Stored [K, M]: tile row k, vec4 column m4 (4 consecutive m).
    let k = k0 + e / TBM4;
    let m4 = rowBase / 4u + e % TBM4;
    if (k >= p.K || m4 >= cols4A()) {
      return vec4<f32>();
    }
    if (RAGGED_A) {
      return raggedA(k, 4u * m4);
    }
    return A4[k * lda4 + m4];
  }
  // Stored [M, K]: tile row m, vec4 column k4 (4 consecutive k).
  let m = rowBase + e / BK4;
  let k4 = k0 / 4u + e % BK4;
  if (m >= p.arows || 4u * k4 >= p.K) {
    return vec4<f32>();
  }
  if (RAGGED_A) {
    return raggedA(m, 4u * k4);
  }
  return A4[m * lda4 + k4];
}

fn tiledLoadB(colBase: u32, k0: u32, e: u32) -> vec4<f32> {
  let ldb4 = p.ldb / 4u;
  if (TRANS_B) {
    // Stored [N, K]: tile row n, vec4 column k4.
    let n = colBase + e / BK4;
    let k4 = k0 / 4u + e % BK4;
    if (n >= p.brows || 4u * k4 >= p.K) {
      return vec4<f32>();
    }
    if (RAGGED_B) {
      return raggedB(n, 4u * k4);
    }
    return B4[n * ldb4 + k4];
  }
  // Stored [K, N]: tile row k, vec4 column n4.
  let k = k0 + e / TBN4;
  let n4 = colBase / 4u + e % TBN4;
  if (k >= p.K || n4 >= cols4B()) {
    return vec4<f32>();
  }
  if (RAGGED_B) {
    return raggedB(k, 4u * n4);
  }
  return B4[k * ldb4 + n4];
}

// Puts the e-th loaded vec4 of the A tile into tA (k-major).
fn tiledStoreA(e: u32, v: vec4<f32>) {
  if (TRANS_A) {
    tA[e] = v; // already [k][m4]
    return;
  }
  // v = A[m, k..k+3]: four k rows, one lane of the vec4 holding m.
  let m = e / BK4;
  let at = 4u * (e % BK4) * TBM4 + m / 4u;
  let lane = m % 4u;
  tA[at][lane] = v.x;
  tA[at + TBM4][lane] = v.y;
  tA[at + 2u * TBM4][lane] = v.z;
  tA[at + 3u * TBM4][lane] = v.w;
}

fn tiledStoreB(e: u32, v: vec4<f32>) {
  if (!TRANS_B) {
    tB[e] = v; // already [k][n4]
    return;
  }
  // v = B[k..k+3, n] (stored as row n of Bᵀ).
  let n = e / BK4;
  let at = 4u * (e % BK4) * TBN4 + n / 4u;
  let lane = n % 4u;
  tB[at][lane] = v.x;
  tB[at + TBN4][lane] = v.y;
  tB[at + 2u * TBN4][lane] = v.z;
  tB[at + 3u * TBN4][lane] = v.w;
}

@compute @workgroup_size(WG_X, WG_Y, 1)
fn matmul_tiled(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
  let tid = lid.y * WG_X + lid.x;
  let rowBase = wid.y * TBM;
  let colBase = wid.x * TBN;
  // acc[(4*ii + r) * TN/4 + jj]: row 4*(ty + ii*WG_Y) + r, columns 4*(tx + jj*WG_X) .. +3.
  var acc: array<vec4<f32>, TM * TN / 4u>;
  var pa: array<vec4<f32>, LA>;
  var pb: array<vec4<f32>, LB>;
  for (var i = 0u; i < LA; i++) {
    pa[i] = tiledLoadA(rowBase, 0u, tid + i * TNT);
  }
  for (var i = 0u; i < LB; i++) {
    pb[i] = tiledLoadB(colBase, 0u, tid + i * TNT);
  }
  let kTiles = (p.K + BK - 1u) / BK;
  for (var kt = 0u; kt < kTiles; kt++) {
    workgroupBarrier(); // every thread is done reading the previous tiles
    for (var i = 0u; i < LA; i++) {
      tiledStoreA(tid + i * TNT, pa[i]);
    }
    for (var i = 0u; i < LB; i++) {
      tiledStoreB(tid + i * TNT, pb[i]);
    }
    workgroupBarrier();
    // The next tiles' loads, in flight while this tile is used (zeros past K).
    let k1 = (kt + 1u) * BK;
    for (var i = 0u; i < LA; i++) {
      pa[i] = tiledLoadA(rowBase, k1, tid + i * TNT);
    }
    for (var i = 0u; i < LB; i++) {
      pb[i] = tiledLoadB(colBase, k1, tid + i * TNT);
    }
    for (var k = 0u; k < BK; k++) {
      var a: array<vec4<f32>, TM / 4u>;
      for (var ii = 0u; ii < TM / 4u; ii++) {
        a[ii] = tA[k * TBM4 + lid.y + ii * WG_Y];
      }
      for (var jj = 0u; jj < TN / 4u; jj++) {
        let b = tB[k * TBN4 + lid.x + jj * WG_X];
        for (var ii = 0u; ii < TM / 4u; ii++) {
          let o = 4u * ii * (TN / 4u) + jj;
          acc[o] = fma(vec4<f32>(a[ii].x), b, acc[o]);
          acc[o + TN / 4u] = fma(vec4<f32>(a[ii].y), b, acc[o + TN / 4u]);
          acc[o + 2u * (TN / 4u)] = fma(vec4<f32>(a[ii].z), b, acc[o + 2u * (TN / 4u)]);
          acc[o + 3u * (TN / 4u)] = fma(vec4<f32>(a[ii].w), b, acc[o + 3u * (TN / 4u)]);
        }
      }
    }
  }
  for (var ii = 0u; ii < TM / 4u; ii++) {
    for (var r = 0u; r < 4u; r++) {
      let row = rowBase + 4u * (lid.y + ii * WG_Y) + r;
      for (var jj = 0u; jj < TN / 4u; jj++) {
        regStore(row, colBase + 4u * (lid.x + jj * WG_X), acc[(4u * ii + r) * (TN / 4u) + jj]);
      }
    }
  }
}
