// Register-tiled, shared-memory and naive matmuls (appended to matmul_common.wgsl).
//   matmul_reg4x4, matmul_reg8x4, matmul_reg4x8, matmul_reg8x8
//                 register-tiled, 4x4 .. 8x8 outputs per thread, vec4 loads, no
//                 barriers and no shared memory (fast on SwiftShader / CPUs).
//   matmul_shared shared-memory tiles of BK x (WG_Y*TM) and BK x (WG_X*TN), each
//                 thread TM x TN outputs, scalar loads with bounds checks: any
//                 sizes, any layout.
//   matmul_naive  one output per thread, any sizes (baseline and reference).

@compute @workgroup_size(WG_X, WG_Y, 1)
fn matmul_reg4x4(@builtin(global_invocation_id) gid: vec3<u32>) {
  let row0 = gid.y * 4u;
  let col0 = gid.x * 4u;
  if (row0 >= p.M || col0 >= p.N) {
    return;
  }
  let lda4 = p.lda / 4u;
  let ldb4 = p.ldb / 4u;
  let ao = regAOff(row0, lda4);
  let bo = regBOff(col0, ldb4);
  var c0 = vec4<f32>();
  var c1 = vec4<f32>();
  var c2 = vec4<f32>();
  var c3 = vec4<f32>();
  let K4 = (p.K + 3u) / 4u;
  for (var kb = 0u; kb < K4; kb++) {
    let a = regA(ao, kb, lda4);
    let b = regB(bo, kb, ldb4);
    c0 += b * a[0];
    c1 += b * a[1];
    c2 += b * a[2];
    c3 += b * a[3];
  }
  regStore(row0, col0, c0);
  regStore(row0 + 1u, col0, c1);
  regStore(row0 + 2u, col0, c2);
  regStore(row0 + 3u, col0, c3);
}

@compute @workgroup_size(WG_X, WG_Y, 1)
fn matmul_reg8x4(@builtin(global_invocation_id) gid: vec3<u32>) {
  let row0 = gid.y * 8u;
  let col0 = gid.x * 4u;
  if (row0 >= p.M || col0 >= p.N) {
    return;
  }
  let lda4 = p.lda / 4u;
  let ldb4 = p.ldb / 4u;
  let ao0 = regAOff(row0, lda4);
  let ao1 = regAOff(row0 + 4u, lda4);
  let bo = regBOff(col0, ldb4);
  var c0 = vec4<f32>();
  var c1 = vec4<f32>();
  var c2 = vec4<f32>();
  var c3 = vec4<f32>();
  var c4 = vec4<f32>();
  var c5 = vec4<f32>();
  var c6 = vec4<f32>();
  var c7 = vec4<f32>();
  let K4 = (p.K + 3u) / 4u;
  for (var kb = 0u; kb < K4; kb++) {
    let b = regB(bo, kb, ldb4);
    let a0 = regA(ao0, kb, lda4);
    c0 += b * a0[0];
    c1 += b * a0[1];
    c2 += b * a0[2];
    c3 += b * a0[3];
    let a1 = regA(ao1, kb, lda4);
    c4 += b * a1[0];
    c5 += b * a1[1];
    c6 += b * a1[2];
    c7 += b * a1[3];
  }
  regStore(row0, col0, c0);
  regStore(row0 + 1u, col0, c1);
  regStore(row0 + 2u, col0, c2);
  regStore(row0 + 3u, col0, c3);
  regStore(row0 + 4u, col0, c4);
  regStore(row0 + 5u, col0, c5);
  regStore(row0 + 6u, col0, c6);
  regStore(row0 + 7u, col0, c7);
}

@compute @workgroup_size(WG_X, WG_Y, 1)
fn matmul_reg4x8(@builtin(global_invocation_id) gid: vec3<u32>) {
  let row0 = gid.y * 4u;
  let col0 = gid.x * 8u;
  if (row0 >= p.M || col0 >= p.N) {
    return;
  }
  let lda4 = p.lda / 4u;
  let ldb4 = p.ldb / 4u;
  let ao = regAOff(row0, lda4);
  let bo0 = regBOff(col0, ldb4);
  let bo1 = regBOff(col0 + 4u, ldb4);
  var c00 = vec4<f32>();
  var c10 = vec4<f32>();
  var c20 = vec4<f32>();
  var c30 = vec4<f32>();
  var c01 = vec4<f32>();
  var c11 = vec4<f32>();
  var c21 = vec4<f32>();
  var c31 = vec4<f32>();
  let K4 = (p.K + 3u) / 4u;
  for (var kb = 0u; kb < K4; kb++) {
    let a = regA(ao, kb, lda4);
    let b0 = regB(bo0, kb, ldb4);
    c00 += b0 * a[0];
    c10 += b0 * a[1];
    c20 += b0 * a[2];
    c30 += b0 * a[3];
    let b1 = regB(bo1, kb, ldb4);
    c01 += b1 * a[0];
    c11 += b1 * a[1];
    c21 += b1 * a[2];
    c31 += b1 * a[3];
  }
  regStore(row0, col0, c00);
  regStore(row0 + 1u, col0, c10);
  regStore(row0 + 2u, col0, c20);
  regStore(row0 + 3u, col0, c30);
  regStore(row0, col0 + 4u, c01);
  regStore(row0 + 1u, col0 + 4u, c11);
  regStore(row0 + 2u, col0 + 4u, c21);
  regStore(row0 + 3u, col0 + 4u, c31);
}

@compute @workgroup_size(WG_X, WG_Y, 1)
fn matmul_reg8x8(@builtin(global_invocation_id) gid: vec3<u32>) {
  let row0 = gid.y * 8u;
  let col0 = gid.x * 8u;
  if (row0 >= p.M || col0 >= p.N) {
    return;
  }
  let lda4 = p.lda / 4u;
  let ldb4 = p.ldb / 4u;
  let ao0 = regAOff(row0, lda4);
  let ao1 = regAOff(row0 + 4u, lda4);
  let bo0 = regBOff(col0, ldb4);
  let bo1 = regBOff(col0 + 4u, ldb4);
  var c00 = vec4<f32>();
  var c10 = vec4<f32>();
  var c20 = vec4<f32>();
  var c30 = vec4<f32>();
  var c40 = vec4<f32>();
  var c50 = vec4<f32>();
  var c60 = vec4<f32>();
  var c70 = vec4<f32>();
  var c01 = vec4<f32>();
  var c11 = vec4<f32>();
  var c21 = vec4<f32>();
  var c31 = vec4<f32>();
  var c41 = vec4<f32>();
  var c51 = vec4<f32>();
  var c61 = vec4<f32>();
  var c71 = vec4<f32>();
  let K4 = (p.K + 3u) / 4u;
  for (var kb = 0u; kb < K4; kb++) {
    let a0 = regA(ao0, kb, lda4);
    let a1 = regA(ao1, kb, lda4);
    let b0 = regB(bo0, kb, ldb4);
    c00 += b0 * a0[0];
    c10 += b0 * a0[1];
    c20 += b0 * a0[2];
    c30 += b0 * a0[3];
    c40 += b0 * a1[0];
    c50 += b0 * a1[1];
    c60 += b0 * a1[2];
    c70 += b0 * a1[3];
    let b1 = regB(bo1, kb, ldb4);
    c01 += b1 * a0[0];
    c11 += b1 * a0[1];
    c21 += b1 * a0[2];
    c31 += b1 * a0[3];
    c41 += b1 * a1[0];
    c51 += b1 * a1[1];
    c61 += b1 * a1[2];
    c71 += b1 * a1[3];
  }
  regStore(row0, col0, c00);
  regStore(row0 + 1u, col0, c10);
  regStore(row0 + 2u, col0, c20);
  regStore(row0 + 3u, col0, c30);
  regStore(row0 + 4u, col0, c40);
  regStore(row0 + 5u, col0, c50);
  regStore(row0 + 6u, col0, c60);
  regStore(row0 + 7u, col0, c70);
  regStore(row0, col0 + 4u, c01);
  regStore(row0 + 1u, col0 + 4u, c11);
  regStore(row0 + 2u, col0 + 4u, c21);
  regStore(row0 + 3u, col0 + 4u, c31);
  regStore(row0 + 4u, col0 + 4u, c41);
  regStore(row0 + 5u, col0 + 4u, c51);
  regStore(row0 + 6u, col0 + 4u, c61);
  regStore(row0 + 7u, col0 + 4u, c71);
}

const BM: u32 = WG_Y * TM;
const BN: u32 = WG_X * TN;
const NT: u32 = WG_X * WG_Y;
var<workgroup> As: array<f32, BK * BM>; // [BK][BM]
var<workgroup> Bs: array<f32, BK * BN>; // [BK][BN]

@compute @workgroup_size(WG_X, WG_Y, 1)
fn matmul_shared(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
  let tid = lid.y * WG_X + lid.x;
  let rowBase = wid.y * BM;
  let colBase = wid.x * BN;
  // This thread's outputs: rows rowBase + lid.y + i*WG_Y, cols colBase + lid.x + j*WG_X
  // (interleaved, so shared-memory reads and global stores are contiguous across threads).
  var acc: array<f32, TM * TN>;
  let kTiles = (p.K + BK - 1u) / BK;
  for (var kt = 0u; kt < kTiles; kt++) {
    let k0 = kt * BK;
    for (var e = tid; e < BK * BM; e += NT) {
      // Walk the stored layout's contiguous axis across neighbouring threads.
      var kk: u32;
      var m: u32;
      if (TRANS_A) {
        kk = e / BM;
        m = e % BM;
      } else {
        m = e / BK;
        kk = e % BK;
      }
      As[kk * BM + m] = loadA(rowBase + m, k0 + kk);
    }
    for (var e = tid; e < BK * BN; e += NT) {
      var kk: u32;
      var n: u32;
      if (TRANS_B) {
        n = e / BK;
        kk = e % BK;
      } else {
        kk = e / BN;
        n = e % BN;
      }
      Bs[kk * BN + n] = loadB(k0 + kk, colBase + n);
    }
    workgroupBarrier();
    for (var kk = 0u; kk < BK; kk++) {
      var a: array<f32, TM>;
      for (var i = 0u; i < TM; i++) {
        a[i] = As[kk * BM + lid.y + i * WG_Y];
      }
      for (var j = 0u; j < TN; j++) {
        let bv = Bs[kk * BN + lid.x + j * WG_X];
        for (var i = 0u; i < TM; i++) {
          acc[i * TN + j] = fma(a[i], bv, acc[i * TN + j]);
        }
      }
    }
    workgroupBarrier();
  }
  for (var i = 0u; i < TM; i++) {
    for (var j = 0u; j < TN; j++) {
      storeC(rowBase + lid.y + i * WG_Y, colBase + lid.x + j * WG_X, acc[i * TN + j]);
    }
  }
}

@compute @workgroup_size(WG_X, WG_Y, 1)
fn matmul_naive(@builtin(global_invocation_id) gid: vec3<u32>) {
  let m = gid.y;
  let n = gid.x;
  if (m >= p.M || n >= p.N) {
    return;
  }
  var s = 0.0;
  for (var k = 0u; k < p.K; k++) {
    s = fma(loadA(m, k), loadB(k, n), s);
  }
  storeC(m, n, s);
}
