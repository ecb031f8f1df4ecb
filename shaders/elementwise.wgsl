// Elementwise kernels: fill, bias add, activations and their backward, axpy
// and scale. (The bias gradient, a sum over rows, is in reduce_rows.wgsl.)
//
// One-dimensional kernels are grid-stride loops over a 1-D grid of WG-thread
// workgroups. The row/column kernel (bias_add) runs a 2-D grid instead,
// column c = wid.x * WG + lid.x and row r = wid.y, each striding by the grid:
// no integer division per element (it is slow on CPUs).

const WG: u32 = 64u;

// Activation kinds (the host passes one of these in `kind`).
const ACT_RELU: u32 = 0u;
const ACT_GELU: u32 = 1u;
const ACT_TANH: u32 = 2u;
const ACT_IDENTITY: u32 = 3u;
// GELU, tanh approximation: 0.5 x (1 + tanh(C (x + K x^3))), C = sqrt(2/pi) (GELU_C/GELU_K in backend.ts).
const GELU_C: f32 = 0.7978845608028654;
const GELU_K: f32 = 0.044715;

struct Params {
  n: u32,      // elements (or rows, see each kernel)
  cols: u32,
  kind: u32,   // activation kind, or fill bits
  rows: u32,
  alpha: f32,
  _p0: u32,
  _p1: u32,
  _p2: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> X: array<f32>;
@group(0) @binding(2) var<storage, read> Y2: array<f32>;
@group(0) @binding(3) var<storage, read_write> Out: array<f32>;
@group(0) @binding(3) var<storage, read_write> OutU: array<u32>;

// Grid-stride loops: thread i handles i, i + stride, ... (the host caps the
// number of workgroups; few big workgroups run faster on CPU adapters).
fn first(lid: vec3<u32>, wid: vec3<u32>) -> u32 {
  return wid.x * WG + lid.x;
}

fn stride(nwg: vec3<u32>) -> u32 {
  return nwg.x * WG;
}

// Out[i] = bits (u32), for f32 and i32 tensors alike.
@compute @workgroup_size(WG)
fn fill(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
  for (var i = first(lid, wid); i < p.n; i += stride(nwg)) {
    OutU[i] = p.kind;
  }
}

// Out[r, c] = X[r, c] + Y2[c]   (X: [rows, cols], Y2: bias [cols])
@compute @workgroup_size(WG)
fn bias_add(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
            @builtin(num_workgroups) nwg: vec3<u32>) {
  for (var c = wid.x * WG + lid.x; c < p.cols; c += nwg.x * WG) {
    let b = Y2[c];
    for (var r = wid.y; r < p.rows; r += nwg.y) {
      Out[r * p.cols + c] = X[r * p.cols + c] + b;
    }
  }
}

// tanh that never overflows: |x| >= 15 is +-1 in f32 anyway.
fn safe_tanh(x: f32) -> f32 {
  return tanh(clamp(x, -15.0, 15.0));
}

// 1 - tanh(x)^2 = 4 e / (1 + e)^2 with e = exp(-2|x|): no cancellation when tanh saturates.
fn sech2(x: f32) -> f32 {
  let e = exp(-2.0 * abs(x));
  let d = 1.0 + e;
  return 4.0 * e / (d * d);
}

// GELU through the logistic function: 0.5 (1 + tanh(u)) = sigmoid(2u), evaluated
// with e = exp(-2|u|) <= 1 so that neither tail cancels or overflows.
//   sigmoid(2u) = 1/(1+e) for u >= 0, e/(1+e) for u < 0;  sigmoid' part: e/(1+e)^2.
fn gelu_u(x: f32) -> f32 {
  return GELU_C * (x + GELU_K * x * x * x);
}

fn act(kind: u32, x: f32) -> f32 {
  switch kind {
    case ACT_RELU: {
      return max(x, 0.0);
    }
    case ACT_GELU: {
      let u = gelu_u(x);
      let e = exp(-2.0 * abs(u));
      let sig = select(e, 1.0, u >= 0.0) / (1.0 + e);
      return x * sig;
    }
    case ACT_TANH: {
      return safe_tanh(x);
    }
    default: {
      return x;
    }
  }
}

fn act_grad(kind: u32, x: f32) -> f32 {
  switch kind {
    case ACT_RELU: {
      return select(0.0, 1.0, x > 0.0);
    }
    case ACT_GELU: {
      // d/dx [x sigmoid(2u)] = sigmoid(2u) + 2 x u' sigmoid(2u) (1 - sigmoid(2u))
      let u = gelu_u(x);
      let e = exp(-2.0 * abs(u));
      let d = 1.0 + e;
      let sig = select(e, 1.0, u >= 0.0) / d;
      if (abs(u) > 40.0) {
        return sig; // the second term is below f32 range (and x^3 could overflow)
      }
      let du = GELU_C * (1.0 + 3.0 * GELU_K * x * x);
      return sig + 2.0 * x * du * e / (d * d);
    }
    case ACT_TANH: {
      return sech2(x);
    }
    default: {
      return 1.0;
    }
  }
}

// Out = act(X)
@compute @workgroup_size(WG)
fn act_fwd(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
           @builtin(num_workgroups) nwg: vec3<u32>) {
  for (var i = first(lid, wid); i < p.n; i += stride(nwg)) {
    Out[i] = act(p.kind, X[i]);
  }
}

// Out = Y2 * act'(X)   (X: pre-activation input, Y2: upstream gradient)
@compute @workgroup_size(WG)
fn act_bwd(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
           @builtin(num_workgroups) nwg: vec3<u32>) {
  for (var i = first(lid, wid); i < p.n; i += stride(nwg)) {
    Out[i] = Y2[i] * act_grad(p.kind, X[i]);
  }
}

// Out += alpha * X
@compute @workgroup_size(WG)
fn axpy(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
  for (var i = first(lid, wid); i < p.n; i += stride(nwg)) {
    Out[i] = Out[i] + p.alpha * X[i];
  }
}

// Out *= alpha
@compute @workgroup_size(WG)
fn scale(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
         @builtin(num_workgroups) nwg: vec3<u32>) {
  for (var i = first(lid, wid); i < p.n; i += stride(nwg)) {
    Out[i] = Out[i] * p.alpha;
  }
}
