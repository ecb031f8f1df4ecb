// Matrix multiply, C[M,N] (+)= op(A)[M,K] · op(B)[K,N], row-major: what every
// matmul family shares. The host builds each family's module as this file
// followed by the family's file (matmul.wgsl, matmul_tiled.wgsl,
// matmul_subgroup.wgsl), after the specialisation constants:
//   const TRANS_A: bool;  const TRANS_B: bool;   TRANS_A: A is stored [K, M]; TRANS_B: B is stored [N, K]
//   const TM: u32;  const TN: u32;               outputs per thread (rows, columns)
//   const WG_X: u32;  const WG_Y: u32;           workgroup size (columns, rows of threads)
//   const BK: u32;                               k-tile depth (workgroup-memory families)
//   const SG: u32;                               subgroup size (matmul_subgroup.wgsl only)
//   const RAGGED_A: bool;  const RAGGED_B: bool; the vec4 families: the operand is ragged (below)
// p.acc != 0: C += result.
//
// The vec4 families (matmul_reg*, matmul_tiled, matmul_sg*) read an operand
// whose stored rows are a multiple of 4 floats, with K a multiple of 4, with
// vec4 loads. Any other operand is ragged (the host sets RAGGED_A / RAGGED_B):
// the same kernels read it four floats at a time by scalar loads, bounds-checked
// (raggedA, raggedB): zero past the end of a stored row and past the last stored row, so K runs in blocks of 4 whatever it is and no padded copy is
// made. M and N may be anything (loads are clamped or zeroed, stores are checked).

struct Params {
  M: u32,
  N: u32,
  K: u32,      // shared dimension
  lda: u32,    // row stride of A as stored, in floats (= its columns)
  ldb: u32,    // row stride of B as stored, in floats (= its columns)
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
// The vec4 families' scalar views of A and B (the same buffers again), for ragged operands.
@group(0) @binding(4) var<storage, read> A1: array<f32>;
@group(0) @binding(5) var<storage, read> B1: array<f32>;

// ---------------------------------------------------------------- matmul_reg
// Stored A at row r, columns c .. c+3 (c a multiple of 4), zero outside the
// stored matrix: the vec4 of a ragged operand, by four scalar loads from the
// scalar view A1 of the same buffer (an entry point may use one view per
// binding, so the vec4 kinds bind each operand twice). An index past the
// buffer is clamped by WebGPU's robust access; select drops its value.
fn raggedA(r: u32, c: u32) -> vec4<f32> {
  let o = r * p.lda + c;
  let n = select(0u, p.lda - c, r < p.arows && c < p.lda); // valid floats of the four
  return select(vec4<f32>(), vec4<f32>(A1[o], A1[o + 1u], A1[o + 2u], A1[o + 3u]), LANES < vec4<u32>(n));
}

fn raggedB(r: u32, c: u32) -> vec4<f32> {
  let o = r * p.ldb + c;
  let n = select(0u, p.ldb - c, r < p.brows && c < p.ldb);
  return select(vec4<f32>(), vec4<f32>(B1[o], B1[o + 1u], B1[o + 2u], B1[o + 3u]), LANES < vec4<u32>(n));
}

const LANES = vec4<u32>(0u, 1u, 2u, 3u);

// Four floats of A1 / B1 from offset o, unchecked (the callers mask them).
fn a1x4(o: u32) -> vec4<f32> {
  return vec4<f32>(A1[o], A1[o + 1u], A1[o + 2u], A1[o + 3u]);
}

fn b1x4(o: u32) -> vec4<f32> {
  return vec4<f32>(B1[o], B1[o + 1u], B1[o + 2u], B1[o + 3u]);
}

// The register kernels' ragged blocks: k-block kb holds min(K - 4kb, 4) valid
// k (every block but the last: 4), and a vec4 column c .. c+3 of a stored row
// of `ld` floats holds min(ld - c, 4) valid floats.
fn kMask(kb: u32) -> vec4<bool> {
  return LANES < vec4<u32>(p.K - 4u * kb);
}

fn colMask(ld: u32, c: u32) -> vec4<bool> {
  return LANES < vec4<u32>(select(0u, ld - c, c < ld));
}

// vec4 columns of stored A and B (the last one partly past the row when ragged).
fn cols4A() -> u32 {
  return (p.lda + 3u) / 4u;
}

fn cols4B() -> u32 {
  return (p.ldb + 3u) / 4u;
}

// Written out by hand (4x4 blocks as mat4x4, no private arrays, no inner loops):
// software rasterisers such as SwiftShader's Subzero do not unroll loops or
// promote arrays to registers, so the straight-line form is what runs fast.
//
// A 4x4 block of A, a[i] = A[row i, k..k+3] (rows of the block as columns of a mat4x4),
// and of B, b[kk] = B[k+kk, col..col+3]. Then acc[i] += b * a[i]  (= sum_kk b[kk] * a[i][kk]).

// A block t (rows row0+4t .. +3) at k-block kb. `ao` holds the block's four row
// offsets (!TRANS_A; in vec4, or in floats when RAGGED_A) or, in .x, its vec4
// column (TRANS_A).
fn regA(ao: vec4<u32>, kb: u32, lda4: u32) -> mat4x4<f32> {
  if (TRANS_A) {
    if (RAGGED_A) {
      // Rows k = 4kb .. 4kb+3 (those at or past K zero), columns 4*ao.x .. +3 (those past the row zero).
      let c = 4u * ao.x;
      let base = 4u * kb * p.lda + c;
      let cm = colMask(p.lda, c);
      let km = kMask(kb);
      return transpose(mat4x4<f32>(
        select(vec4<f32>(), a1x4(base), cm),
        select(vec4<f32>(), a1x4(base + p.lda), cm & vec4<bool>(km.y)),
        select(vec4<f32>(), a1x4(base + 2u * p.lda), cm & vec4<bool>(km.z)),
        select(vec4<f32>(), a1x4(base + 3u * p.lda), cm & vec4<bool>(km.w)),
      ));
    }
    let base = 4u * kb * lda4 + ao.x;
    return transpose(mat4x4<f32>(A4[base], A4[base + lda4], A4[base + 2u * lda4], A4[base + 3u * lda4]));
  }
  if (RAGGED_A) {
    let k = 4u * kb;
    let km = kMask(kb);
    let z = vec4<f32>();
    return mat4x4<f32>(select(z, a1x4(ao.x + k), km), select(z, a1x4(ao.y + k), km), select(z, a1x4(ao.z + k), km), select(z, a1x4(ao.w + k), km));
  }
  return mat4x4<f32>(A4[ao.x + kb], A4[ao.y + kb], A4[ao.z + kb], A4[ao.w + kb]);
}

// B block (columns col0+4t .. +3) at k-block kb, as b[kk] = B[4kb+kk, cols].
fn regB(bo: vec4<u32>, kb: u32, ldb4: u32) -> mat4x4<f32> {
  if (TRANS_B) {
    if (RAGGED_B) {
      let k = 4u * kb;
      let km = kMask(kb);
      let z = vec4<f32>();
      return transpose(mat4x4<f32>(select(z, b1x4(bo.x + k), km), select(z, b1x4(bo.y + k), km), select(z, b1x4(bo.z + k), km), select(z, b1x4(bo.w + k), km)));
    }
    return transpose(mat4x4<f32>(B4[bo.x + kb], B4[bo.y + kb], B4[bo.z + kb], B4[bo.w + kb]));
  }
  if (RAGGED_B) {
    let c = 4u * bo.x;
    let base = 4u * kb * p.ldb + c;
    let cm = colMask(p.ldb, c);
    let km = kMask(kb);
    return mat4x4<f32>(
      select(vec4<f32>(), b1x4(base), cm),
      select(vec4<f32>(), b1x4(base + p.ldb), cm & vec4<bool>(km.y)),
      select(vec4<f32>(), b1x4(base + 2u * p.ldb), cm & vec4<bool>(km.z)),
      select(vec4<f32>(), b1x4(base + 3u * p.ldb), cm & vec4<bool>(km.w)),
    );
  }
  let base = 4u * kb * ldb4 + bo.x;
  return mat4x4<f32>(B4[base], B4[base + ldb4], B4[base + 2u * ldb4], B4[base + 3u * ldb4]);
}

// Offsets of A block t (rows row0 .. row0+3), clamped to the stored matrix:
// clamped rows only feed outputs that are never stored.
fn regAOff(row0: u32, lda4: u32) -> vec4<u32> {
  if (TRANS_A) {
    return vec4<u32>(min(row0 / 4u, cols4A() - 1u), 0u, 0u, 0u);
  }
  let last = p.arows - 1u;
  let rows = vec4<u32>(min(row0, last), min(row0 + 1u, last), min(row0 + 2u, last), min(row0 + 3u, last));
  if (RAGGED_A) {
    return rows * p.lda;
  }
  return rows * lda4;
}

fn regBOff(col0: u32, ldb4: u32) -> vec4<u32> {
  if (TRANS_B) {
    let last = p.brows - 1u;
    let rows = vec4<u32>(min(col0, last), min(col0 + 1u, last), min(col0 + 2u, last), min(col0 + 3u, last));
    if (RAGGED_B) {
      return rows * p.ldb;
    }
    return rows * ldb4;
  }
  return vec4<u32>(min(col0 / 4u, cols4B() - 1u), 0u, 0u, 0u);
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
