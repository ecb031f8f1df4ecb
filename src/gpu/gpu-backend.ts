/**
 * The WebGPU implementation of the Backend contract (src/nn/backend.ts): every
 * op is a WGSL kernel from shaders/, queued in one command encoder and
 * submitted lazily (flush / read / sync). Checked op by op against the float64
 * CpuBackend in ops.test.ts and matmul.test.ts.
 *
 *   const gpu = await GpuBackend.create({ autotune: true });
 *   const c = gpu.matmul(a, b, { transB: true });
 *   const values = await gpu.read(c);
 *   gpu.destroy();
 *
 * Works in a page or a worker (navigator.gpu) and in Node with Dawn (pass
 * `gpu`, see testing/node-gpu.ts).
 */
import { ConfigError, requireOneOf } from '../util/errors.ts';
import { ACTIVATIONS, IGNORE_LABEL } from '../nn/backend.ts';
import type { Activation, AdamWOptions, Backend, DType, LayerNormOut, MatmulOptions, SgdOptions, Tensor } from '../nn/backend.ts';
import { check1d, check2d, checkDType, checkFiniteNumber, checkSameShape, checkShape, matmulDims } from '../nn/shapes.ts';
import { BufferPool, type PoolStats } from './buffer-pool.ts';
import { acquireDevice, DeviceLostError, type AcquiredDevice, type AdapterSummary } from './device.ts';
import { CommandStream, type Groups } from './launch.ts';
import { DEFAULT_MATMUL_VARIANT, findMatmulVariant, K, MATMUL_VARIANTS, matmulSpec, WG1D, type MatmulVariant } from './kernels.ts';
import { PipelineCache, type KernelSpec } from './pipelines.ts';
import { GpuTimer, type GpuSpan, type SpanResult } from './timing.ts';
import * as attn from './attention-ops.ts';

export type MatmulForm = 'NN' | 'NT' | 'TN' | 'TT';
export const MATMUL_FORMS: readonly MatmulForm[] = ['NN', 'NT', 'TN', 'TT'];

export function matmulForm(opts: MatmulOptions = {}): MatmulForm {
  return `${opts.transA ? 'T' : 'N'}${opts.transB ? 'T' : 'N'}` as MatmulForm;
}

export interface AutotuneOptions {
  /** Problem sizes [M, N, K] to time; the variant with the least total time wins. Default [[256, 256, 256]]. */
  sizes?: readonly (readonly [number, number, number])[];
  /** Timed repeats per variant and size (median kept). Default 3. */
  repeats?: number;
  /** Variant names to try. Default: every variant except 'naive', and on a software adapter (SwiftShader: barriers are emulated) no shared-memory ones. */
  candidates?: readonly string[];
  /** Forms tuned separately; the others take the NN winner. Default ['NN'] (pipeline compiles dominate on software adapters). */
  forms?: readonly MatmulForm[];
  /** A candidate whose warm-up run is this many times slower than the best so far is not timed further. Default 3. */
  skipFactor?: number;
}

export interface AutotuneTiming {
  variant: string;
  /** Median milliseconds per size, in the order of `sizes`. */
  ms: number[];
  /** GFLOP/s over all sizes (total flops / total median time). */
  gflops: number;
  /** Only the warm-up run was timed (it was far slower than the best). */
  skipped: boolean;
}

export interface AutotuneReport {
  sizes: [number, number, number][];
  timingSource: SpanResult['source'];
  forms: { form: MatmulForm; winner: string; gflops: number; timings: AutotuneTiming[] }[];
  /** Time spent compiling the candidates' pipelines, and in all. */
  compileMs: number;
  totalMs: number;
}

export interface GpuBackendOptions {
  /** The GPU object to use; default navigator.gpu (page or worker). */
  gpu?: GPU;
  /** Time the matmul variants at start-up and keep the fastest per form. Off: the deterministic default (reg4x4), or `matmulVariant`. */
  autotune?: boolean | AutotuneOptions;
  /** Force one matmul variant for every form (see MATMUL_VARIANTS). */
  matmulVariant?: string;
  /** Use timestamp-query for timing when the adapter has it (default true). */
  timestamps?: boolean;
  /** Called once when the device is lost (not after destroy()). */
  onLost?: (message: string) => void;
  /** Free pooled buffers beyond this many bytes are destroyed. Default 512 MiB. */
  maxPooledBytes?: number;
  /** Dispatches per submitted batch at most (uniform ring slots). Default 1024. */
  uniformSlots?: number;
}

export interface GpuStats {
  /** Tensors created and not disposed, and their buffers' bytes: what a leak check counts. */
  liveBuffers: number;
  liveBytes: number;
  /** The pool: every GPU buffer (tensors, temporaries in flight, free ones kept for reuse). */
  pool: PoolStats;
  pipelines: number;
  submits: number;
  dispatches: number;
}

export class GpuTensor implements Tensor {
  /** @internal */ buf: GPUBuffer | null;
  /** For i32 tensors: a host copy of the values (i32 tensors change only through tensor/zeros/fill/copyInto). */
  /** @internal */ host: Int32Array | null = null;
  readonly size: number;

  /** @internal */
  constructor(
    readonly shape: readonly number[],
    readonly dtype: DType,
    buf: GPUBuffer,
    /** @internal */ readonly owner: GpuBackend,
  ) {
    this.buf = buf;
    this.size = shape.reduce((a, b) => a * b, 1);
  }

  get disposed(): boolean {
    return this.buf === null;
  }

  get byteLength(): number {
    return this.size * 4;
  }
}

/** Builds a kernel's uniform params: 32-bit words in the order of the WGSL struct's fields. */
class Params {
  private readonly u = new Uint32Array(64);
  private readonly f = new Float32Array(this.u.buffer);
  private n = 0;
  static of(): Params {
    return new Params();
  }
  U(v: number): this {
    this.u[this.n++] = v >>> 0;
    return this;
  }
  F(v: number): this {
    this.f[this.n++] = v;
    return this;
  }
  bytes(): Uint8Array {
    return new Uint8Array(this.u.buffer, 0, Math.max(16, Math.ceil(this.n / 4) * 16));
  }
}

type Binding = GpuTensor | GPUBuffer | null;

function ceil4(n: number): number {
  return Math.ceil(n / 4) * 4;
}

function f32Bits(v: number): number {
  const f = new Float32Array([v]);
  return new Uint32Array(f.buffer)[0];
}

const SOFTWARE_ARCHITECTURES = ['swiftshader', 'llvmpipe', 'lavapipe', 'warp'];

export class GpuBackend implements Backend {
  readonly name = 'webgpu';
  readonly device: GPUDevice;
  readonly adapterInfo: AdapterSummary;
  /** True when spans are timed with timestamp queries. */
  readonly hasTimestamps: boolean;
  /** True on a software adapter (SwiftShader, llvmpipe, WARP). */
  readonly isSoftware: boolean;
  /** Resolves with a readable message when the device is lost (also after destroy()). */
  readonly lost: Promise<string>;
  /** The report of the start-up autotune, when it ran. */
  autotuneReport: AutotuneReport | null = null;

  private readonly pool: BufferPool;
  private readonly pipelines: PipelineCache;
  private readonly stream: CommandStream;
  private readonly timer: GpuTimer;
  private readonly choice: Record<MatmulForm, MatmulVariant>;
  private liveCount = 0;
  private liveByteCount = 0;
  private lostMessage: string | null = null;
  private destroyed = false;
  private readonly errors: string[] = [];
  private readonly usageStorage: number;
  /** Cap on the workgroups of the elementwise (grid-stride) kernels. */
  private readonly maxGroups: number;

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
    this.device = acq.device;
    this.adapterInfo = acq.adapterInfo;
    this.hasTimestamps = acq.hasTimestamps && opts.timestamps !== false;
    const arch = `${acq.adapterInfo.architecture} ${acq.adapterInfo.description}`.toLowerCase();
    this.isSoftware = SOFTWARE_ARCHITECTURES.some((s) => arch.includes(s));
    this.maxGroups = this.isSoftware ? 256 : 16384;
    this.usageStorage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;
    this.pool = new BufferPool(this.device, opts.maxPooledBytes);
    this.pipelines = new PipelineCache(this.device);
    this.stream = new CommandStream(this.device, this.pool, opts.uniformSlots ?? 1024);
    this.timer = new GpuTimer(this.device, this.stream, this.pool, this.hasTimestamps);
    let fixed = findMatmulVariant(DEFAULT_MATMUL_VARIANT)!;
    if (opts.matmulVariant !== undefined) {
      const v = findMatmulVariant(opts.matmulVariant);
      if (!v) throw new ConfigError('matmulVariant', opts.matmulVariant, `must be one of ${MATMUL_VARIANTS.map((x) => x.name).join(', ')}`);
      fixed = v;
    }
    this.choice = { NN: fixed, NT: fixed, TN: fixed, TT: fixed };
    this.lost = acq.lost.then(({ message, reason }) => {
      this.lostMessage = message;
      if (reason !== 'destroyed') opts.onLost?.(message);
      return message;
    });
    this.device.addEventListener('uncapturederror', (ev) => {
      const e = (ev as GPUUncapturedErrorEvent).error;
      if (this.errors.length < 16) this.errors.push(e?.message ?? String(e));
    });
  }

  // ------------------------------------------------------------------ plumbing

  private alive(): void {
    if (this.destroyed) throw new Error('GpuBackend used after destroy()');
    if (this.lostMessage) throw new DeviceLostError(this.lostMessage);
  }

  private throwGpuErrors(): void {
    if (this.errors.length) {
      const msgs = this.errors.splice(0);
      throw new Error(`WebGPU reported: ${msgs.join(' | ')}`);
    }
  }

  private own(field: string, t: Tensor): GpuTensor {
    if (!(t instanceof GpuTensor) || t.owner !== this) throw new ConfigError(field, describe(t), 'must be a tensor created by this GPU backend');
    if (t.buf === null) throw new ConfigError(field, `[${t.shape.join(', ')}] ${t.dtype}`, 'was disposed and must not be used any more');
    return t;
  }

  private f32(field: string, t: Tensor): GpuTensor {
    const g = this.own(field, t);
    checkDType(field, g, 'f32');
    return g;
  }

  private alloc(shape: readonly number[], dtype: DType): { t: GpuTensor; fresh: boolean } {
    const n = shape.reduce((a, b) => a * b, 1);
    const { buffer, fresh } = this.pool.acquire(n * 4, this.usageStorage);
    const t = new GpuTensor([...shape], dtype, buffer, this);
    this.liveCount++;
    this.liveByteCount += buffer.size;
    return { t, fresh };
  }

  private temp(bytes: number): GPUBuffer {
    return this.pool.acquire(bytes, this.usageStorage).buffer;
  }

  /**
   * Workgroups for a grid-stride kernel over n items: one item per thread up
   * to a cap (software adapters run few big workgroups faster than many).
   */
  private grid(n: number): Groups {
    return [Math.max(1, Math.min(Math.ceil(n / WG1D), this.maxGroups))];
  }

  /** A 2-D grid for [rows, cols] kernels: x over columns (WG1D each), y over rows; both stride beyond. */
  private grid2d(cols: number, rows: number): Groups {
    const x = Math.max(1, Math.min(Math.ceil(cols / WG1D), this.maxGroups));
    const y = Math.max(1, Math.min(rows, Math.floor(this.maxGroups / x), 65535));
    return [x, y];
  }

  /**
   * Dispatches `spec`. bindings[i] goes to binding i (i >= 1). A buffer bound
   * both read-only and writable (an op given the same tensor twice) is read
   * from a copy; one bound writable twice is refused.
   */
  private run(op: string, spec: KernelSpec, params: Params | Uint8Array | null, bindings: readonly Binding[], groups: Groups): void {
    const bufs: (GPUBuffer | null)[] = bindings.map((b) => (b === null ? null : b instanceof GpuTensor ? b.buf : b));
    const written = new Set<GPUBuffer>();
    spec.bindings.forEach((kind, i) => {
      const b = bufs[i];
      if (kind === 'rw' && b) {
        if (written.has(b)) throw new ConfigError(`${op} outputs`, 'the same tensor twice', 'must be distinct tensors');
        written.add(b);
      }
    });
    const temps: GPUBuffer[] = [];
    spec.bindings.forEach((kind, i) => {
      const b = bufs[i];
      if (kind === 'read' && b && written.has(b)) {
        const copy = this.temp(b.size);
        this.stream.copy(b, 0, copy, 0, b.size);
        bufs[i] = copy;
        temps.push(copy);
      }
    });
    const k = this.pipelines.get(spec);
    this.stream.dispatch(k, params ? (params instanceof Uint8Array ? params : params.bytes()) : null, bufs, groups);
    for (const t of temps) this.stream.releaseAfterSubmit(t);
  }

  // ------------------------------------------------------------------ memory

  tensor(data: ArrayLike<number>, shape: readonly number[], dtype: DType = 'f32'): GpuTensor {
    this.alive();
    const n = checkShape('tensor shape', shape);
    requireOneOf('tensor dtype', dtype, ['f32', 'i32'] as const);
    if (data.length !== n) throw new ConfigError('tensor data.length', data.length, `must equal the product of shape [${shape.join(', ')}] = ${n}`);
    const arr = dtype === 'i32' ? Int32Array.from(data) : Float32Array.from(data);
    const { t } = this.alloc(shape, dtype);
    // Safe: a pooled buffer is never one that unsubmitted commands still use (see launch.ts).
    this.device.queue.writeBuffer(t.buf!, 0, arr.buffer, arr.byteOffset, arr.byteLength);
    if (dtype === 'i32') t.host = arr as Int32Array;
    return t;
  }

  zeros(shape: readonly number[], dtype: DType = 'f32'): GpuTensor {
    this.alive();
    checkShape('tensor shape', shape);
    requireOneOf('tensor dtype', dtype, ['f32', 'i32'] as const);
    const { t, fresh } = this.alloc(shape, dtype);
    if (!fresh) this.stream.clear(t.buf!, 0, t.byteLength);
    if (dtype === 'i32') t.host = new Int32Array(t.size);
    return t;
  }

  clone(src: Tensor): GpuTensor {
    this.alive();
    const s = this.own('clone src', src);
    const { t } = this.alloc(s.shape, s.dtype);
    this.stream.copy(s.buf!, 0, t.buf!, 0, s.byteLength);
    if (s.host) t.host = s.host.slice();
    return t;
  }

  fill(t: Tensor, value: number): void {
    this.alive();
    // Like the CPU reference, any number goes (NaN and ±Infinity too; i32 truncates).
    const g = this.own('fill tensor', t);
    const bits = g.dtype === 'i32' ? value | 0 : f32Bits(value);
    this.run('fill', K.fill, Params.of().U(g.size).U(0).U(bits), [null, null, null, g], this.grid(g.size));
    if (g.host) g.host.fill(value | 0);
  }

  copyInto(dst: Tensor, src: Tensor): void {
    this.alive();
    const d = this.own('copyInto dst', dst);
    const s = this.own('copyInto src', src);
    if (d.size !== s.size) throw new ConfigError('copyInto dst.size', d.size, `must equal src.size = ${s.size}`);
    if (d.dtype !== s.dtype) throw new ConfigError('copyInto dst.dtype', d.dtype, `must equal src.dtype = ${s.dtype}`);
    if (d === s) return;
    this.stream.copy(s.buf!, 0, d.buf!, 0, s.byteLength);
    if (d.dtype === 'i32') d.host = s.host ? s.host.slice() : null;
  }

  async read(t: Tensor): Promise<Float32Array | Int32Array> {
    this.alive();
    const g = this.own('read tensor', t);
    const bytes = g.byteLength;
    const staging = this.pool.acquire(bytes, GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST).buffer;
    this.stream.copy(g.buf!, 0, staging, 0, bytes);
    const dtype = g.dtype;
    this.stream.flush();
    try {
      await this.raceLost(staging.mapAsync(GPUMapMode.READ, 0, bytes));
      const copy = staging.getMappedRange(0, bytes).slice(0);
      staging.unmap();
      this.throwGpuErrors();
      return dtype === 'i32' ? new Int32Array(copy) : new Float32Array(copy);
    } finally {
      if (!this.destroyed) this.pool.release(staging);
    }
  }

  dispose(t: Tensor): void {
    if (!(t instanceof GpuTensor) || t.owner !== this) throw new ConfigError('dispose tensor', describe(t), 'must be a tensor created by this GPU backend');
    const buf = t.buf;
    if (buf === null) return; // disposing twice is harmless
    t.buf = null;
    t.host = null;
    this.liveCount--;
    this.liveByteCount -= buf.size;
    if (this.destroyed) return;
    // Commands already encoded may still use the buffer: it reaches the pool after their submit.
    this.stream.releaseAfterSubmit(buf);
  }

  flush(): void {
    if (this.destroyed || this.lostMessage) return;
    this.stream.flush();
  }

  async sync(): Promise<void> {
    this.alive();
    this.stream.flush();
    await this.raceLost(this.device.queue.onSubmittedWorkDone());
    this.throwGpuErrors();
  }

  private async raceLost<T>(p: Promise<T>): Promise<T> {
    const lost = this.lost.then((m): never => {
      throw new DeviceLostError(m);
    });
    return Promise.race([p, lost]);
  }

  /** Live tensors (a leak check counts these) and the pool's numbers. */
  stats(): GpuStats {
    const s = this.stream.stats();
    return {
      liveBuffers: this.liveCount,
      liveBytes: this.liveByteCount,
      pool: this.pool.stats(),
      pipelines: this.pipelines.size,
      submits: s.submits,
      dispatches: s.dispatches,
    };
  }

  /** Destroys the free pooled buffers (live tensors are kept). */
  trimPool(): void {
    this.stream.flush();
    this.pool.trim();
  }

  /** Frees every buffer and destroys the device. Tensors of this backend are unusable afterwards. */
  destroy(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    this.stream.destroy();
    this.pool.destroy();
    this.pipelines.clear();
    this.device.destroy();
  }

  /** The adapter in words, e.g. "google swiftshader (SwiftShader Device (Subzero))". */
  adapterDescription(): string {
    const i = this.adapterInfo;
    const head = [i.vendor, i.architecture].filter(Boolean).join(' ') || 'unknown adapter';
    const tail = i.description || i.device;
    return tail ? `${head} (${tail})` : head;
  }

  get isDestroyed(): boolean {
    return this.destroyed;
  }

  // ------------------------------------------------------------------ timing

  /** Starts timing a span of ops; `await span.end()` gives its GPU time (timestamp-query, or wall time). */
  beginTiming(): GpuSpan {
    this.alive();
    return this.timer.begin();
  }

  /** Times the ops `fn` issues. */
  async time<T>(fn: () => T): Promise<SpanResult & { result: T }> {
    const span = this.beginTiming();
    const result = fn();
    const r = await span.end();
    this.throwGpuErrors();
    return { ...r, result };
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
    return { NN: this.choice.NN.name, NT: this.choice.NT.name, TN: this.choice.TN.name, TT: this.choice.TT.name };
  }

  /** Uses variant `name` for the given forms (default all). */
  setMatmulVariant(name: string, forms: readonly MatmulForm[] = MATMUL_FORMS): void {
    const v = findMatmulVariant(name);
    if (!v) throw new ConfigError('matmulVariant', name, `must be one of ${MATMUL_VARIANTS.map((x) => x.name).join(', ')}`);
    for (const f of forms) this.choice[f] = v;
  }

  /** matmul with an explicit variant (null: the current choice for the form). */
  matmulWith(variant: string | null, a: Tensor, b: Tensor, opts: MatmulOptions = {}): GpuTensor {
    this.alive();
    const [M, N] = matmulDims(a, b, opts);
    this.f32('matmul a', a);
    this.f32('matmul b', b);
    const { t } = this.alloc([M, N], 'f32');
    this.encodeMatmul(variant, t, a as GpuTensor, b as GpuTensor, opts, false);
    return t;
  }

  matmulAccWith(variant: string | null, out: Tensor, a: Tensor, b: Tensor, opts: MatmulOptions = {}): void {
    this.alive();
    const [M, N] = matmulDims(a, b, opts);
    const o = this.f32('matmul out', out);
    if (o.shape.length !== 2 || o.shape[0] !== M || o.shape[1] !== N) {
      throw new ConfigError('matmul out.shape', o.shape, `must be [${M}, ${N}]`);
    }
    this.f32('matmul a', a);
    this.f32('matmul b', b);
    this.encodeMatmul(variant, o, a as GpuTensor, b as GpuTensor, opts, true);
  }

  private encodeMatmul(variant: string | null, out: GpuTensor, a: GpuTensor, b: GpuTensor, opts: MatmulOptions, acc: boolean): void {
    const [M, N, Kd] = matmulDims(a, b, opts);
    const transA = !!opts.transA;
    const transB = !!opts.transB;
    let v: MatmulVariant;
    if (variant === null) v = this.choice[matmulForm(opts)];
    else {
      const f = findMatmulVariant(variant);
      if (!f) throw new ConfigError('matmulVariant', variant, `must be one of ${MATMUL_VARIANTS.map((x) => x.name).join(', ')}`);
      v = f;
    }
    const [ar, ac] = a.shape;
    const [br, bc] = b.shape;
    const spec = matmulSpec(v, transA, transB);
    let groups: [number, number];
    if (v.kind === 'reg') {
      // vec4 loads need rows of a multiple of 4 floats, and K a multiple of 4 (zero padded).
      const padA = transA ? ar % 4 !== 0 || ac % 4 !== 0 : ac % 4 !== 0;
      const padB = transB ? bc % 4 !== 0 : br % 4 !== 0 || bc % 4 !== 0;
      const aRows = transA ? ceil4(ar) : ar;
      const aCols = ceil4(ac);
      const bRows = transB ? br : ceil4(br);
      const bCols = ceil4(bc);
      const A = padA ? this.pad(a, aRows, aCols) : a.buf!;
      const B = padB ? this.pad(b, bRows, bCols) : b.buf!;
      groups = [Math.ceil(N / (v.tn * v.wgx)), Math.ceil(M / (v.tm * v.wgy))];
      this.checkGroups(groups);
      const p = Params.of().U(M).U(N).U(ceil4(Kd)).U(aCols).U(bCols).U(aRows).U(bRows).U(acc ? 1 : 0);
      this.run('matmul', spec, p, [null, A, B, out], groups);
      if (padA) this.stream.releaseAfterSubmit(A);
      if (padB) this.stream.releaseAfterSubmit(B);
      return;
    }
    if (v.kind === 'shared') groups = [Math.ceil(N / (v.tn * v.wgx)), Math.ceil(M / (v.tm * v.wgy))];
    else groups = [Math.ceil(N / v.wgx), Math.ceil(M / v.wgy)];
    this.checkGroups(groups);
    const p = Params.of().U(M).U(N).U(Kd).U(ac).U(bc).U(ar).U(br).U(acc ? 1 : 0);
    this.run('matmul', spec, p, [null, a, b, out], groups);
  }

  private checkGroups(g: [number, number]): void {
    if (g[0] > 65535 || g[1] > 65535) throw new ConfigError('matmul shape', g, 'is too large for one dispatch (at most 65535 workgroups per axis)');
  }

  /** A zero-padded [rows, cols] copy of t (a temporary buffer; the caller releases it). */
  private pad(t: GpuTensor, rows: number, cols: number): GPUBuffer {
    const [r, c] = t.shape;
    const out = this.temp(rows * cols * 4);
    this.run('pad', K.pad2d, Params.of().U(0).U(c).U(0).U(r).F(0).U(cols).U(rows), [null, t, null, out], this.grid2d(cols, rows));
    return out;
  }

  /**
   * Times the matmul variants at representative sizes and keeps the fastest
   * (per tuned form; untuned forms take the NN winner). Runs at
   * create({ autotune }) and may be called again. Each candidate gets one
   * warm-up run per size; one more than `skipFactor` times slower than the
   * best so far is not timed further (it cannot win).
   */
  async autotune(o: AutotuneOptions = {}): Promise<AutotuneReport> {
    this.alive();
    const t0 = now();
    const sizes = (o.sizes ?? [[256, 256, 256]]).map((s) => [s[0], s[1], s[2]] as [number, number, number]);
    const repeats = o.repeats ?? 3;
    const skipFactor = o.skipFactor ?? 3;
    const defaults = MATMUL_VARIANTS.filter((v) => v.kind !== 'naive' && !(this.isSoftware && v.kind === 'shared'));
    const candidates = (o.candidates ?? defaults.map((v) => v.name)).map((n) => {
      const v = findMatmulVariant(n);
      if (!v) throw new ConfigError('autotune candidates', n, `must be one of ${MATMUL_VARIANTS.map((x) => x.name).join(', ')}`);
      return v;
    });
    if (candidates.length === 0) throw new ConfigError('autotune candidates', [], 'must name at least one variant');
    const forms = o.forms ?? (['NN'] as MatmulForm[]);
    // Compile first, off the clock (pipeline creation is slow on software adapters).
    for (const f of forms) for (const v of candidates) this.pipelines.get(matmulSpec(v, f[0] === 'T', f[1] === 'T'));
    const compileMs = now() - t0;
    const report: AutotuneReport = { sizes, timingSource: this.hasTimestamps ? 'timestamp' : 'wall', forms: [], compileMs, totalMs: 0 };
    for (const form of forms) {
      const opts = { transA: form[0] === 'T', transB: form[1] === 'T' };
      const timings: AutotuneTiming[] = candidates.map((v) => ({ variant: v.name, ms: [], gflops: 0, skipped: false }));
      let flops = 0;
      for (const [M, N, Kd] of sizes) {
        flops += 2 * M * N * Kd;
        const a = this.tensor(randomData(M * Kd), opts.transA ? [Kd, M] : [M, Kd]);
        const b = this.tensor(randomData(Kd * N), opts.transB ? [N, Kd] : [Kd, N]);
        const c = this.zeros([M, N]);
        await this.sync();
        let best = Infinity;
        for (let vi = 0; vi < candidates.length; vi++) {
          const v = candidates[vi];
          const warm = (await this.time(() => this.matmulAccWith(v.name, c, a, b, opts))).ms;
          const runs: number[] = [warm];
          if (warm <= skipFactor * best) {
            runs.length = 0;
            for (let r = 0; r < repeats; r++) runs.push((await this.time(() => this.matmulAccWith(v.name, c, a, b, opts))).ms);
          } else {
            timings[vi].skipped = true;
          }
          runs.sort((x, y) => x - y);
          const med = runs[Math.floor(runs.length / 2)];
          timings[vi].ms.push(med);
          best = Math.min(best, med);
        }
        this.dispose(a);
        this.dispose(b);
        this.dispose(c);
      }
      let bi = 0;
      timings.forEach((t, i) => {
        const total = t.ms.reduce((x, y) => x + y, 0);
        t.gflops = total > 0 ? flops / (total * 1e6) : 0;
        if (t.gflops > timings[bi].gflops) bi = i;
      });
      this.choice[form] = candidates[bi];
      report.forms.push({ form, winner: candidates[bi].name, gflops: timings[bi].gflops, timings });
    }
    const nn = this.choice.NN;
    for (const f of MATMUL_FORMS) if (!forms.includes(f)) this.choice[f] = forms.includes('NN') ? nn : this.choice[forms[0]];
    await this.sync();
    report.totalMs = now() - t0;
    this.autotuneReport = report;
    return report;
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
    const D = this.f32('colSum dy', dy);
    const O = this.f32('colSum out', out);
    this.run('colSumAcc', K.colSumAcc, Params.of().U(0).U(c).U(0).U(n), [null, D, null, O], this.grid(c));
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
    const bind = [
      null,
      this.f32('layerNormBackward x', x),
      this.f32('layerNormBackward mean', mean),
      this.f32('layerNormBackward rstd', rstd),
      this.f32('layerNormBackward dy', dy),
      this.f32('layerNormBackward dgamma', dgamma),
      this.f32('layerNormBackward dbeta', dbeta),
    ];
    this.run('layerNormBackwardWeightAcc', K.lnBwdWeightAcc, Params.of().U(n).U(c), bind, this.grid(c));
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
}

function describe(t: unknown): string {
  if (t && typeof t === 'object' && 'shape' in t) {
    const s = (t as Tensor).shape;
    return `tensor [${Array.isArray(s) ? s.join(', ') : '?'}] of ${(t as { constructor?: { name?: string } }).constructor?.name ?? 'unknown'}`;
  }
  return String(t);
}

function now(): number {
  return typeof performance !== 'undefined' ? performance.now() : Date.now();
}

function randomData(n: number): Float32Array {
  const a = new Float32Array(n);
  let s = 0x9e3779b9;
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    a[i] = s / 4294967296 - 0.5;
  }
  return a;
}
