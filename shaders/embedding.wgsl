// Embedding lookup and its gradient.
//   gather:  out[r, j*E + e] = table[idx[r, j], e]           table [V, E], idx i32 [n, k]
//   scatter: dTable[idx[r, j], e] += dy[r, j*E + e]
//
// The scatter is race-free without float atomics: thread (block, e) owns
// column e of the vocabulary rows [block*rowsPerBlock, (block+1)*rowsPerBlock)
// and walks all n*k index positions in order, adding the ones that land in
// its rows. Repeated indices are summed by one thread, in position order, so
// the result is deterministic. rowsPerBlock trades parallelism (V/rowsPerBlock*E
// threads) against redundant index reads.

const WG: u32 = 64u;

struct Params {
  positions: u32,    // n * k
  E: u32,
  V: u32,
  rowsPerBlock: u32,
  blocks: u32,
  _p0: u32,
  _p1: u32,
  _p2: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> Table: array<f32>;
@group(0) @binding(2) var<storage, read> Idx: array<i32>;
@group(0) @binding(3) var<storage, read_write> Out: array<f32>;
@group(0) @binding(1) var<storage, read> DY: array<f32>;

// Grid-stride loops: thread i handles i, i + stride, ... (the host caps the
// number of workgroups; few big workgroups run faster on CPU adapters).
fn first(lid: vec3<u32>, wid: vec3<u32>) -> u32 {
  return wid.x * WG + lid.x;
}

fn stride(nwg: vec3<u32>) -> u32 {
  return nwg.x * WG;
}

@compute @workgroup_size(WG)
fn emb_gather(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
              @builtin(num_workgroups) nwg: vec3<u32>) {
  // 2-D grid: e = wid.x * WG + lid.x, position = wid.y (striding when larger).
  for (var e = wid.x * WG + lid.x; e < p.E; e += nwg.x * WG) {
    for (var pos = wid.y; pos < p.positions; pos += nwg.y) {
      let v = Idx[pos];
      // Out-of-range indices are rejected on the host; read them as 0 if one slips through.
      var val = 0.0;
      if (v >= 0 && u32(v) < p.V) {
        val = Table[u32(v) * p.E + e];
      }
      Out[pos * p.E + e] = val;
    }
  }
}

@compute @workgroup_size(WG)
fn emb_scatter_acc(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
                   @builtin(num_workgroups) nwg: vec3<u32>) {
  for (var t = first(lid, wid); t < p.blocks * p.E; t += stride(nwg)) {
    let e = t % p.E;
    let block = t / p.E;
    let lo = block * p.rowsPerBlock;
    let hi = min(lo + p.rowsPerBlock, p.V);
    for (var pos = 0u; pos < p.positions; pos++) {
      let v = Idx[pos];
      if (v >= i32(lo) && v < i32(hi)) {
        let o = u32(v) * p.E + e;
        Out[o] = Out[o] + DY[pos * p.E + e];
      }
    }
  }
}
