/**
 * A pool of GPU buffers in sized buckets. `acquire` hands out a buffer at
 * least as big as asked (sizes rounded up to a bucket: powers of two below
 * 4 KiB, then four steps per octave, so at most ~25% slack), reusing a free
 * one of the same bucket and usage when there is one. `release` returns it.
 *
 * The pool knows nothing of command ordering: whoever releases a buffer that
 * pending (unsubmitted) GPU commands still use must wait until they are
 * submitted (see CommandStream.releaseAfterSubmit).
 *
 * Every buffer it hands out is counted live in its ledger (nn/memory-ledger.ts) under the kind the
 * caller names (or the ledger's scope), and its free buffers as pooled: the one count of a worker's
 * device memory.
 */
import { MemoryLedger, type MemoryKind } from '../nn/memory-ledger.ts';

export interface PoolStats {
  /** Buffers handed out and not yet released. */
  inUseBuffers: number;
  inUseBytes: number;
  /** Free buffers kept for reuse. */
  pooledBuffers: number;
  pooledBytes: number;
  /** GPU buffers that exist now (in use + pooled). */
  allocatedBuffers: number;
  allocatedBytes: number;
  /** Lifetime counters. */
  created: number;
  reused: number;
}

export interface Acquired {
  buffer: GPUBuffer;
  /** True for a newly created buffer: WebGPU zero-initialises those. */
  fresh: boolean;
}

/** The smallest bucket: a request under it takes it whole. */
export const MIN_BUCKET = 256;
/** Requests up to this size round to a power of two (at most twice the request); above it to a quarter octave (at most 25% more). */
export const POW2_BUCKETS_UNTIL = 4096;
/** Buckets per octave above POW2_BUCKETS_UNTIL: the rounding above it is at most 1 / BUCKET_STEPS of the request. */
export const BUCKET_STEPS = 4;

/** The bucket size for a request of `bytes`. */
export function bucketSize(bytes: number): number {
  if (bytes <= MIN_BUCKET) return MIN_BUCKET;
  if (bytes <= POW2_BUCKETS_UNTIL) return 2 ** Math.ceil(Math.log2(bytes));
  const octave = 2 ** Math.floor(Math.log2(bytes));
  const step = octave / BUCKET_STEPS;
  return Math.ceil(bytes / step) * step;
}

export class BufferPool {
  private readonly free = new Map<string, GPUBuffer[]>();
  private readonly sizes = new WeakMap<GPUBuffer, number>();
  private inUse = new Set<GPUBuffer>();
  private pooledBytes = 0;
  private pooledCount = 0;
  private created = 0;
  private reused = 0;
  private destroyed = false;

  constructor(
    private readonly device: GPUDevice,
    /** Free buffers beyond this many bytes are destroyed instead of kept. */
    private readonly maxPooledBytes = 512 * 1024 * 1024,
    /** Where every buffer handed out, and the pool's free bytes, are counted. */
    readonly ledger: MemoryLedger = new MemoryLedger(),
  ) {}

  acquire(bytes: number, usage: GPUBufferUsageFlags, label?: string, kind?: MemoryKind): Acquired {
    if (this.destroyed) throw new Error('buffer pool used after destroy()');
    const size = bucketSize(bytes);
    const key = `${usage}:${size}`;
    const list = this.free.get(key);
    const reuse = list?.pop();
    if (reuse) {
      this.pooledBytes -= size;
      this.pooledCount--;
      this.reused++;
      this.inUse.add(reuse);
      this.ledger.setPooled(this.pooledBytes);
      this.ledger.add(reuse, size, kind, bytes);
      return { buffer: reuse, fresh: false };
    }
    const buffer = this.device.createBuffer({ size, usage, label });
    this.sizes.set(buffer, size);
    this.created++;
    this.inUse.add(buffer);
    this.ledger.add(buffer, size, kind, bytes);
    return { buffer, fresh: true };
  }

  release(buffer: GPUBuffer): void {
    if (this.destroyed) return; // destroy() already destroyed it
    if (!this.inUse.delete(buffer)) throw new Error('buffer released twice or not from this pool');
    const size = this.sizes.get(buffer) ?? buffer.size;
    this.ledger.remove(buffer);
    if (this.pooledBytes + size > this.maxPooledBytes) {
      buffer.destroy();
      return;
    }
    const key = `${buffer.usage}:${size}`;
    let list = this.free.get(key);
    if (!list) {
      list = [];
      this.free.set(key, list);
    }
    list.push(buffer);
    this.pooledBytes += size;
    this.pooledCount++;
    this.ledger.setPooled(this.pooledBytes);
  }

  /** Destroys every free buffer (in-use ones are untouched). */
  trim(): void {
    for (const list of this.free.values()) for (const b of list) b.destroy();
    this.free.clear();
    this.pooledBytes = 0;
    this.pooledCount = 0;
    this.ledger.setPooled(0);
  }

  /** Destroys everything, in use or not. */
  destroy(): void {
    this.trim();
    for (const b of this.inUse) {
      this.ledger.remove(b);
      b.destroy();
    }
    this.inUse.clear();
    this.destroyed = true;
  }

  stats(): PoolStats {
    let inUseBytes = 0;
    for (const b of this.inUse) inUseBytes += this.sizes.get(b) ?? b.size;
    return {
      inUseBuffers: this.inUse.size,
      inUseBytes,
      pooledBuffers: this.pooledCount,
      pooledBytes: this.pooledBytes,
      allocatedBuffers: this.inUse.size + this.pooledCount,
      allocatedBytes: inUseBytes + this.pooledBytes,
      created: this.created,
      reused: this.reused,
    };
  }
}
