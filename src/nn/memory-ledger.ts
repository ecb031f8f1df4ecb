/**
 * One allocator's count of a worker's device memory: every buffer a backend creates or returns is
 * added or removed here, tagged with what it holds. WebGPU has no query of a device's memory
 * (gpuweb #5505), so this is what it is: allocator-tracked bytes, the way TF.js's buffer manager
 * (numBytesUsed vs numBytesAllocated) and PyTorch's caching allocator (allocated vs reserved) report
 * theirs. Live bytes (buffers in use) by kind, pooled bytes (free buffers a pool keeps for reuse) apart,
 * and the high-water mark of live bytes since the last `resetPeak`.
 *
 * The float64 CPU reference counts 4 bytes a value, the page's float32, so tests on the CPU host compare
 * with the float32 formulas; the GPU backend counts each buffer's real size (the pool's bucket).
 *
 * A buffer's kind is set where it is allocated (`scope`, or a kind given to the allocation) or when a
 * tensor takes on a role (`retag`: a weight, a gradient, a stash); anything else is a temporary.
 */

/**
 * What a buffer holds. 'staging': a value on its way to or from the host or another worker (readbacks, uploads of a
 * received tensor, a collective's chunks, timestamp resolves); 'uniforms': the GPU backend's uniform ring (every
 * kernel's parameters, a fixed size a worker for the stream's life); 'temp': anything else a kernel makes and drops.
 * New kinds go at the end: samples are arrays in this order.
 */
export type MemoryKind = 'weights' | 'grads' | 'optimizer' | 'stash' | 'gathered' | 'staging' | 'temp' | 'uniforms';
export const MEMORY_KINDS: readonly MemoryKind[] = ['weights', 'grads', 'optimizer', 'stash', 'gathered', 'staging', 'temp', 'uniforms'];

/** The kinds the formula (config/memory-budget.ts plannedPeaks) does not count: communication staging and the uniform ring. */
export const OUTSIDE_FORMULA: readonly MemoryKind[] = ['staging', 'uniforms'];

/** Bytes by kind, in MEMORY_KINDS order (compact: these cross from the worker with every step). */
export type KindBytes = number[];

/**
 * What a worker keeps in its host memory instead of on its device, counted apart (DESIGN.md: "Host memory a worker
 * uses for swapped activations or an offloaded optimizer is counted the same way, apart"): swapped stashes, and an
 * offloaded optimizer's state (with ZeRO-2 its gradient shard too).
 */
export type HostKind = 'stash' | 'optimizer';
export const HOST_KINDS: readonly HostKind[] = ['stash', 'optimizer'];

/** The count at one moment on the run's clock. */
export interface MemorySample {
  /** Epoch ms (the run's clock; the coordinator normalises it like the intervals). */
  t: number;
  /** Live bytes by kind (MEMORY_KINDS order). */
  live: KindBytes;
  /** Bytes of free buffers kept for reuse. */
  pooled: number;
  /** Of the live bytes of the kinds the formula counts (all but OUTSIDE_FORMULA), what buffers hold beyond what was asked of them (a pool's bucket rounding); absent: none. */
  slack?: number;
  /** Of the live bytes, buffers the program has let go that wait for the submit of the commands that use them (GPU); absent: none. */
  pending?: number;
  /** Host-memory bytes by HOST_KINDS, apart from the device's; absent on a worker that keeps nothing there. */
  host?: KindBytes;
}

/** A step's count: a sample after each action (and at the step's start and end), and its high-water mark. */
export interface StepMemory {
  samples: MemorySample[];
  /** The most live bytes at any moment of the step, with their kinds then, and the pooled bytes then. */
  peak: MemorySample;
}

/** The run's clock (runtime/comm/clock.ts epochMs reads the same). */
const epochNow = (): number => performance.timeOrigin + performance.now();

interface Entry {
  kind: MemoryKind;
  bytes: number;
  slack: number;
  pending?: boolean;
}

const index = new Map<MemoryKind, number>(MEMORY_KINDS.map((k, i) => [k, i]));

export function kindIndex(kind: MemoryKind): number {
  const i = index.get(kind);
  if (i === undefined) throw new Error(`memory kind "${String(kind)}" is not one of ${MEMORY_KINDS.join(', ')}`);
  return i;
}

/** The sum of a sample's live bytes. */
export function liveTotal(s: { live: KindBytes }): number {
  return s.live.reduce((a, b) => a + b, 0);
}

/** A sample's live bytes as a record by kind. */
export function byKind(live: KindBytes): Record<MemoryKind, number> {
  return Object.fromEntries(MEMORY_KINDS.map((k, i) => [k, live[i] ?? 0])) as Record<MemoryKind, number>;
}

export class MemoryLedger {
  private readonly entries = new WeakMap<object, Entry>();
  private readonly live: number[] = MEMORY_KINDS.map(() => 0);
  private total = 0;
  /** Bucket slack by kind (MEMORY_KINDS order). */
  private readonly slack: number[] = MEMORY_KINDS.map(() => 0);
  private pendingBytes = 0;
  private pooledBytes = 0;
  private peakSample: MemorySample;
  private current: MemoryKind = 'temp';
  private readonly hostLive: number[] = HOST_KINDS.map(() => 0);
  private hostUsed = false;

  constructor(private readonly clock: () => number = epochNow) {
    this.peakSample = this.sample();
  }

  /** The kind an allocation takes when none is given: 'temp' outside a scope. */
  get scopeKind(): MemoryKind {
    return this.current;
  }

  /** Runs `fn` (synchronous) with allocations tagged `kind`. */
  scope<T>(kind: MemoryKind, fn: () => T): T {
    kindIndex(kind);
    const before = this.current;
    this.current = kind;
    try {
      return fn();
    } finally {
      this.current = before;
    }
  }

  /** A buffer of `bytes` is live from now on, holding `kind`; `requested`: what was asked of it, when less (a pool's bucket). */
  add(handle: object, bytes: number, kind: MemoryKind = this.current, requested = bytes): void {
    if (this.entries.has(handle)) throw new Error('memory ledger: a buffer was added twice');
    const slack = Math.max(0, bytes - requested);
    this.entries.set(handle, { kind, bytes, slack });
    this.live[kindIndex(kind)] += bytes;
    this.total += bytes;
    this.slack[kindIndex(kind)] += slack;
    this.notePeak();
  }

  /** The buffer is no longer live (released, or handed to a pool); false when it was not counted. */
  remove(handle: object): boolean {
    const e = this.entries.get(handle);
    if (!e) return false;
    this.entries.delete(handle);
    this.live[kindIndex(e.kind)] -= e.bytes;
    this.total -= e.bytes;
    this.slack[kindIndex(e.kind)] -= e.slack;
    if (e.pending) this.pendingBytes -= e.bytes;
    return true;
  }

  /** The buffer holds `kind` from now on (a tensor that became a weight, a gradient, a stash...). */
  retag(handle: object, kind: MemoryKind): void {
    const e = this.entries.get(handle);
    if (!e || e.kind === kind) return;
    this.live[kindIndex(e.kind)] -= e.bytes;
    this.live[kindIndex(kind)] += e.bytes;
    this.slack[kindIndex(e.kind)] -= e.slack;
    this.slack[kindIndex(kind)] += e.slack;
    e.kind = kind;
  }

  /** The buffer is let go but stays live until the commands that use it are submitted (it leaves at `remove`). */
  markPending(handle: object): void {
    const e = this.entries.get(handle);
    if (!e || e.pending) return;
    e.pending = true;
    this.pendingBytes += e.bytes;
  }

  /** What the buffer is counted as, or null when it is not live. */
  kindOf(handle: object): MemoryKind | null {
    return this.entries.get(handle)?.kind ?? null;
  }

  /** The pool's free buffers now hold `bytes`. */
  setPooled(bytes: number): void {
    this.pooledBytes = bytes;
  }

  get liveBytes(): number {
    return this.total;
  }

  get pooled(): number {
    return this.pooledBytes;
  }

  /** Live bytes of one kind now. */
  bytesOf(kind: MemoryKind): number {
    return this.live[kindIndex(kind)];
  }

  /** The worker's host memory now holds `bytes` of `kind` (swapped stashes, an offloaded optimizer): counted apart from the device's. */
  setHost(kind: HostKind, bytes: number): void {
    const i = HOST_KINDS.indexOf(kind);
    if (i < 0) throw new Error(`host memory kind "${String(kind)}" is not one of ${HOST_KINDS.join(', ')}`);
    this.hostLive[i] = bytes;
    this.hostUsed = true;
  }

  /** Host-memory bytes of one kind now. */
  hostOf(kind: HostKind): number {
    return this.hostLive[HOST_KINDS.indexOf(kind)] ?? 0;
  }

  /** The count now. */
  sample(): MemorySample {
    const slack = this.slack.reduce((n, b, i) => (OUTSIDE_FORMULA.includes(MEMORY_KINDS[i]) ? n : n + b), 0);
    return {
      t: this.clock(),
      live: [...this.live],
      pooled: this.pooledBytes,
      ...(slack > 0 ? { slack } : {}),
      ...(this.pendingBytes > 0 ? { pending: this.pendingBytes } : {}),
      ...(this.hostUsed ? { host: [...this.hostLive] } : {}),
    };
  }

  /** The high-water mark since the last resetPeak (or since the ledger began). */
  peak(): MemorySample {
    return { ...this.peakSample, live: [...this.peakSample.live], ...(this.peakSample.host ? { host: [...this.peakSample.host] } : {}) };
  }

  /** Starts a new high-water mark from the count now (a step's start). */
  resetPeak(): void {
    this.peakSample = this.sample();
  }

  private notePeak(): void {
    if (this.total > liveTotal(this.peakSample)) this.peakSample = this.sample();
  }
}
