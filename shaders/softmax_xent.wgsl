// Softmax cross-entropy fused with its gradient, numerically stable.
//   per row:  s = sum exp(l - max);  rowLoss = (max - l[label]) + log(s)
//             dlogits = scale * (exp(l - max) / s - onehot(label))
//   reduce:   loss[0] = scale * sum rowLoss   (one workgroup, fixed order)
//   a label of -1 (a padded target) gives rowLoss 0 and a zero dlogits row.

const WG: u32 = 64u;
const RWG: u32 = 256u;

struct Params {
  rows: u32,
  cols: u32,
  scale: f32,
  _pad: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> Logits: array<f32>;
@group(0) @binding(2) var<storage, read> Labels: array<i32>;
@group(0) @binding(3) var<storage, read_write> DLogits: array<f32>;
@group(0) @binding(4) var<storage, read_write> RowLoss: array<f32>;
// reduce bindings
@group(0) @binding(1) var<storage, read> RowLossIn: array<f32>;
@group(0) @binding(3) var<storage, read_write> Loss: array<f32>;

// Grid-stride loops: thread i handles i, i + stride, ... (the host caps the
// number of workgroups; few big workgroups run faster on CPU adapters).
fn first(lid: vec3<u32>, wid: vec3<u32>) -> u32 {
  return wid.x * WG + lid.x;
}

fn stride(nwg: vec3<u32>) -> u32 {
  return nwg.x * WG;
}

@compute @workgroup_size(WG)
fn sx_rows(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
           @builtin(num_workgroups) nwg: vec3<u32>) {
  for (var r = first(lid, wid); r < p.rows; r += stride(nwg)) {
    let base = r * p.cols;
    var mx = Logits[base];
    for (var j = 1u; j < p.cols; j++) {
      mx = max(mx, Logits[base + j]);
    }
    var s = 0.0;
    for (var j = 0u; j < p.cols; j++) {
      s += exp(Logits[base + j] - mx);
    }
    // Relative to the row max: l - mx is exact in f32, while lse = mx + log(s)
    // would round at the magnitude of the logits (huge logits lose digits).
    let logS = log(s);
    let invS = 1.0 / s;
    let y = Labels[r];
    if (y == -1) {
      // A padded target (IGNORE_LABEL): no loss, a zero gradient row.
      RowLoss[r] = 0.0;
      for (var j = 0u; j < p.cols; j++) {
        DLogits[base + j] = 0.0;
      }
      continue;
    }
    let valid = y >= 0 && u32(y) < p.cols;
    // Labels are range-checked on the host; an out-of-range one here adds no one-hot term.
    var rl = mx + logS;
    if (valid) {
      rl = (mx - Logits[base + u32(y)]) + logS;
    }
    RowLoss[r] = rl;
    for (var j = 0u; j < p.cols; j++) {
      let sm = exp(Logits[base + j] - mx) * invS;
      let oh = select(0.0, 1.0, valid && u32(y) == j);
      DLogits[base + j] = p.scale * (sm - oh);
    }
  }
}

var<workgroup> partial: array<f32, RWG>;

@compute @workgroup_size(RWG)
fn sx_reduce(@builtin(local_invocation_id) lid: vec3<u32>) {
  var s = 0.0;
  for (var r = lid.x; r < p.rows; r += RWG) {
    s += RowLossIn[r];
  }
  partial[lid.x] = s;
  workgroupBarrier();
  for (var w = RWG / 2u; w > 0u; w = w / 2u) {
    if (lid.x < w) {
      partial[lid.x] = partial[lid.x] + partial[lid.x + w];
    }
    workgroupBarrier();
  }
  if (lid.x == 0u) {
    Loss[0] = p.scale * partial[0];
  }
}
