/**
 * The float64 CPU reference of every op. Slow and plain on purpose: it is what
 * the GPU kernels are checked against, and what finite differences check.
 */
import { ConfigError } from '../util/errors.ts';
import { GELU_C, GELU_K, IGNORE_LABEL } from './backend.ts';
import { causalSoftmaxBackwardRef, causalSoftmaxRef, probsGradRef, qkvGradRef, scoresRef, valuesRef } from './attention-reference.ts';
import { checkDy, checkScale, probsDims, qkvDims, scoresT } from './attention-shapes.ts';
import type { Activation, AdamWOptions, Backend, DType, LayerNormOut, MatmulOptions, MoeRoute, SgdOptions, Tensor } from './backend.ts';
import { CpuTensor, floats as d, ints } from './cpu-tensor.ts';
import { MemoryLedger, type MemoryKind } from './memory-ledger.ts';
import * as moe from './moe/moe-cpu.ts';
import { groupedDims } from './moe/moe-shapes.ts';
import { check1d, check2d, checkCopyRange, checkDType, checkFiniteNumber, checkSameShape, checkShape, matmulDims } from './shapes.ts';

export { CpuTensor } from './cpu-tensor.ts';

/** The CPU reference counts 4 bytes a value: the page's float32, so its counts compare with the formulas. */
const CPU_BYTES = 4;

function cpuTensor(field: string, t: Tensor): CpuTensor {
  if (!(t instanceof CpuTensor)) throw new ConfigError(field, t, 'must come from the CPU backend');
  return t;
}

export function activate(kind: Activation, x: number): number {
  switch (kind) {
    case 'relu':
      return x > 0 ? x : 0;
    case 'tanh':
      return Math.tanh(x);
    case 'gelu': {
      const u = GELU_C * (x + GELU_K * x * x * x);
      return 0.5 * x * (1 + Math.tanh(u));
    }
    case 'identity':
      return x;
  }
}

export function activateDerivative(kind: Activation, x: number): number {
  switch (kind) {
    case 'relu':
      return x > 0 ? 1 : 0;
    case 'tanh': {
      const t = Math.tanh(x);
      return 1 - t * t;
    }
    case 'gelu': {
      const u = GELU_C * (x + GELU_K * x * x * x);
      const t = Math.tanh(u);
      const du = GELU_C * (1 + 3 * GELU_K * x * x);
      return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * du;
    }
    case 'identity':
      return 1;
  }
}

export class CpuBackend implements Backend {
  readonly name = 'cpu-float64';
  readonly memory = new MemoryLedger();

  private make(shape: readonly number[], dtype: DType, data: Float64Array | Int32Array): CpuTensor {
    const t = new CpuTensor(shape, dtype, data);
    this.memory.add(t, t.size * CPU_BYTES);
    return t;
  }

  tag(t: Tensor, kind: MemoryKind): void {
    this.memory.retag(t, kind);
  }

  freeStorage(t: Tensor): void {
    const c = cpuTensor('freeStorage tensor', t);
    if (!c.hasStorage) return;
    c.setStore(null);
    this.memory.remove(c);
  }

  allocStorage(t: Tensor, kind: MemoryKind): void {
    const c = cpuTensor('allocStorage tensor', t);
    if (c.hasStorage) throw new ConfigError('allocStorage tensor', `[${c.shape.join(', ')}]`, 'already has storage (allocStorage follows freeStorage)');
    c.setStore(c.dtype === 'i32' ? new Int32Array(c.size) : new Float64Array(c.size));
    this.memory.add(c, c.size * CPU_BYTES, kind);
  }

  hasStorage(t: Tensor): boolean {
    return cpuTensor('hasStorage tensor', t).hasStorage;
  }

  tensor(data: ArrayLike<number>, shape: readonly number[], dtype: DType = 'f32'): CpuTensor {
    const n = checkShape('tensor shape', shape);
    if (data.length !== n) throw new ConfigError('tensor data.length', data.length, `must equal the product of shape [${shape.join(', ')}] = ${n}`);
    const arr = dtype === 'i32' ? Int32Array.from(data) : Float64Array.from(data);
    return this.make([...shape], dtype, arr);
  }

  zeros(shape: readonly number[], dtype: DType = 'f32'): CpuTensor {
    const n = checkShape('tensor shape', shape);
    return this.make([...shape], dtype, dtype === 'i32' ? new Int32Array(n) : new Float64Array(n));
  }

  clone(t: Tensor): CpuTensor {
    const c = t as CpuTensor;
    return this.make([...c.shape], c.dtype, c.data.slice());
  }

  fill(t: Tensor, value: number): void {
    (t as CpuTensor).data.fill(value);
  }

  copyInto(dst: Tensor, src: Tensor, dstOffset?: number): void {
    checkCopyRange(dst, src, dstOffset);
    (dst as CpuTensor).data.set((src as CpuTensor).data, dstOffset ?? 0);
  }

  async read(t: Tensor): Promise<Float64Array | Int32Array> {
    return (t as CpuTensor).data.slice();
  }

  dispose(t: Tensor): void {
    this.memory.remove(t);
  }
  flush(): void {}
  async sync(): Promise<void> {}

  matmul(a: Tensor, b: Tensor, opts: MatmulOptions = {}): CpuTensor {
    const [M, N] = matmulDims(a, b, opts);
    const out = this.zeros([M, N]);
    this.matmulAcc(out, a, b, opts);
    return out;
  }

  matmulAcc(out: Tensor, a: Tensor, b: Tensor, opts: MatmulOptions = {}): void {
    const [M, N, K] = matmulDims(a, b, opts);
    if (out.shape[0] !== M || out.shape[1] !== N || out.shape.length !== 2) {
      throw new ConfigError('matmul out.shape', out.shape, `must be [${M}, ${N}]`);
    }
    const A = d(a), B = d(b), C = d(out);
    const ac = a.shape[1], bc = b.shape[1];
    // Every form sums each C[i, j] over k = 0 .. K−1 in order, then adds it to
    // C: the same rounding whatever the form or the number of rows. The loops
    // are specialised per form so the inner one runs over contiguous memory.
    if (!opts.transB) {
      const row = new Float64Array(N);
      for (let i = 0; i < M; i++) {
        row.fill(0);
        for (let k = 0; k < K; k++) {
          const av = opts.transA ? A[k * ac + i] : A[i * ac + k];
          const bo = k * bc;
          for (let j = 0; j < N; j++) row[j] += av * B[bo + j];
        }
        for (let j = 0; j < N; j++) C[i * N + j] += row[j];
      }
      return;
    }
    const col = new Float64Array(K);
    for (let i = 0; i < M; i++) {
      for (let k = 0; k < K; k++) col[k] = opts.transA ? A[k * ac + i] : A[i * ac + k];
      for (let j = 0; j < N; j++) {
        let s = 0;
        const bo = j * bc;
        for (let k = 0; k < K; k++) s += col[k] * B[bo + k];
        C[i * N + j] += s;
      }
    }
  }

  biasAdd(x: Tensor, bias: Tensor): CpuTensor {
    const [n, c] = check2d('biasAdd x', x);
    check1d('biasAdd bias', bias, c, `must be [${c}] (x has ${c} columns)`);
    const X = d(x), b = d(bias);
    const out = this.zeros([n, c]);
    const Y = out.data as Float64Array;
    for (let i = 0; i < n; i++) for (let j = 0; j < c; j++) Y[i * c + j] = X[i * c + j] + b[j];
    return out;
  }

  colSumAcc(out: Tensor, dy: Tensor): void {
    const [n, c] = check2d('colSum dy', dy);
    check1d('colSum out', out, c, `must be [${c}] (dy has ${c} columns)`);
    const D = d(dy), o = d(out);
    for (let j = 0; j < c; j++) {
      let s = 0;
      for (let i = 0; i < n; i++) s += D[i * c + j];
      o[j] += s;
    }
  }

  activation(kind: Activation, x: Tensor): CpuTensor {
    const X = d(x);
    const out = this.zeros(x.shape);
    const Y = out.data as Float64Array;
    for (let i = 0; i < X.length; i++) Y[i] = activate(kind, X[i]);
    return out;
  }

  activationBackward(kind: Activation, x: Tensor, dy: Tensor): CpuTensor {
    checkSameShape('activationBackward dy', dy, x, 'x');
    const X = d(x), D = d(dy);
    const out = this.zeros(x.shape);
    const G = out.data as Float64Array;
    for (let i = 0; i < X.length; i++) G[i] = D[i] * activateDerivative(kind, X[i]);
    return out;
  }

  layerNorm(x: Tensor, gamma: Tensor, beta: Tensor, eps: number): LayerNormOut {
    const [n, c] = check2d('layerNorm x', x);
    check1d('layerNorm gamma', gamma, c, `must be [${c}] (x has ${c} columns)`);
    check1d('layerNorm beta', beta, c, `must be [${c}] (x has ${c} columns)`);
    checkFiniteNumber('layerNorm eps', eps);
    const X = d(x), g = d(gamma), b = d(beta);
    const y = this.zeros([n, c]), mean = this.zeros([n]), rstd = this.zeros([n]);
    const Y = y.data as Float64Array, Mu = mean.data as Float64Array, R = rstd.data as Float64Array;
    for (let i = 0; i < n; i++) {
      let mu = 0;
      for (let j = 0; j < c; j++) mu += X[i * c + j];
      mu /= c;
      let v = 0;
      for (let j = 0; j < c; j++) v += (X[i * c + j] - mu) ** 2;
      v /= c;
      const r = 1 / Math.sqrt(v + eps);
      Mu[i] = mu;
      R[i] = r;
      for (let j = 0; j < c; j++) Y[i * c + j] = (X[i * c + j] - mu) * r * g[j] + b[j];
    }
    return { y, mean, rstd };
  }

  layerNormBackwardInput(x: Tensor, gamma: Tensor, mean: Tensor, rstd: Tensor, dy: Tensor): CpuTensor {
    const [n, c] = check2d('layerNormBackward x', x);
    checkSameShape('layerNormBackward dy', dy, x, 'x');
    const X = d(x), g = d(gamma), Mu = d(mean), R = d(rstd), D = d(dy);
    const out = this.zeros([n, c]);
    const G = out.data as Float64Array;
    for (let i = 0; i < n; i++) {
      // dx = r/c · (c·g·dy − Σ g·dy − x̂ Σ g·dy·x̂)
      let s1 = 0, s2 = 0;
      for (let j = 0; j < c; j++) {
        const xh = (X[i * c + j] - Mu[i]) * R[i];
        const gd = g[j] * D[i * c + j];
        s1 += gd;
        s2 += gd * xh;
      }
      for (let j = 0; j < c; j++) {
        const xh = (X[i * c + j] - Mu[i]) * R[i];
        const gd = g[j] * D[i * c + j];
        G[i * c + j] = (R[i] / c) * (c * gd - s1 - xh * s2);
      }
    }
    return out;
  }

  layerNormBackwardWeightAcc(dgamma: Tensor, dbeta: Tensor, x: Tensor, mean: Tensor, rstd: Tensor, dy: Tensor): void {
    const [n, c] = check2d('layerNormBackward x', x);
    checkSameShape('layerNormBackward dy', dy, x, 'x');
    const X = d(x), Mu = d(mean), R = d(rstd), D = d(dy), dg = d(dgamma), db = d(dbeta);
    for (let j = 0; j < c; j++) {
      let sg = 0, sb = 0;
      for (let i = 0; i < n; i++) {
        const xh = (X[i * c + j] - Mu[i]) * R[i];
        sg += D[i * c + j] * xh;
        sb += D[i * c + j];
      }
      dg[j] += sg;
      db[j] += sb;
    }
  }

  embedding(table: Tensor, idx: Tensor): CpuTensor {
    const [V, E] = check2d('embedding table', table);
    const [n, k] = check2d('embedding idx', idx);
    const T = d(table), I = ints(idx);
    const out = this.zeros([n, k * E]);
    const Y = out.data as Float64Array;
    for (let r = 0; r < n; r++) {
      for (let j = 0; j < k; j++) {
        const v = I[r * k + j];
        if (v < 0 || v >= V) throw new ConfigError(`embedding idx[${r}, ${j}]`, v, `must be in [0, ${V})`);
        for (let e = 0; e < E; e++) Y[r * k * E + j * E + e] = T[v * E + e];
      }
    }
    return out;
  }

  embeddingBackwardAcc(dTable: Tensor, idx: Tensor, dy: Tensor): void {
    const [V, E] = check2d('embedding dTable', dTable);
    const [n, k] = check2d('embedding idx', idx);
    const [dn, dc] = check2d('embedding dy', dy);
    if (dn !== n || dc !== k * E) throw new ConfigError('embedding dy.shape', dy.shape, `must be [${n}, ${k * E}]`);
    const G = d(dTable), I = ints(idx), D = d(dy);
    for (let r = 0; r < n; r++) {
      for (let j = 0; j < k; j++) {
        const v = I[r * k + j];
        if (v < 0 || v >= V) throw new ConfigError(`embedding idx[${r}, ${j}]`, v, `must be in [0, ${V})`);
        for (let e = 0; e < E; e++) G[v * E + e] += D[r * k * E + j * E + e];
      }
    }
  }

  softmaxCrossEntropy(logits: Tensor, labels: Tensor, scale: number): { loss: CpuTensor; dlogits: CpuTensor } {
    const [n, c] = check2d('softmaxCrossEntropy logits', logits);
    check1d('softmaxCrossEntropy labels', labels, n, `must be [${n}] (one label per logits row)`);
    checkFiniteNumber('softmaxCrossEntropy scale', scale);
    const L = d(logits), Y = ints(labels);
    const dl = this.zeros([n, c]);
    const G = dl.data as Float64Array;
    let loss = 0;
    for (let i = 0; i < n; i++) {
      const y = Y[i];
      if (y === IGNORE_LABEL) continue; // a padded target: no loss, zero gradient row
      if (y < 0 || y >= c) throw new ConfigError(`softmaxCrossEntropy labels[${i}]`, y, `must be in [0, ${c})`);
      let mx = -Infinity;
      for (let j = 0; j < c; j++) mx = Math.max(mx, L[i * c + j]);
      let s = 0;
      for (let j = 0; j < c; j++) s += Math.exp(L[i * c + j] - mx);
      const lse = mx + Math.log(s);
      loss += lse - L[i * c + y];
      for (let j = 0; j < c; j++) G[i * c + j] = scale * (Math.exp(L[i * c + j] - lse) - (j === y ? 1 : 0));
    }
    return { loss: this.tensor([loss * scale], [1]), dlogits: dl };
  }

  attentionScores(qkv: Tensor, heads: number, T: number, scale: number): CpuTensor {
    const dims = qkvDims('attentionScores', qkv, heads, T);
    checkScale('attentionScores', scale);
    return this.make([dims.B * dims.H * T, T], 'f32', scoresRef(d(qkv), dims, scale));
  }

  causalSoftmax(scores: Tensor): CpuTensor {
    const T = scoresT('causalSoftmax', scores);
    return this.make([...scores.shape], 'f32', causalSoftmaxRef(d(scores), T));
  }

  causalSoftmaxBackward(probs: Tensor, dProbs: Tensor): CpuTensor {
    const T = scoresT('causalSoftmaxBackward', probs);
    checkSameShape('causalSoftmaxBackward dProbs', dProbs, probs, 'probs');
    return this.make([...probs.shape], 'f32', causalSoftmaxBackwardRef(d(probs), d(dProbs), T));
  }

  attentionValues(probs: Tensor, qkv: Tensor, heads: number): CpuTensor {
    const dims = probsDims('attentionValues', probs, qkv, heads);
    return this.make([dims.B * dims.T, dims.C], 'f32', valuesRef(d(probs), d(qkv), dims));
  }

  attentionProbsGrad(qkv: Tensor, dy: Tensor, heads: number, T: number): CpuTensor {
    const dims = qkvDims('attentionProbsGrad', qkv, heads, T);
    checkDy('attentionProbsGrad', dy, dims);
    return this.make([dims.B * dims.H * T, T], 'f32', probsGradRef(d(qkv), d(dy), dims));
  }

  attentionQkvGrad(qkv: Tensor, probs: Tensor, dScores: Tensor, dy: Tensor, heads: number, scale: number): CpuTensor {
    const dims = probsDims('attentionQkvGrad', probs, qkv, heads);
    checkSameShape('attentionQkvGrad dScores', dScores, probs, 'probs');
    checkDy('attentionQkvGrad', dy, dims);
    checkScale('attentionQkvGrad', scale);
    return this.make([dims.B * dims.T, 3 * dims.C], 'f32', qkvGradRef(d(qkv), d(probs), d(dScores), d(dy), dims, scale));
  }

  add(a: Tensor, b: Tensor): CpuTensor {
    checkSameShape('add b', b, a, 'a');
    const A = d(a), B = d(b);
    const out = new Float64Array(A.length);
    for (let i = 0; i < A.length; i++) out[i] = A[i] + B[i];
    return this.make([...a.shape], 'f32', out);
  }

  // --- mixture of experts (moe/moe-cpu.ts: its results counted here, as every tensor this backend makes) ---
  private own<T>(made: T): T {
    const count = (t: CpuTensor): void => this.memory.add(t, t.size * CPU_BYTES);
    if (made instanceof CpuTensor) count(made);
    else for (const v of Object.values(made as object)) if (v instanceof CpuTensor) count(v);
    return made;
  }

  softmaxRows(x: Tensor): CpuTensor { return this.own(moe.softmaxRows(x)); }
  softmaxRowsBackward(p: Tensor, dp: Tensor): CpuTensor { return this.own(moe.softmaxRowsBackward(p, dp)); }
  moeRoute(probs: Tensor, k: number, capacity: number): MoeRoute { return this.own(moe.moeRoute(probs, k, capacity)); }
  moeGates(probs: Tensor, sel: Tensor): CpuTensor { return this.own(moe.moeGates(probs, sel)); }
  moeGatesBackward(probs: Tensor, sel: Tensor, dGates: Tensor): CpuTensor { return this.own(moe.moeGatesBackward(probs, sel, dGates)); }
  moeAuxLoss(probs: Tensor, sel: Tensor): { loss: CpuTensor; dProbs: CpuTensor } { return this.own(moe.moeAuxLoss(probs, sel)); }
  moeDispatch(x: Tensor, rowToken: Tensor, k: number): CpuTensor { return this.own(moe.moeDispatch(x, rowToken, k)); }
  moeDispatchBackward(dxe: Tensor, slot: Tensor): CpuTensor { return this.own(moe.moeDispatchBackward(dxe, slot)); }
  moeCombine(ye: Tensor, slot: Tensor, gates: Tensor): CpuTensor { return this.own(moe.moeCombine(ye, slot, gates)); }
  moeCombineBackward(dy: Tensor, ye: Tensor, slot: Tensor, gates: Tensor, rowToken: Tensor): { dye: CpuTensor; dGates: CpuTensor } {
    return this.own(moe.moeCombineBackward(dy, ye, slot, gates, rowToken));
  }
  groupedMatmul(a: Tensor, b: Tensor, groups: number, opts: MatmulOptions = {}): CpuTensor {
    const { M, N } = groupedDims(a, b, groups, opts);
    const out = this.zeros([groups * M, N]);
    this.groupedMatmulAcc(out, a, b, groups, opts);
    return out;
  }
  groupedMatmulAcc(out: Tensor, a: Tensor, b: Tensor, groups: number, opts: MatmulOptions = {}): void {
    for (const v of moe.groupViews(out, a, b, groups, opts)) this.matmulAcc(v.out, v.a, v.b, opts);
  }

  axpy(y: Tensor, x: Tensor, alpha: number): void {
    checkSameShape('axpy x', x, y, 'y');
    const Y = d(y), X = d(x);
    for (let i = 0; i < Y.length; i++) Y[i] += alpha * X[i];
  }

  scale(t: Tensor, alpha: number): void {
    const T = d(t);
    for (let i = 0; i < T.length; i++) T[i] *= alpha;
  }

  sgdStep(param: Tensor, grad: Tensor, velocity: Tensor, o: SgdOptions): void {
    checkSameShape('sgd grad', grad, param, 'param');
    const P = d(param), G = d(grad), V = d(velocity);
    for (let i = 0; i < P.length; i++) {
      V[i] = o.momentum * V[i] + (o.gradScale * G[i] + o.weightDecay * P[i]);
      P[i] -= o.lr * V[i];
    }
  }

  adamwStep(param: Tensor, grad: Tensor, m: Tensor, v: Tensor, o: AdamWOptions): void {
    checkSameShape('adamw grad', grad, param, 'param');
    const P = d(param), G = d(grad), Mm = d(m), Vv = d(v);
    const bc1 = 1 - Math.pow(o.beta1, o.step);
    const bc2 = 1 - Math.pow(o.beta2, o.step);
    for (let i = 0; i < P.length; i++) {
      const g = o.gradScale * G[i];
      Mm[i] = o.beta1 * Mm[i] + (1 - o.beta1) * g;
      Vv[i] = o.beta2 * Vv[i] + (1 - o.beta2) * g * g;
      const mh = Mm[i] / bc1;
      const vh = Vv[i] / bc2;
      P[i] = P[i] * (1 - o.lr * o.weightDecay) - (o.lr * mh) / (Math.sqrt(vh) + o.eps);
    }
  }
}
