/**
 * The WebGPU backend's core: the device and its loss, tensor lifetime (pooled
 * buffers, live counts, reads), kernel launch (uniforms, bindings, grids,
 * lazy submits) and GPU timing. The ops (gpu-backend.ts, and op modules that
 * build on GpuCore) are written in terms of these.
 *
 * A lost device is noticed here and only here: every op then throws
 * DeviceLostError, and a read or sync that was waiting ends with it.
 */
import type { DType, Tensor } from '../nn/backend.ts';
import { MemoryLedger, type MemoryKind } from '../nn/memory-ledger.ts';
import { checkCopyRange, checkDType, checkShape } from '../nn/shapes.ts';
import { ConfigError, requireOneOf } from '../util/errors.ts';
import { BufferPool } from './buffer-pool.ts';
import { nudgePolicy, WaitNudger } from './wait-nudge.ts';
import { DeviceLostError, isSoftwareAdapter, type AcquiredDevice, type AdapterSummary } from './device.ts';
import { describeTensor, GpuTensor } from './gpu-tensor.ts';
import { K, WG1D } from './kernels.ts';
import { CommandStream, type Groups } from './launch.ts';
import { PipelineCache, type KernelSpec } from './pipelines.ts';
import { GpuTimer, type GpuSpan, type SpanResult } from './timing.ts';
import { readTensors, type ReadbackHost } from './readback.ts';
import type { GpuCoreOptions, GpuStats } from './gpu-core-options.ts';
import { CompletionClock, TimestampClock, type ActionClock } from './action-clock.ts';
import { f32Bits, Params } from './uniforms.ts';

export type { GpuCoreOptions, GpuStats } from './gpu-core-options.ts';

/** A kernel binding: a tensor, a raw buffer, or nothing (binding 0 is the uniforms). */
export type Binding = GpuTensor | GPUBuffer | null;

/** How long a failed map or submit waits for the device-lost report that explains it. */
const LOSS_GRACE_MS = 200;

export class GpuCore {
  readonly name = 'webgpu';
  readonly device: GPUDevice;
  readonly adapterInfo: AdapterSummary;
  /** True when spans are timed with timestamp queries. */
  readonly hasTimestamps: boolean;
  /** True on a software adapter (SwiftShader, llvmpipe, WARP). */
  readonly isSoftware: boolean;
  /** The device's fixed subgroup size (the subgroups feature, one size); 0 without. */
  readonly subgroupSize: number;
  /** Resolves with a readable message when the device is lost (also after destroy()). */
  readonly lost: Promise<string>;

  /** @internal for op modules */
  protected readonly pool: BufferPool;
  /** Every buffer of this device, by kind (the pool's and the uniform ring's): allocator-tracked bytes. */
  readonly memory = new MemoryLedger();
  private readonly pipelines: PipelineCache;
  /** @internal for op modules */
  readonly stream: CommandStream;
  private readonly timer: GpuTimer;
  private liveCount = 0;
  /** @internal for op modules */
  protected liveByteCount = 0;
  private lostMessage: string | null = null;
  /** @internal for op modules */
  protected destroyed = false;
  private readonly errors: string[] = [];
  /** While compileUsed runs its dry pass: the kernels run() was asked for (none is dispatched). */
  private collecting: Map<string, KernelSpec> | null = null;
  protected readonly usageStorage: number;
  /** Cap on the workgroups of the elementwise (grid-stride) kernels. */
  private readonly maxGroups: number;
  /** Sends empty submits while a wait is pending (null: waits are not nudged). */
  private readonly nudger: WaitNudger | null;
  private waitCount = 0;
  /** The pending waits' rejections, called when the device is lost. */
  private readonly lostWaits = new Set<(e: Error) => void>();

  /** Builds a backend on an already acquired device (see acquireDevice). */
  constructor(acq: AcquiredDevice, opts: GpuCoreOptions = {}) {
    this.device = acq.device;
    this.adapterInfo = acq.adapterInfo;
    this.hasTimestamps = acq.hasTimestamps && opts.timestamps !== false;
    this.subgroupSize = opts.subgroupSize ?? acq.subgroupSize;
    if (opts.subgroupSize !== undefined) {
      const n = opts.subgroupSize;
      const pow2 = Number.isInteger(n) && n >= 4 && n <= 128 && (n & (n - 1)) === 0;
      if (n !== 0 && !pow2) throw new ConfigError('subgroupSize', n, 'must be 0 or a power of two from 4 to 128');
      if (n !== 0 && !acq.device.features.has('subgroups')) throw new ConfigError('subgroupSize', n, 'needs a device with the "subgroups" feature (this one has none); 0 turns the subgroup kernels off');
    }
    this.isSoftware = isSoftwareAdapter(acq.adapterInfo);
    this.maxGroups = this.isSoftware ? 256 : 16384;
    const policy = nudgePolicy(this.isSoftware);
    const nudgeMs = opts.nudgeWaitsMs ?? policy.intervalMs;
    if (!(nudgeMs >= 0)) throw new ConfigError('nudgeWaitsMs', nudgeMs, 'must be 0 (off) or a positive number of milliseconds');
    const nudge = () => this.device.queue.submit([]);
    this.nudger =
      nudgeMs <= 0 ? null : opts.nudgeWaitsMs === undefined ? new WaitNudger(nudge, nudgeMs, undefined, undefined, policy.backoff, policy.maxMs, policy.steadyMs) : new WaitNudger(nudge, nudgeMs);
    this.usageStorage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;
    this.pool = new BufferPool(this.device, opts.maxPooledBytes, this.memory);
    this.pipelines = new PipelineCache(this.device);
    this.stream = new CommandStream(this.device, this.pool, opts.uniformSlots ?? 1024);
    this.timer = new GpuTimer(this.device, this.stream, this.pool, this.hasTimestamps);
    this.lost = acq.lost.then(({ message }) => {
      this.lostMessage = message;
      for (const fail of this.lostWaits) fail(new DeviceLostError(message));
      this.lostWaits.clear();
      return message;
    });
    this.device.addEventListener('uncapturederror', (ev) => {
      const e = (ev as GPUUncapturedErrorEvent).error;
      if (this.errors.length < 16) this.errors.push(e?.message ?? String(e));
    });
  }

  // ------------------------------------------------------------------ plumbing

  /** @internal for op modules */
  alive(): void {
    if (this.destroyed) throw new Error('GpuBackend used after destroy()');
    if (this.lostMessage) throw new DeviceLostError(this.lostMessage);
  }

  /** @internal for op modules */
  throwGpuErrors(): void {
    if (this.errors.length) {
      const msgs = this.errors.splice(0);
      throw new Error(`WebGPU reported: ${msgs.join(' | ')}`);
    }
  }

  /** @internal for op modules */
  own(field: string, t: Tensor): GpuTensor {
    if (!(t instanceof GpuTensor) || t.owner !== this) throw new ConfigError(field, describeTensor(t), 'must be a tensor created by this GPU backend');
    if (t.buf === null && t.storageFreed) throw new ConfigError(field, `[${t.shape.join(', ')}] ${t.dtype}`, 'had its storage freed (freeStorage) and was used before allocStorage gave it back (a missed gather?)');
    if (t.buf === null) throw new ConfigError(field, `[${t.shape.join(', ')}] ${t.dtype}`, 'was disposed and must not be used any more');
    return t;
  }

  /** @internal for op modules */
  f32(field: string, t: Tensor): GpuTensor {
    const g = this.own(field, t);
    checkDType(field, g, 'f32');
    return g;
  }

  /** @internal for op modules */
  alloc(shape: readonly number[], dtype: DType, kind?: MemoryKind): { t: GpuTensor; fresh: boolean } {
    const n = shape.reduce((a, b) => a * b, 1);
    const { buffer, fresh } = this.pool.acquire(n * 4, this.usageStorage, undefined, kind);
    const t = new GpuTensor([...shape], dtype, buffer, this);
    this.liveCount++;
    this.liveByteCount += buffer.size;
    return { t, fresh };
  }

  /** @internal for op modules */
  temp(bytes: number): GPUBuffer {
    return this.pool.acquire(bytes, this.usageStorage, undefined, 'temp').buffer;
  }

  /**
   * Workgroups for a grid-stride kernel over n items: one item per thread up
   * to a cap (software adapters run few big workgroups faster than many). @internal for op modules
   */
  grid(n: number): Groups {
    return [Math.max(1, Math.min(Math.ceil(n / WG1D), this.maxGroups))];
  }

  /** A 2-D grid for [rows, cols] kernels: x over columns (WG1D each), y over rows; both stride beyond. @internal for op modules */
  grid2d(cols: number, rows: number): Groups {
    const x = Math.max(1, Math.min(Math.ceil(cols / WG1D), this.maxGroups));
    const y = Math.max(1, Math.min(rows, Math.floor(this.maxGroups / x), 65535));
    return [x, y];
  }

  /**
   * Dispatches `spec`. bindings[i] goes to binding i (i >= 1). A buffer bound
   * both read-only and writable (an op given the same tensor twice) is read
   * from a copy; one bound writable twice is refused. @internal for op modules
   */
  run(op: string, spec: KernelSpec, params: Params | Uint8Array | null, bindings: readonly Binding[], groups: Groups): void {
    if (this.collecting) {
      this.collecting.set(this.pipelines.key(spec), spec);
      return;
    }
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

  copyInto(dst: Tensor, src: Tensor, dstOffset?: number): void {
    this.alive();
    const d = this.own('copyInto dst', dst);
    const s = this.own('copyInto src', src);
    checkCopyRange(d, s, dstOffset);
    if (d.dtype !== s.dtype) throw new ConfigError('copyInto dst.dtype', d.dtype, `must equal src.dtype = ${s.dtype}`);
    if (d === s) return;
    const at = dstOffset ?? 0;
    this.stream.copy(s.buf!, 0, d.buf!, at * 4, s.byteLength);
    if (d.dtype === 'i32') {
      if (at === 0 && d.size === s.size) d.host = s.host ? s.host.slice() : null;
      else if (d.host && s.host) d.host.set(s.host, at);
      else d.host = null;
    }
  }

  async read(t: Tensor): Promise<Float32Array | Int32Array> {
    return (await this.readMany([t]))[0];
  }

  /** Several tensors read at once: one staging buffer, one submit, one wait (readback.ts). */
  async readMany(ts: readonly Tensor[]): Promise<(Float32Array | Int32Array)[]> {
    this.alive();
    const gs = ts.map((t) => this.own('read tensor', t));
    return readTensors(this.stream, this.pool, gs, this.readback);
  }

  private readonly readback: ReadbackHost = {
    map: (buf, bytes) => this.raceLost(buf.mapAsync(GPUMapMode.READ, 0, bytes)),
    throwGpuErrors: () => this.throwGpuErrors(),
    destroyed: () => this.destroyed,
  };

  dispose(t: Tensor): void {
    if (!(t instanceof GpuTensor) || t.owner !== this) throw new ConfigError('dispose tensor', describeTensor(t), 'must be a tensor created by this GPU backend');
    const buf = t.buf;
    if (buf === null && t.storageFreed) {
      // A tensor without storage (freeStorage) counted no bytes; it is a live tensor until now.
      t.storageFreed = false;
      this.liveCount--;
      return;
    }
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

  /**
   * The one place a lost device is named: `p` (a map or a submitted-work
   * wait) ends with DeviceLostError when the device is lost while it waits,
   * or when it fails and the loss is reported shortly after (a lost device
   * shows first as a failed map or submit).
   */
  private async raceLost<T>(p: Promise<T>, wait = true): Promise<T> {
    // A wait is counted and nudged; a read nobody waits for yet (the action spans, read a step late) is neither.
    if (wait) this.waitCount++;
    // Ended by the loss through a set each wait leaves as it ends (not a reaction on `lost` per wait, kept for the device's life).
    const until = this.lostMessage !== null ? (p.catch(() => {}), Promise.reject(new DeviceLostError(this.lostMessage))) : new Promise<T>((resolve, reject) => {
      this.lostWaits.add(reject);
      p.then((v) => (this.lostWaits.delete(reject), resolve(v)), (e: unknown) => (this.lostWaits.delete(reject), reject(e)));
    });
    try {
      return await (this.nudger && wait ? this.nudger.during(until) : until);
    } catch (e) {
      if (e instanceof DeviceLostError) throw e;
      const late = await Promise.race([this.lost, new Promise<null>((r) => setTimeout(() => r(null), LOSS_GRACE_MS))]);
      throw late === null ? e : new DeviceLostError(late);
    }
  }

  /** The waits for the GPU and the submits so far (cheap: what a worker reads around every action). */
  counts(): { waits: number; submits: number } {
    return { waits: this.waitCount, submits: this.stream.stats().submits };
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
      nudges: this.nudger?.nudges ?? 0,
      waits: this.waitCount,
    };
  }

  /** Frees the pool's idle buffers (a kept device between runs holds no memory it does not use). */
  trimPool(): void {
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
    const span = this.timer.begin();
    // Its end maps the query results: a lost device is named here as for read and sync.
    return { end: () => this.raceLost(span.end()) };
  }

  /**
   * The device's clock for a worker's actions, waiting for none of them (action-clock.ts; one per backend, its query
   * sets kept); wall ends read on `now`. Its spans' map is no wait (not counted, not nudged): they are read a step late.
   */
  actionClock(now: () => number): ActionClock {
    if (!this.hasTimestamps) return new CompletionClock(this.device, this.stream, now);
    return (this.timestampClock ??= new TimestampClock(this.device, this.stream, this.pool, (buf, bytes) => this.raceLost(buf.mapAsync(GPUMapMode.READ, 0, bytes), false)));
  }
  private timestampClock: TimestampClock | undefined;

  /** Times the ops `fn` issues. */
  async time<T>(fn: () => T): Promise<SpanResult & { result: T }> {
    const span = this.beginTiming();
    const result = fn();
    const r = await span.end();
    this.throwGpuErrors();
    return { ...r, result };
  }

  /**
   * Compiles exactly the kernels `dry` would run, in parallel and
   * asynchronously: `dry` is called once with no kernel dispatched (its ops
   * allocate and free tensors as usual, but compute nothing: their outputs
   * hold no meaningful values), the kernels it asked for are noted, then
   * built with createComputePipelineAsync. Resolves with how many it noted
   * and how many were new.
   */
  async compileUsed(dry: () => void | Promise<void>): Promise<{ kernels: number; compiled: number }> {
    this.alive();
    if (this.collecting) throw new Error('compileUsed: already collecting kernels (calls do not nest)');
    const used = new Map<string, KernelSpec>();
    this.collecting = used;
    try {
      await dry();
    } finally {
      this.collecting = null;
    }
    const compiled = await this.pipelines.prepare(used.values());
    this.throwGpuErrors();
    return { kernels: used.size, compiled };
  }

  /** The kernels (pipeline cache keys: file#entry|constants) this device has compiled. */
  compiledKernels(): string[] {
    return this.pipelines.keys();
  }

  /** Compiles `spec`'s pipeline now (off the clock, before timing it). */
  precompile(spec: KernelSpec): void {
    this.pipelines.get(spec);
  }
}
