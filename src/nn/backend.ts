/**
 * The contract every compute backend keeps: the float64 CPU reference
 * (cpu-backend.ts) and the WebGPU backend (src/gpu/gpu-backend.ts).
 *
 * Layers are written once against this interface, so the reference and the GPU
 * run the same model code. Ops return new tensors or accumulate into a given
 * one (`...Acc`: out += result), which is how weight gradients sum over the
 * micro-batches of a step. Ops are issued synchronously; a GPU backend may
 * queue them and only `read` (or `sync`) waits.
 *
 * Layout: row-major. Activations are [rows, cols]; biases, LayerNorm gamma and
 * beta are [cols]; labels are i32 [rows]; embedding indices are i32 [rows, k].
 */
import type { MemoryKind, MemoryLedger } from './memory-ledger.ts';

export type DType = 'f32' | 'i32';

export interface Tensor {
  readonly shape: readonly number[];
  readonly dtype: DType;
  /** Number of elements. */
  readonly size: number;
}

export type Activation = 'relu' | 'gelu' | 'tanh' | 'identity';
export const ACTIVATIONS: readonly Activation[] = ['relu', 'gelu', 'tanh', 'identity'];

export interface MatmulOptions {
  /** Use Aᵀ: a is [K, M]. */
  transA?: boolean;
  /** Use Bᵀ: b is [N, K]. */
  transB?: boolean;
}

export interface SgdOptions {
  lr: number;
  momentum: number;
  weightDecay: number;
  /** Gradients are multiplied by this before use (e.g. 1 / accumulation count). */
  gradScale: number;
}

export interface AdamWOptions {
  lr: number;
  beta1: number;
  beta2: number;
  eps: number;
  weightDecay: number;
  /** 1-based step count, for bias correction. */
  step: number;
  gradScale: number;
}

export interface LayerNormOut {
  y: Tensor;
  /** Per-row mean, [rows]. */
  mean: Tensor;
  /** Per-row 1 / sqrt(var + eps), [rows]. */
  rstd: Tensor;
}

/** A group's routing decisions (moe/moe-shapes.ts): computed where the probabilities are (no read). */
export interface MoeRoute {
  /** [S, k]: each token's experts, best first. */
  sel: Tensor;
  /** [S, k]: the experts' buffer row of each choice, −1 when over capacity. */
  slot: Tensor;
  /** [E·cap]: s·k + j of the choice holding each row, −1 when empty. */
  rowToken: Tensor;
  /**
   * f32 [E, 3]: per expert, the tokens whose first choice it is, whose second choice it is, and its choices dropped
   * for capacity (counted by the capacity pass; f32, exact below 2²⁴, so it is read in one buffer with the aux loss).
   */
  load: Tensor;
}

export interface Backend {
  readonly name: string;

  // --- memory ---
  tensor(data: ArrayLike<number>, shape: readonly number[], dtype?: DType): Tensor;
  zeros(shape: readonly number[], dtype?: DType): Tensor;
  clone(t: Tensor): Tensor;
  fill(t: Tensor, value: number): void;
  /** Copies src's values into dst (same size), or with `dstOffset` into dst's elements dstOffset .. dstOffset + src.size − 1. */
  copyInto(dst: Tensor, src: Tensor, dstOffset?: number): void;
  read(t: Tensor): Promise<Float32Array | Float64Array | Int32Array>;
  /** Several tensors read at once (a GPU: one staging buffer, one wait); absent: a read of each. */
  readMany?(ts: readonly Tensor[]): Promise<(Float32Array | Float64Array | Int32Array)[]>;
  dispose(t: Tensor): void;
  /** The count of this backend's buffers by kind (memory-ledger.ts): every allocation and release reports here. */
  readonly memory: MemoryLedger;
  /** Counts `t` as holding `kind` from now on (a weight, a gradient, optimizer state, a stash...). */
  tag(t: Tensor, kind: MemoryKind): void;
  /**
   * Releases t's storage but keeps the tensor (FSDP's free_storage): an op given it before `allocStorage`
   * throws, naming it. Freeing twice is harmless.
   */
  freeStorage(t: Tensor): void;
  /** Gives t storage again, counted as `kind` (its values are undefined until written: zeros on the CPU). */
  allocStorage(t: Tensor, kind: MemoryKind): void;
  /** Whether t has storage (false after freeStorage, until allocStorage). */
  hasStorage(t: Tensor): boolean;
  /** Submits queued work (GPU); no-op on CPU. */
  flush(): void;
  /** Resolves when all issued work has finished. */
  sync(): Promise<void>;
  /**
   * Backends that compile kernels (GPU): compiles exactly the kernels `dry`
   * would run, asynchronously, calling `dry` once with nothing computed (its
   * outputs hold no meaningful values). Absent where nothing is compiled (CPU).
   */
  compileUsed?(dry: () => void | Promise<void>): Promise<{ kernels: number; compiled: number }>;

  // --- matmul: C = op(A)·op(B) ---
  matmul(a: Tensor, b: Tensor, opts?: MatmulOptions): Tensor;
  matmulAcc(out: Tensor, a: Tensor, b: Tensor, opts?: MatmulOptions): void;

  // --- bias ---
  /** x [n, d] + bias [d]. */
  biasAdd(x: Tensor, bias: Tensor): Tensor;
  /** out[d] += Σ_rows dy[row, d]. */
  colSumAcc(out: Tensor, dy: Tensor): void;

  // --- activations (backward takes the pre-activation input) ---
  activation(kind: Activation, x: Tensor): Tensor;
  activationBackward(kind: Activation, x: Tensor, dy: Tensor): Tensor;

  // --- LayerNorm over the last axis ---
  layerNorm(x: Tensor, gamma: Tensor, beta: Tensor, eps: number): LayerNormOut;
  layerNormBackwardInput(x: Tensor, gamma: Tensor, mean: Tensor, rstd: Tensor, dy: Tensor): Tensor;
  /** dgamma += Σ dy·x̂, dbeta += Σ dy. */
  layerNormBackwardWeightAcc(dgamma: Tensor, dbeta: Tensor, x: Tensor, mean: Tensor, rstd: Tensor, dy: Tensor): void;

  // --- embedding ---
  /** table [V, E], idx i32 [n, k] -> [n, k·E] (the k embeddings side by side). */
  embedding(table: Tensor, idx: Tensor): Tensor;
  /** dTable[idx[r, j], :] += dy[r, j·E : (j+1)·E]. */
  embeddingBackwardAcc(dTable: Tensor, idx: Tensor, dy: Tensor): void;

  // --- loss ---
  /**
   * Numerically stable softmax cross-entropy fused with its gradient.
   * loss [1] = scale · Σ_rows −log softmax(logits)[label];
   * dlogits = scale · (softmax − onehot(label)). scale = 1/batch gives the mean.
   * A label of IGNORE_LABEL (−1, a padded target) adds no loss and a zero gradient row.
   */
  softmaxCrossEntropy(logits: Tensor, labels: Tensor, scale: number): { loss: Tensor; dlogits: Tensor };

  // --- causal multi-head self-attention (see attention-shapes.ts for the layouts) ---
  /**
   * qkv [B·T, 3C] (per row q | k | v; head h owns columns h·D .. h·D+D−1 of each, D = C / heads)
   * → scores [B·H·T, T]: scale · q_t · k_j for j ≤ t, 0 above the diagonal (masked).
   */
  attentionScores(qkv: Tensor, heads: number, T: number, scale: number): Tensor;
  /** Row softmax of scores [B·H·T, T] over j ≤ t (t = row mod T), numerically stable; masked entries 0. */
  causalSoftmax(scores: Tensor): Tensor;
  /** dScores = P ⊙ (dP − Σ_j P·dP) over j ≤ t; masked entries 0. */
  causalSoftmaxBackward(probs: Tensor, dProbs: Tensor): Tensor;
  /** y [B·T, C]: y[b, t, h·D+d] = Σ_{j ≤ t} P[b, h, t, j] · v[b, j, h·D+d]. */
  attentionValues(probs: Tensor, qkv: Tensor, heads: number): Tensor;
  /** dP [B·H·T, T] = dy_t · v_j per head for j ≤ t, 0 above the diagonal. */
  attentionProbsGrad(qkv: Tensor, dy: Tensor, heads: number, T: number): Tensor;
  /** dqkv [B·T, 3C]: dq = scale·dS·k, dk = scale·dSᵀ·q, dv = Pᵀ·dy, per head. */
  attentionQkvGrad(qkv: Tensor, probs: Tensor, dScores: Tensor, dy: Tensor, heads: number, scale: number): Tensor;
  /** a + b (same shape): the residual add; its backward is the gradient split (dy goes to both). */
  add(a: Tensor, b: Tensor): Tensor;

  // --- mixture of experts (layouts and rules: moe/moe-shapes.ts; reference: moe/moe-reference.ts) ---
  /** Softmax of each row of x [n, c]. */
  softmaxRows(x: Tensor): Tensor;
  /** dx = p ⊙ (dp − Σ_j p·dp) per row. */
  softmaxRowsBackward(p: Tensor, dp: Tensor): Tensor;
  /** Top-k choices of probs [S, E] (ties to the lower expert) and their rows within `capacity` per expert, in token order, first choices first. */
  moeRoute(probs: Tensor, k: number, capacity: number): MoeRoute;
  /** Gates [S, k]: top-1 the chosen probability; top-2 each over the two's sum. */
  moeGates(probs: Tensor, sel: Tensor): Tensor;
  /** dprobs [S, E] from dgates [S, k]. */
  moeGatesBackward(probs: Tensor, sel: Tensor, dGates: Tensor): Tensor;
  /** The load-balancing loss E·Σ_e f_e·P_e [1] (f from the first choices) and its gradient with respect to probs. */
  moeAuxLoss(probs: Tensor, sel: Tensor): { loss: Tensor; dProbs: Tensor };
  /** xe [E·cap, C]: each row its token's row of x [S, C] (k: choices per token), zero when empty. */
  moeDispatch(x: Tensor, rowToken: Tensor, k: number): Tensor;
  /** dx [S, C] = Σ_j dxe[slot[s, j]] over the kept choices. */
  moeDispatchBackward(dxe: Tensor, slot: Tensor): Tensor;
  /** y [S, C] = Σ_j gates[s, j]·ye[slot[s, j]] over the kept choices. */
  moeCombine(ye: Tensor, slot: Tensor, gates: Tensor): Tensor;
  /** dye [E·cap, C] (gate·dy of the row's token) and dgates [S, k] (dy·ye of the choice's row; 0 when dropped). */
  moeCombineBackward(dy: Tensor, ye: Tensor, slot: Tensor, gates: Tensor, rowToken: Tensor): { dye: Tensor; dGates: Tensor };
  /** The experts' matmuls: a's and b's rows in `groups` equal parts; part g of the result is op(a_g)·op(b_g). */
  groupedMatmul(a: Tensor, b: Tensor, groups: number, opts?: MatmulOptions): Tensor;
  groupedMatmulAcc(out: Tensor, a: Tensor, b: Tensor, groups: number, opts?: MatmulOptions): void;

  // --- arithmetic for accumulation and scaling ---
  /** y += alpha · x. */
  axpy(y: Tensor, x: Tensor, alpha: number): void;
  scale(t: Tensor, alpha: number): void;

  // --- optimizers, in place ---
  /** v = momentum·v + (gradScale·g + wd·p); p -= lr·v. */
  sgdStep(param: Tensor, grad: Tensor, velocity: Tensor, o: SgdOptions): void;
  /**
   * g' = gradScale·g; m = β1 m + (1−β1) g'; v = β2 v + (1−β2) g'²;
   * p = p·(1 − lr·wd) − lr · (m / (1−β1^t)) / (sqrt(v / (1−β2^t)) + eps).
   */
  adamwStep(param: Tensor, grad: Tensor, m: Tensor, v: Tensor, o: AdamWOptions): void;
}

/** GELU, tanh approximation (PyTorch's approximate='tanh'); WGSL has no erf. */
export const GELU_C = Math.sqrt(2 / Math.PI);
export const GELU_K = 0.044715;

/** The label of a padded target: no loss, no gradient (defined with the data's Examples). */
export { IGNORE_LABEL } from '../data/examples.ts';
