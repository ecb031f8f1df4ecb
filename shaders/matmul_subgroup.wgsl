// Register-tiled matmul whose subgroup shares the A block, for adapters with
// the `subgroups` feature (appended to matmul_common.wgsl; the host hoists the
// directives below above the whole module).
enable subgroups;
diagnostic(off, subgroup_uniformity);

//   matmul_sg8x4, matmul_sg8x8
//                 a workgroup is one subgroup of SG lanes (SG: the adapter's
//                 subgroup size, WG_X = SG, WG_Y = 1) computing 8 rows x TN*SG
//                 columns of C; each lane 8 x TN outputs (TN = 4 or 8). Every
//                 lane needs the same 8 x 4 block of A per k-block: each lane
//                 loads one (SG = 4: two) of its eight vec4 and the others come
//                 from subgroupBroadcast, so A is read once per subgroup rather
//                 than once per lane. B is read as in matmul_reg* (vec4 loads,
//                 consecutive lanes on consecutive columns).
//
// The sharing needs the workgroup to be exactly one full subgroup of SG lanes.
// Where the driver makes it otherwise (another subgroup size, a partial
// subgroup), every lane loads the whole A block itself: slower, same result.
// No lane returns early (a broadcast must find every lane): loads are clamped,
// stores are checked.

// The j-th vec4 (j < 8) of the A block at rows row0.. and k-block kb, clamped
// to the stored matrix. !TRANS_A: row row0 + j, k = 4kb..4kb+3.
// TRANS_A: k = 4kb + j%4, rows row0 + 4*(j/4) .. +3.
fn sgFragA(row0: u32, j: u32, kb: u32, lda4: u32) -> vec4<f32> {
  if (TRANS_A) {
    let k = 4u * kb + j % 4u;
    let m4 = min(row0 / 4u + j / 4u, cols4A() - 1u);
    if (RAGGED_A) {
      return raggedA(k, 4u * m4);
    }
    return A4[k * lda4 + m4];
  }
  let r = min(row0 + j, p.arows - 1u);
  if (RAGGED_A) {
    return raggedA(r, 4u * kb);
  }
  return A4[r * lda4 + kb];
}

// Four fragments (rows 0..3 or 4..7 of the block) as a mat4x4 laid out as regA lays one out.
fn sgBlockA(f0: vec4<f32>, f1: vec4<f32>, f2: vec4<f32>, f3: vec4<f32>) -> mat4x4<f32> {
  if (TRANS_A) {
    return transpose(mat4x4<f32>(f0, f1, f2, f3));
  }
  return mat4x4<f32>(f0, f1, f2, f3);
}

struct SgA {
  a0: mat4x4<f32>,
  a1: mat4x4<f32>,
}

// The 8 x 4 A block at k-block kb: shared through the subgroup when `whole`
// (the workgroup is one full subgroup), else all loaded by this lane.
fn sgLoadA(whole: bool, sid: u32, row0: u32, kb: u32, lda4: u32) -> SgA {
  if (!whole) {
    return SgA(
      sgBlockA(sgFragA(row0, 0u, kb, lda4), sgFragA(row0, 1u, kb, lda4), sgFragA(row0, 2u, kb, lda4), sgFragA(row0, 3u, kb, lda4)),
      sgBlockA(sgFragA(row0, 4u, kb, lda4), sgFragA(row0, 5u, kb, lda4), sgFragA(row0, 6u, kb, lda4), sgFragA(row0, 7u, kb, lda4)),
    );
  }
  let lo = sgFragA(row0, sid % 8u, kb, lda4);
  if (SG >= 8u) {
    return SgA(
      sgBlockA(subgroupBroadcast(lo, 0u), subgroupBroadcast(lo, 1u), subgroupBroadcast(lo, 2u), subgroupBroadcast(lo, 3u)),
      sgBlockA(subgroupBroadcast(lo, 4u), subgroupBroadcast(lo, 5u), subgroupBroadcast(lo, 6u), subgroupBroadcast(lo, 7u)),
    );
  }
  // SG = 4: lane l holds fragments l and l + 4.
  let hi = sgFragA(row0, sid + 4u, kb, lda4);
  return SgA(
    sgBlockA(subgroupBroadcast(lo, 0u), subgroupBroadcast(lo, 1u), subgroupBroadcast(lo, 2u), subgroupBroadcast(lo, 3u)),
    sgBlockA(subgroupBroadcast(hi, 0u), subgroupBroadcast(hi, 1u), subgroupBroadcast(hi, 2u), subgroupBroadcast(hi, 3u)),
  );
}

// True when this workgroup is one full subgroup of SG lanes (the sharing's premise).
fn sgWhole(size: u32) -> bool {
  return size == SG && WG_X * WG_Y == SG && subgroupAdd(1u) == SG;
}

@compute @workgroup_size(WG_X, WG_Y, 1)
fn matmul_sg8x4(
  @builtin(local_invocation_index) li: u32,
  @builtin(workgroup_id) wid: vec3<u32>,
  @builtin(subgroup_invocation_id) sid: u32,
  @builtin(subgroup_size) size: u32,
) {
  let whole = sgWhole(size);
  let lane = select(li, sid, whole);
  let row0 = wid.y * 8u;
  let col0 = (wid.x * SG + lane) * 4u;
  let lda4 = p.lda / 4u;
  let ldb4 = p.ldb / 4u;
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
    let a = sgLoadA(whole, sid, row0, kb, lda4);
    let b = regB(bo, kb, ldb4);
    c0 += b * a.a0[0];
    c1 += b * a.a0[1];
    c2 += b * a.a0[2];
    c3 += b * a.a0[3];
    c4 += b * a.a1[0];
    c5 += b * a.a1[1];
    c6 += b * a.a1[2];
    c7 += b * a.a1[3];
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
fn matmul_sg8x8(
  @builtin(local_invocation_index) li: u32,
  @builtin(workgroup_id) wid: vec3<u32>,
  @builtin(subgroup_invocation_id) sid: u32,
  @builtin(subgroup_size) size: u32,
) {
  let whole = sgWhole(size);
  let lane = select(li, sid, whole);
  let row0 = wid.y * 8u;
  // Columns: lane's first vec4 at (block, lane), its second SG vec4 further,
  // so consecutive lanes load consecutive columns in both halves.
  let col0 = (wid.x * 2u * SG + lane) * 4u;
  let col1 = col0 + 4u * SG;
  let lda4 = p.lda / 4u;
  let ldb4 = p.ldb / 4u;
  let bo0 = regBOff(col0, ldb4);
  let bo1 = regBOff(col1, ldb4);
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
    let a = sgLoadA(whole, sid, row0, kb, lda4);
    let b0 = regB(bo0, kb, ldb4);
    c00 += b0 * a.a0[0];
    c10 += b0 * a.a0[1];
    c20 += b0 * a.a0[2];
    c30 += b0 * a.a0[3];
    c40 += b0 * a.a1[0];
    c50 += b0 * a.a1[1];
    c60 += b0 * a.a1[2];
    c70 += b0 * a.a1[3];
    let b1 = regB(bo1, kb, ldb4);
    c01 += b1 * a.a0[0];
    c11 += b1 * a.a0[1];
    c21 += b1 * a.a0[2];
    c31 += b1 * a.a0[3];
    c41 += b1 * a.a1[0];
    c51 += b1 * a.a1[1];
    c61 += b1 * a.a1[2];
    c71 += b1 * a.a1[3];
  }
  regStore(row0, col0, c00);
  regStore(row0 + 1u, col0, c10);
  regStore(row0 + 2u, col0, c20);
  regStore(row0 + 3u, col0, c30);
  regStore(row0 + 4u, col0, c40);
  regStore(row0 + 5u, col0, c50);
  regStore(row0 + 6u, col0, c60);
  regStore(row0 + 7u, col0, c70);
  regStore(row0, col1, c01);
  regStore(row0 + 1u, col1, c11);
  regStore(row0 + 2u, col1, c21);
  regStore(row0 + 3u, col1, c31);
  regStore(row0 + 4u, col1, c41);
  regStore(row0 + 5u, col1, c51);
  regStore(row0 + 6u, col1, c61);
  regStore(row0 + 7u, col1, c71);
}
