/**
 * The WebGPU implementation of the Backend contract (src/nn/backend.ts): every
 * op is a WGSL kernel from shaders/, launched through GpuCore (gpu-core.ts:
 * device, tensor lifetime, uniforms, lazy submits). Checked op by op against
 * the float64 CpuBackend in ops.test.ts and matmul.test.ts.
 *
 *   const gpu = await GpuBackend.create();
 *   const c = gpu.matmul(a, b, { transB: true });
 *   const values = await gpu.read(c);
 *   gpu.destroy();
 *
 * Works in a page or a worker (navigator.gpu) and in Node with Dawn (pass
 * `gpu`, see testing/node-gpu.ts). Matmul runs the default variant
 * (kernels.ts, DEFAULT_MATMUL_VARIANT) unless one is forced or the autotune
 * (autotune.ts, for tests and the benchmark) picked another.
 */
import { ConfigError, requireOneOf } from '../util/errors.ts';
import { ACTIVATIONS, IGNORE_LABEL } from '../nn/backend.ts';
import type { Activation, AdamWOptions, Backend, LayerNormOut, MatmulOptions, MoeRoute, SgdOptions, Tensor } from '../nn/backend.ts';
import { check1d, check2d, checkDType, checkFiniteNumber, checkSameShape, matmulDims } from '../nn/shapes.ts';
import { autotuneMatmul, type AutotuneOptions, type AutotuneReport } from './autotune.ts';
import { acquireDevice, type AcquiredDevice } from './device.ts';
import { GpuCore, type GpuCoreOptions } from './gpu-core.ts';
import { describeTensor, GpuTensor } from './gpu-tensor.ts';
import type { MemoryKind } from '../nn/memory-ledger.ts';
import { K, requireMatmulVariant } from './kernels.ts';
import { MATMUL_FORMS, MatmulChoice, type MatmulForm } from './matmul-choice.ts';
import { Params } from './uniforms.ts';
import * as attn from './attention-ops.ts';
import * as moe from './moe-ops.ts';
import * as reduce from './reduce-ops.ts';

export type { AutotuneOptions, AutotuneReport, AutotuneTiming } from './autotune.ts';
export type { GpuCoreOptions, GpuStats } from './gpu-core.ts';
export { GpuTensor } from './gpu-tensor.ts';
export { MATMUL_FORMS, matmulForm, type MatmulForm } from './matmul-choice.ts';

export interface GpuBackendOptions extends GpuCoreOptions {
  /** Time the matmul variants at start-up and keep the fastest per form. Off: the default variant (kernels.ts, DEFAULT_MATMUL_VARIANT), or `matmulVariant`. */
  autotune?: boolean | AutotuneOptions;
  /** Force one matmul variant for every form (see MATMUL_VARIANTS). */
  matmulVariant?: string;
}

export class GpuBackend extends GpuCore implements Backend {
  /** The report of the last autotune, when one ran. */
  autotuneReport: AutotuneReport | null = null;
  private readonly matmuls: MatmulChoice;

  /** Acquires a device (navigator.gpu or opts.gpu) and builds the backend; runs the autotune if asked. */
  static async create(opts: GpuBackendOptions = {}): Promise<GpuBackend> {
    const acq = await acquireDevice(opts.gpu, { timestamps: opts.timestamps });
    const backend = new GpuBackend(acq, opts);
    if (opts.autotune) {
      await backend.autotune(opts.autotune === true ? {} : opts.autotune);
    }
    return backend;
  }

  /** Builds a backend on an already acquired device (see acquireDevice). */
  constructor(acq: AcquiredDevice, opts: GpuBackendOptions = {}) {
    super(acq, opts);
    this.matmuls = new MatmulChoice(this, opts.matmulVariant);
  }

  // ------------------------------------------------------------------ matmul

  matmul(a: Tensor, b: Tensor, opts: MatmulOptions = {}): GpuTensor {
    return this.matmulWith(null, a, b, opts);
  }

  matmulAcc(out: Tensor, a: Tensor, b: Tensor, opts: MatmulOptions = {}): void {
    this.matmulAccWith(null, out, a, b, opts);
  }

  /** The variant each form uses now. */
  matmulChoice(): Record<MatmulForm, string> {
    return this.matmuls.names();
  }

  /** Uses variant `name` for the given forms (default all). */
  setMatmulVariant(name: string, forms: readonly MatmulForm[] = MATMUL_FORMS): void {
    this.matmuls.set(requireMatmulVariant('matmulVariant', name), forms);
  }

  /** matmul with an explicit variant (null: the current choice for the form). */
  matmulWith(variant: string | null, a: Tensor, b: Tensor, opts: MatmulOptions = {}): GpuTensor {
    this.alive();
    const [M, N] = matmulDims(a, b, opts);
    const A = this.f32('matmul a', a);
    const B = this.f32('matmul b', b);
    const { t } = this.alloc([M, N], 'f32');
    this.matmuls.encode(variant, t, A, B, opts, false);
    return t;
  }

  matmulAccWith(variant: string | null, out: Tensor, a: Tensor, b: Tensor, opts: MatmulOptions = {}): void {
    this.alive();
    const [M, N] = matmulDims(a, b, opts);
    const o = this.f32('matmul out', out);
    if (o.shape.length !== 2 || o.shape[0] !== M || o.shape[1] !== N) {
      throw new ConfigError('matmul out.shape', o.shape, `must be [${M}, ${N}]`);
    }
    const A = this.f32('matmul a', a);
    const B = this.f32('matmul b', b);
    this.matmuls.encode(variant, o, A, B, opts, true);
  }

  /** Times the matmul variants here and keeps the fastest per form (see autotune.ts). */
  async autotune(o: AutotuneOptions = {}): Promise<AutotuneReport> {
    this.alive();
    this.autotuneReport = await autotuneMatmul(this, this.matmuls, o);
    return this.autotuneReport;
  }

  // ------------------------------------------------------------------ bias, activations

  biasAdd(x: Tensor, bias: Tensor): GpuTensor {
    this.alive();
    const [n, c] = check2d('biasAdd x', x);
    check1d('biasAdd bias', bias, c, `must be [${c}] (x has ${c} columns)`);
    const X = this.f32('biasAdd x', x);
    const B = this.f32('biasAdd bias', bias);
    const { t } = this.alloc([n, c], 'f32');
    this.run('biasAdd', K.biasAdd, Params.of().U(n * c).U(c).U(0).U(n), [null, X, B, t], this.grid2d(c, n));
    return t;
  }

  colSumAcc(out: Tensor, dy: Tensor): void {
    this.alive();
    const [n, c] = check2d('colSum dy', dy);
    check1d('colSum out', out, c, `must be [${c}] (dy has ${c} columns)`);
    reduce.colSumAcc(this, this.f32('colSum out', out), this.f32('colSum dy', dy), n, c);
  }

  activation(kind: Activation, x: Tensor): GpuTensor {
    this.alive();
    requireOneOf('activation kind', kind, ACTIVATIONS);
    const X = this.f32('activation x', x);
    const { t } = this.alloc(X.shape, 'f32');
    this.run('activation', K.actFwd, Params.of().U(X.size).U(0).U(ACTIVATIONS.indexOf(kind)), [null, X, null, t], this.grid(X.size));
    return t;
  }

  activationBackward(kind: Activation, x: Tensor, dy: Tensor): GpuTensor {
    this.alive();
    requireOneOf('activation kind', kind, ACTIVATIONS);
    checkSameShape('activationBackward dy', dy, x, 'x');
    const X = this.f32('activationBackward x', x);
    const D = this.f32('activationBackward dy', dy);
    const { t } = this.alloc(X.shape, 'f32');
    this.run('activationBackward', K.actBwd, Params.of().U(X.size).U(0).U(ACTIVATIONS.indexOf(kind)), [null, X, D, t], this.grid(X.size));
    return t;
  }

  // ------------------------------------------------------------------ LayerNorm

  layerNorm(x: Tensor, gamma: Tensor, beta: Tensor, eps: number): LayerNormOut {
    this.alive();
    const [n, c] = check2d('layerNorm x', x);
    check1d('layerNorm gamma', gamma, c, `must be [${c}] (x has ${c} columns)`);
    check1d('layerNorm beta', beta, c, `must be [${c}] (x has ${c} columns)`);
    checkFiniteNumber('layerNorm eps', eps);
    const X = this.f32('layerNorm x', x);
    const G = this.f32('layerNorm gamma', gamma);
    const B = this.f32('layerNorm beta', beta);
    const y = this.alloc([n, c], 'f32').t;
    const mean = this.alloc([n], 'f32').t;
    const rstd = this.alloc([n], 'f32').t;
    this.run('layerNorm', K.lnFwd, Params.of().U(n).U(c).F(eps), [null, X, G, B, y, mean, rstd], this.grid(n));
    return { y, mean, rstd };
  }

  private lnBackwardChecks(x: Tensor, gamma: Tensor | null, mean: Tensor, rstd: Tensor, dy: Tensor): [number, number] {
    const [n, c] = check2d('layerNormBackward x', x);
    checkSameShape('layerNormBackward dy', dy, x, 'x');
    if (gamma) check1d('layerNormBackward gamma', gamma, c, `must be [${c}] (x has ${c} columns)`);
    check1d('layerNormBackward mean', mean, n, `must be [${n}] (x has ${n} rows)`);
    check1d('layerNormBackward rstd', rstd, n, `must be [${n}] (x has ${n} rows)`);
    return [n, c];
  }

  layerNormBackwardInput(x: Tensor, gamma: Tensor, mean: Tensor, rstd: Tensor, dy: Tensor): GpuTensor {
    this.alive();
    const [n, c] = this.lnBackwardChecks(x, gamma, mean, rstd, dy);
    const bind = [
      null,
      this.f32('layerNormBackward x', x),
      this.f32('layerNormBackward gamma', gamma),
      this.f32('layerNormBackward mean', mean),
      this.f32('layerNormBackward rstd', rstd),
      this.f32('layerNormBackward dy', dy),
    ];
    const { t } = this.alloc([n, c], 'f32');
    this.run('layerNormBackwardInput', K.lnBwdInput, Params.of().U(n).U(c), [...bind, t], this.grid(n));
    return t;
  }

  layerNormBackwardWeightAcc(dgamma: Tensor, dbeta: Tensor, x: Tensor, mean: Tensor, rstd: Tensor, dy: Tensor): void {
    this.alive();
    const [n, c] = this.lnBackwardChecks(x, null, mean, rstd, dy);
    check1d('layerNormBackward dgamma', dgamma, c, `must be [${c}] (x has ${c} columns)`);
    check1d('layerNormBackward dbeta', dbeta, c, `must be [${c}] (x has ${c} columns)`);
    reduce.layerNormWeightAcc(
      this,
      this.f32('layerNormBackward dgamma', dgamma),
      this.f32('layerNormBackward dbeta', dbeta),
      this.f32('layerNormBackward x', x),
      this.f32('layerNormBackward mean', mean),
      this.f32('layerNormBackward rstd', rstd),
      this.f32('layerNormBackward dy', dy),
      n,
      c,
    );
  }

  // ------------------------------------------------------------------ embedding

  private checkIndices(field: string, idx: GpuTensor, V: number, k: number): void {
    checkDType('indices', idx, 'i32');
    const h = idx.host;
    if (!h) return;
    for (let i = 0; i < h.length; i++) {
      const v = h[i];
      if (v < 0 || v >= V) throw new ConfigError(`${field}[${Math.floor(i / k)}, ${i % k}]`, v, `must be in [0, ${V})`);
    }
  }

  embedding(table: Tensor, idx: Tensor): GpuTensor {
    this.alive();
    const [V, E] = check2d('embedding table', table);
    const [n, k] = check2d('embedding idx', idx);
    const T = this.f32('embedding table', table);
    const I = this.own('embedding idx', idx);
    this.checkIndices('embedding idx', I, V, k);
    const { t } = this.alloc([n, k * E], 'f32');
    this.run('embedding', K.embGather, Params.of().U(n * k).U(E).U(V), [null, T, I, t], this.grid2d(E, n * k));
    return t;
  }

  embeddingBackwardAcc(dTable: Tensor, idx: Tensor, dy: Tensor): void {
    this.alive();
    const [V, E] = check2d('embedding dTable', dTable);
    const [n, k] = check2d('embedding idx', idx);
    const [dn, dc] = check2d('embedding dy', dy);
    if (dn !== n || dc !== k * E) throw new ConfigError('embedding dy.shape', dy.shape, `must be [${n}, ${k * E}]`);
    const G = this.f32('embedding dTable', dTable);
    const I = this.own('embedding idx', idx);
    const D = this.f32('embedding dy', dy);
    this.checkIndices('embedding idx', I, V, k);
    // Thread (block, e) owns rows [block*rowsPerBlock, ...) of column e: race-free, no atomics.
    const target = this.isSoftware ? 64 : 4096;
    const blocks = Math.min(V, Math.max(1, Math.ceil(target / E)));
    const rowsPerBlock = Math.ceil(V / blocks);
    const used = Math.ceil(V / rowsPerBlock);
    this.run(
      'embeddingBackward',
      K.embScatterAcc,
      Params.of().U(n * k).U(E).U(V).U(rowsPerBlock).U(used),
      [null, D, I, G],
      this.grid(used * E),
    );
  }

  // ------------------------------------------------------------------ loss

  softmaxCrossEntropy(logits: Tensor, labels: Tensor, scale: number): { loss: GpuTensor; dlogits: GpuTensor } {
    this.alive();
    const [n, c] = check2d('softmaxCrossEntropy logits', logits);
    check1d('softmaxCrossEntropy labels', labels, n, `must be [${n}] (one label per logits row)`);
    checkFiniteNumber('softmaxCrossEntropy scale', scale);
    const L = this.f32('softmaxCrossEntropy logits', logits);
    const Y = this.own('softmaxCrossEntropy labels', labels);
    checkDType('indices', Y, 'i32');
    if (Y.host) {
      for (let i = 0; i < n; i++) {
        const y = Y.host[i];
        if (y !== IGNORE_LABEL && (y < 0 || y >= c)) throw new ConfigError(`softmaxCrossEntropy labels[${i}]`, y, `must be in [0, ${c})`);
      }
    }
    const dlogits = this.alloc([n, c], 'f32').t;
    const loss = this.alloc([1], 'f32').t;
    const rowLoss = this.temp(n * 4);
    const p = Params.of().U(n).U(c).F(scale);
    this.run('softmaxCrossEntropy', K.sxRows, p, [null, L, Y, dlogits, rowLoss], this.grid(n));
    this.run('softmaxCrossEntropy', K.sxReduce, p, [null, rowLoss, null, loss], [1]);
    this.stream.releaseAfterSubmit(rowLoss);
    return { loss, dlogits };
  }

  // ------------------------------------------------------------------ attention (attention-ops.ts)

  /** @internal What op modules launch kernels with. */
  private readonly opHost: attn.OpHost = {
    f32: (field, t) => (this.alive(), this.f32(field, t)),
    alloc: (shape) => this.alloc(shape, 'f32').t,
    launch: (op, spec, params, bindings, n) => this.run(op, spec, params, bindings, this.grid(n)),
  };
  attentionScores(qkv: Tensor, heads: number, T: number, scale: number): GpuTensor { return attn.attentionScores(this.opHost, qkv, heads, T, scale); }
  causalSoftmax(scores: Tensor): GpuTensor { return attn.causalSoftmax(this.opHost, scores); }
  causalSoftmaxBackward(probs: Tensor, dProbs: Tensor): GpuTensor { return attn.causalSoftmaxBackward(this.opHost, probs, dProbs); }
  attentionValues(probs: Tensor, qkv: Tensor, heads: number): GpuTensor { return attn.attentionValues(this.opHost, probs, qkv, heads); }
  attentionProbsGrad(qkv: Tensor, dy: Tensor, heads: number, T: number): GpuTensor { return attn.attentionProbsGrad(this.opHost, qkv, dy, heads, T); }
  attentionQkvGrad(qkv: Tensor, probs: Tensor, dScores: Tensor, dy: Tensor, heads: number, scale: number): GpuTensor {
    return attn.attentionQkvGrad(this.opHost, qkv, probs, dScores, dy, heads, scale);
  }
  add(a: Tensor, b: Tensor): GpuTensor { return attn.residualAdd(this.opHost, a, b); }

  // ------------------------------------------------------------------ mixture of experts (moe-ops.ts)

  /** @internal */
  private readonly moeHost: moe.MoeOpHost = {
    own: (field, t) => (this.alive(), this.own(field, t)),
    f32: (field, t) => (this.alive(), this.f32(field, t)),
    alloc: (shape, dtype) => this.alloc(shape, dtype).t,
    dispose: (t) => this.dispose(t),
    launch: (op, spec, params, bindings, n) => this.run(op, spec, params, bindings, n === null ? [1] : this.grid(n)),
  };
  softmaxRows(x: Tensor): GpuTensor { return moe.softmaxRows(this.moeHost, x); }
  softmaxRowsBackward(p: Tensor, dp: Tensor): GpuTensor { return moe.softmaxRowsBackward(this.moeHost, p, dp); }
  moeRoute(probs: Tensor, k: number, capacity: number): MoeRoute { return moe.moeRoute(this.moeHost, probs, k, capacity); }
  moeGates(probs: Tensor, sel: Tensor): GpuTensor { return moe.moeGates(this.moeHost, probs, sel); }
  moeGatesBackward(probs: Tensor, sel: Tensor, dGates: Tensor): GpuTensor { return moe.moeGatesBackward(this.moeHost, probs, sel, dGates); }
  moeAuxLoss(probs: Tensor, sel: Tensor): { loss: GpuTensor; dProbs: GpuTensor } { return moe.moeAuxLoss(this.moeHost, probs, sel); }
  moeDispatch(x: Tensor, rowToken: Tensor, k: number): GpuTensor { return moe.moeDispatch(this.moeHost, x, rowToken, k); }
  moeDispatchBackward(dxe: Tensor, slot: Tensor): GpuTensor { return moe.moeDispatchBackward(this.moeHost, dxe, slot); }
  moeCombine(ye: Tensor, slot: Tensor, gates: Tensor): GpuTensor { return moe.moeCombine(this.moeHost, ye, slot, gates); }
  moeCombineBackward(dy: Tensor, ye: Tensor, slot: Tensor, gates: Tensor, rowToken: Tensor): { dye: GpuTensor; dGates: GpuTensor } {
    return moe.moeCombineBackward(this.moeHost, dy, ye, slot, gates, rowToken);
  }
  groupedMatmul(a: Tensor, b: Tensor, groups: number, opts: MatmulOptions = {}): GpuTensor { return moe.groupedMatmul(this.moeHost, null, a, b, groups, opts); }
  groupedMatmulAcc(out: Tensor, a: Tensor, b: Tensor, groups: number, opts: MatmulOptions = {}): void {
    moe.groupedMatmul(this.moeHost, this.moeHost.f32('groupedMatmul out', out), a, b, groups, opts);
  }

  // ------------------------------------------------------------------ arithmetic

  axpy(y: Tensor, x: Tensor, alpha: number): void {
    this.alive();
    checkSameShape('axpy x', x, y, 'y');
    const Y = this.f32('axpy y', y);
    const X = this.f32('axpy x', x);
    this.run('axpy', K.axpy, Params.of().U(Y.size).U(0).U(0).U(0).F(alpha), [null, X, null, Y], this.grid(Y.size));
  }

  scale(t: Tensor, alpha: number): void {
    this.alive();
    const T = this.f32('scale tensor', t);
    this.run('scale', K.scale, Params.of().U(T.size).U(0).U(0).U(0).F(alpha), [null, null, null, T], this.grid(T.size));
  }

  // ------------------------------------------------------------------ optimizers

  sgdStep(param: Tensor, grad: Tensor, velocity: Tensor, o: SgdOptions): void {
    this.alive();
    checkSameShape('sgd grad', grad, param, 'param');
    checkSameShape('sgd velocity', velocity, param, 'param');
    const P = this.f32('sgd param', param);
    const G = this.f32('sgd grad', grad);
    const V = this.f32('sgd velocity', velocity);
    const p = Params.of().U(P.size).F(o.lr).F(o.momentum).F(o.weightDecay).F(o.gradScale);
    this.run('sgdStep', K.sgd, p, [null, G, P, V], this.grid(P.size));
  }

  adamwStep(param: Tensor, grad: Tensor, m: Tensor, v: Tensor, o: AdamWOptions): void {
    this.alive();
    checkSameShape('adamw grad', grad, param, 'param');
    checkSameShape('adamw m', m, param, 'param');
    checkSameShape('adamw v', v, param, 'param');
    const P = this.f32('adamw param', param);
    const G = this.f32('adamw grad', grad);
    const M1 = this.f32('adamw m', m);
    const M2 = this.f32('adamw v', v);
    const bc1 = 1 - Math.pow(o.beta1, o.step);
    const bc2 = 1 - Math.pow(o.beta2, o.step);
    const p = Params.of()
      .U(P.size)
      .F(o.lr)
      .F(o.beta1)
      .F(o.beta2)
      .F(o.eps)
      .F(1 - o.lr * o.weightDecay)
      .F(o.gradScale)
      .F(bc1)
      .F(bc2)
      .F(1 - o.beta1)
      .F(1 - o.beta2);
    this.run('adamwStep', K.adamw, p, [null, G, P, M1, M2], this.grid(P.size));
  }

  // ------------------------------------------------------------------ memory roles and freed storage (nn/memory-ledger.ts)

  tag(t: Tensor, kind: MemoryKind): void {
    const g = this.own('tag tensor', t);
    this.memory.retag(g.buf!, kind);
  }

  freeStorage(t: Tensor): void {
    if (!(t instanceof GpuTensor) || t.owner !== this) throw new ConfigError('freeStorage tensor', describeTensor(t), 'must be a tensor created by this GPU backend');
    if (t.storageFreed) return;
    const buf = this.own('freeStorage tensor', t).buf!;
    t.buf = null;
    t.storageFreed = true;
    this.liveByteCount -= buf.size;
    if (this.destroyed) return;
    this.stream.releaseAfterSubmit(buf);
  }

  allocStorage(t: Tensor, kind: MemoryKind): void {
    this.alive();
    if (!(t instanceof GpuTensor) || t.owner !== this) throw new ConfigError('allocStorage tensor', describeTensor(t), 'must be a tensor created by this GPU backend');
    if (!t.storageFreed) throw new ConfigError('allocStorage tensor', `[${t.shape.join(', ')}]`, 'already has storage (allocStorage follows freeStorage)');
    const { buffer } = this.pool.acquire(t.byteLength, this.usageStorage, undefined, kind);
    t.buf = buffer;
    t.storageFreed = false;
    this.liveByteCount += buffer.size;
  }

  hasStorage(t: Tensor): boolean {
    return t instanceof GpuTensor && t.buf !== null;
  }
}
