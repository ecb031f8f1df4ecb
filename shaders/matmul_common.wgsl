// Matrix multiply, C[M,N] (+)= op(A)[M,K] · op(B)[K,N], row-major: what every
// matmul family shares. The host builds each family's module as this file
// followed by the family's file (matmul.wgsl, matmul_tiled.wgsl,
// matmul_subgroup.wgsl), after the specialisation constants:
//   const TRANS_A: bool;  const TRANS_B: bool;   TRANS_A: A is stored [K, M]; TRANS_B: B is stored [N, K]
//   const TM: u32;  const TN: u32;               outputs per thread (rows, columns)
//   const WG_X: u32;  const WG_Y: u32;           workgroup size (columns, rows of threads)
//   const BK: u32;                               k-tile depth (workgroup-memory families)
//   const SG: u32;                               subgroup size (matmul_subgroup.wgsl only)
// p.acc != 0: C += result.
//
// The vec4 families (matmul_reg*, matmul_tiled, matmul_sg*) need vec4-aligned
// operands: the host pads any operand whose rows are not a multiple of 4
// floats, and pads K to a multiple of 4 with zeros. M and N may be anything
// (loads are clamped or zeroed, stores are checked).

struct Params {
  M: u32,
  N: u32,
  K: u32,      // shared dimension (matmul_reg*: padded to a multiple of 4)
  lda: u32,    // row stride of A as stored, in floats
  ldb: u32,    // row stride of B as stored, in floats
  arows: u32,  // rows of A as stored (for clamping loads)
  brows: u32,  // rows of B as stored
  acc: u32,    // 1: C += A·B, 0: C = A·B (a uniform branch at the stores only)
}

@group(0) @binding(0) var<uniform> p: Params;
// The same buffers seen as vec4 (matmul_reg*) or as scalars (the others).
@group(0) @binding(1) var<storage, read> A4: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> B4: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> A: array<f32>;
@group(0) @binding(2) var<storage, read> B: array<f32>;
@group(0) @binding(3) var<storage, read_write> C: array<f32>;

// ---------------------------------------------------------------- matmul_reg
// Written out by hand (4x4 blocks as mat4x4, no private arrays, no inner loops):
// software rasterisers such as SwiftShader's Subzero do not unroll loops or
// promote arrays to registers, so the straight-line form is what runs fast.
//
// A 4x4 block of A, a[i] = A[row i, k..k+3] (rows of the block as columns of a mat4x4),
// and of B, b[kk] = B[k+kk, col..col+3]. Then acc[i] += b * a[i]  (= sum_kk b[kk] * a[i][kk]).

// A block t (rows row0+4t .. +3) at k-block kb. `ao` holds the block's four row
// offsets (!TRANS_A) or, in .x, its vec4 column (TRANS_A).
fn regA(ao: vec4<u32>, kb: u32, lda4: u32) -> mat4x4<f32> {
  if (TRANS_A) {
    let base = 4u * kb * lda4 + ao.x;
    return transpose(mat4x4<f32>(A4[base], A4[base + lda4], A4[base + 2u * lda4], A4[base + 3u * lda4]));
  }
  return mat4x4<f32>(A4[ao.x + kb], A4[ao.y + kb], A4[ao.z + kb], A4[ao.w + kb]);
}

// B block (columns col0+4t .. +3) at k-block kb, as b[kk] = B[4kb+kk, cols].
fn regB(bo: vec4<u32>, kb: u32, ldb4: u32) -> mat4x4<f32> {
  if (TRANS_B) {
    return transpose(mat4x4<f32>(B4[bo.x + kb], B4[bo.y + kb], B4[bo.z + kb], B4[bo.w + kb]));
  }
  let base = 4u * kb * ldb4 + bo.x;
  return mat4x4<f32>(B4[base], B4[base + ldb4], B4[base + 2u * ldb4], B4[base + 3u * ldb4]);
}

// Offsets of A block t (rows row0 .. row0+3), clamped to the stored matrix:
// clamped rows only feed outputs that are never stored.
fn regAOff(row0: u32, lda4: u32) -> vec4<u32> {
  if (TRANS_A) {
    return vec4<u32>(min(row0 / 4u, lda4 - 1u), 0u, 0u, 0u);
  }
  let last = p.arows - 1u;
  return vec4<u32>(min(row0, last), min(row0 + 1u, last), min(row0 + 2u, last), min(row0 + 3u, last)) * lda4;
}

fn regBOff(col0: u32, ldb4: u32) -> vec4<u32> {
  if (TRANS_B) {
    let last = p.brows - 1u;
    return vec4<u32>(min(col0, last), min(col0 + 1u, last), min(col0 + 2u, last), min(col0 + 3u, last)) * ldb4;
  }
  return vec4<u32>(min(col0 / 4u, ldb4 - 1u), 0u, 0u, 0u);
}

// Stores one row of four outputs (checked against M and N).
fn regStore(r: u32, c0: u32, v: vec4<f32>) {
  if (r >= p.M) {
    return;
  }
  let o = r * p.N + c0;
  if (c0 + 3u < p.N) {
    if (p.acc != 0u) {
      C[o] += v.x;
      C[o + 1u] += v.y;
      C[o + 2u] += v.z;
      C[o + 3u] += v.w;
    } else {
      C[o] = v.x;
      C[o + 1u] = v.y;
      C[o + 2u] = v.z;
      C[o + 3u] = v.w;
    }
    return;
  }
  for (var j = 0u; j < 4u; j++) {
    if (c0 + j < p.N) {
      if (p.acc != 0u) {
        C[o + j] += v[j];
      } else {
        C[o + j] = v[j];
      }
    }
  }
}

// Scalar operand loads with bounds checks (out of range reads as 0).
fn loadA(m: u32, k: u32) -> f32 {
  if (m >= p.M || k >= p.K) {
    return 0.0;
  }
  if (TRANS_A) {
    return A[k * p.lda + m];
  }
  return A[m * p.lda + k];
}

fn loadB(k: u32, n: u32) -> f32 {
  if (k >= p.K || n >= p.N) {
    return 0.0;
  }
  if (TRANS_B) {
    return B[n * p.ldb + k];
  }
  return B[k * p.ldb + n];
}

fn storeC(m: u32, n: u32, v: f32) {
  if (m < p.M && n < p.N) {
    let o = m * p.N + n;
    if (p.acc != 0u) {
      C[o] = C[o] + v;
    } else {
      C[o] = v;
    }
  }
}
