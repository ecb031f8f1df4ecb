// Optimizer steps, in place, one thread per parameter.
//   SGD:   v = momentum*v + (gradScale*g + wd*p);  p -= lr*v
//   AdamW: g' = gradScale*g;  m = b1 m + (1-b1) g';  v = b2 v + (1-b2) g'^2
//          p = p*decay - lr * (m / bc1) / (sqrt(v / bc2) + eps)
//          with decay = 1 - lr*wd, bc1 = 1 - b1^t, bc2 = 1 - b2^t computed on the host.

const WG: u32 = 64u;

struct SgdParams {
  n: u32,
  lr: f32,
  momentum: f32,
  wd: f32,
  gradScale: f32,
  _p0: u32,
  _p1: u32,
  _p2: u32,
}

struct AdamParams {
  n: u32,
  lr: f32,
  beta1: f32,
  beta2: f32,
  eps: f32,
  decay: f32,
  gradScale: f32,
  bc1: f32,
  bc2: f32,
  omb1: f32,   // 1 - beta1, computed in float64 on the host
  omb2: f32,   // 1 - beta2
  _p0: u32,
}

@group(0) @binding(0) var<uniform> sp: SgdParams;
@group(0) @binding(0) var<uniform> ap: AdamParams;
@group(0) @binding(1) var<storage, read> Grad: array<f32>;
@group(0) @binding(2) var<storage, read_write> Param: array<f32>;
@group(0) @binding(3) var<storage, read_write> Vel: array<f32>;
@group(0) @binding(3) var<storage, read_write> M1: array<f32>;
@group(0) @binding(4) var<storage, read_write> M2: array<f32>;

// Grid-stride loops: thread i handles i, i + stride, ... (the host caps the
// number of workgroups; few big workgroups run faster on CPU adapters).
fn first(lid: vec3<u32>, wid: vec3<u32>) -> u32 {
  return wid.x * WG + lid.x;
}

fn stride(nwg: vec3<u32>) -> u32 {
  return nwg.x * WG;
}

@compute @workgroup_size(WG)
fn sgd(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
       @builtin(num_workgroups) nwg: vec3<u32>) {
  for (var i = first(lid, wid); i < sp.n; i += stride(nwg)) {
    let pv = Param[i];
    let v = sp.momentum * Vel[i] + (sp.gradScale * Grad[i] + sp.wd * pv);
    Vel[i] = v;
    Param[i] = pv - sp.lr * v;
  }
}

@compute @workgroup_size(WG)
fn adamw(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
         @builtin(num_workgroups) nwg: vec3<u32>) {
  for (var i = first(lid, wid); i < ap.n; i += stride(nwg)) {
    let g = ap.gradScale * Grad[i];
    let m = ap.beta1 * M1[i] + ap.omb1 * g;
    let v = ap.beta2 * M2[i] + ap.omb2 * g * g;
    M1[i] = m;
    M2[i] = v;
    let mh = m / ap.bc1;
    let vh = v / ap.bc2;
    Param[i] = Param[i] * ap.decay - ap.lr * mh / (sqrt(vh) + ap.eps);
  }
}
