/**
 * Kernel launch: one command encoder collects the dispatches (all in one
 * compute pass while nothing else intervenes) and is submitted lazily, at
 * `flush()`, when a read or sync needs it, or when the uniform ring is full.
 *
 * Uniform params: every dispatch gets its own 256-byte slot of one uniform
 * ring buffer. The slots are filled on the CPU while encoding and the used part
 * of the ring is written with `queue.writeBuffer` just before the submit: the
 * queue runs that write after all earlier submits and before this one, so each
 * batch sees exactly its own params.
 *
 * Ordering hazard, and the rule that avoids it: `queue.writeBuffer` (tensor
 * uploads) runs at the point of the call on the queue, i.e. BEFORE the
 * commands of the encoder that has not been submitted yet. A buffer that those
 * pending commands still use must therefore never be handed out again (and
 * written) before the submit. So buffers freed while commands are pending go
 * to `releaseAfterSubmit`, and reach the pool only after the submit; every
 * buffer in the pool is then safe to write with `writeBuffer` (the queue
 * orders that write after the submitted commands that used it).
 */
import type { BufferPool } from './buffer-pool.ts';

export const UNIFORM_SLOT = 256;
/** Slots of a stream's uniform ring (its size: UNIFORM_SLOTS × UNIFORM_SLOT, a worker's for the stream's life). */
export const UNIFORM_SLOTS = 1024;

export interface BoundKernel {
  pipeline: GPUComputePipeline;
  bgl: GPUBindGroupLayout;
}

export type Groups = readonly [number, number?, number?];

export interface StreamStats {
  submits: number;
  dispatches: number;
  /** Dispatches waiting in the unsubmitted encoder. */
  pendingDispatches: number;
}

export class CommandStream {
  private encoder: GPUCommandEncoder | null = null;
  private pass: GPUComputePassEncoder | null = null;
  private readonly ring: GPUBuffer;
  private readonly ringData: Uint8Array;
  private readonly slots: number;
  private slot = 0;
  private deferred: GPUBuffer[] = [];
  private afterSubmit: (() => void)[] = [];
  private pendingCount = 0;
  private submits = 0;
  private dispatches = 0;

  constructor(
    private readonly device: GPUDevice,
    private readonly pool: BufferPool,
    slots = UNIFORM_SLOTS,
  ) {
    this.slots = slots;
    this.ring = device.createBuffer({
      label: 'uniform ring',
      size: slots * UNIFORM_SLOT,
      usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST,
    });
    // Made here, not by the pool, and kept for the stream's life: counted in the same ledger, as its own kind.
    pool.ledger.add(this.ring, this.ring.size, 'uniforms');
    this.ringData = new Uint8Array(slots * UNIFORM_SLOT);
  }

  stats(): StreamStats {
    return { submits: this.submits, dispatches: this.dispatches, pendingDispatches: this.pendingCount };
  }

  private enc(): GPUCommandEncoder {
    if (!this.encoder) this.encoder = this.device.createCommandEncoder();
    return this.encoder;
  }

  /** Ends the open compute pass, if any (before copies, clears, timestamps). */
  endPass(): void {
    if (this.pass) {
      this.pass.end();
      this.pass = null;
    }
  }

  private computePass(): GPUComputePassEncoder {
    if (!this.pass) this.pass = this.enc().beginComputePass();
    return this.pass;
  }

  /**
   * Encodes one dispatch. `params` (at most 256 bytes) goes to binding 0;
   * `buffers[i]` is bound at binding i (i >= 1; holes for unused bindings).
   */
  dispatch(kernel: BoundKernel, params: ArrayBuffer | ArrayBufferView | null, buffers: readonly (GPUBuffer | null | undefined)[], groups: Groups): void {
    const [x, y = 1, z = 1] = groups;
    if (x === 0 || y === 0 || z === 0) return;
    if (params && this.slot >= this.slots) this.flush();
    const entries: GPUBindGroupEntry[] = [];
    if (params) {
      const bytes = ArrayBuffer.isView(params)
        ? new Uint8Array(params.buffer, params.byteOffset, params.byteLength)
        : new Uint8Array(params);
      if (bytes.byteLength > UNIFORM_SLOT) throw new Error(`kernel params of ${bytes.byteLength} bytes exceed ${UNIFORM_SLOT}`);
      const off = this.slot * UNIFORM_SLOT;
      this.ringData.fill(0, off, off + UNIFORM_SLOT);
      this.ringData.set(bytes, off);
      entries.push({ binding: 0, resource: { buffer: this.ring, offset: off, size: UNIFORM_SLOT } });
      this.slot++;
    }
    for (let i = 1; i < buffers.length; i++) {
      const b = buffers[i];
      if (b) entries.push({ binding: i, resource: { buffer: b } });
    }
    const bindGroup = this.device.createBindGroup({ layout: kernel.bgl, entries });
    const pass = this.computePass();
    pass.setPipeline(kernel.pipeline);
    pass.setBindGroup(0, bindGroup);
    pass.dispatchWorkgroups(x, y, z);
    this.pendingCount++;
    this.dispatches++;
  }

  copy(src: GPUBuffer, srcOffset: number, dst: GPUBuffer, dstOffset: number, bytes: number): void {
    this.endPass();
    this.enc().copyBufferToBuffer(src, srcOffset, dst, dstOffset, bytes);
  }

  clear(buf: GPUBuffer, offset = 0, bytes?: number): void {
    this.endPass();
    this.enc().clearBuffer(buf, offset, bytes);
  }

  /** Direct access to the encoder for commands outside compute passes (the open pass is ended first). */
  encoderForCommands(): GPUCommandEncoder {
    this.endPass();
    return this.enc();
  }

  /** Starts a compute pass that writes a timestamp at its beginning; later dispatches join it. */
  beginTimestampPass(querySet: GPUQuerySet, index: number): void {
    this.endPass();
    this.pass = this.enc().beginComputePass({ timestampWrites: { querySet, beginningOfPassWriteIndex: index } });
  }

  /** Ends the open pass and writes a timestamp after everything encoded so far (an empty pass). */
  endTimestampPass(querySet: GPUQuerySet, index: number): void {
    this.endPass();
    this.enc().beginComputePass({ timestampWrites: { querySet, endOfPassWriteIndex: index } }).end();
  }

  /** Returns `buf` to the pool once the commands encoded so far are submitted. */
  releaseAfterSubmit(buf: GPUBuffer): void {
    if (this.encoder) {
      this.deferred.push(buf);
      this.pool.ledger.markPending(buf);
    } else this.pool.release(buf);
  }

  /** Runs `fn` right after the next submit (or now, when nothing is pending). */
  onSubmit(fn: () => void): void {
    if (this.encoder) this.afterSubmit.push(fn);
    else fn();
  }

  /** Submits what is pending. */
  flush(): void {
    if (!this.encoder) return;
    this.endPass();
    if (this.slot > 0) this.device.queue.writeBuffer(this.ring, 0, this.ringData, 0, this.slot * UNIFORM_SLOT);
    const cb = this.encoder.finish();
    this.encoder = null;
    this.slot = 0;
    this.pendingCount = 0;
    this.device.queue.submit([cb]);
    this.submits++;
    const deferred = this.deferred;
    this.deferred = [];
    for (const b of deferred) this.pool.release(b);
    const fns = this.afterSubmit;
    this.afterSubmit = [];
    for (const fn of fns) fn();
  }

  /** Drops pending work without submitting it (used on destroy). */
  abandon(): void {
    if (this.pass) {
      try {
        this.pass.end();
      } catch {
        /* device gone */
      }
    }
    this.pass = null;
    this.encoder = null;
    this.slot = 0;
    this.deferred = [];
    this.afterSubmit = [];
  }

  destroy(): void {
    this.abandon();
    this.pool.ledger.remove(this.ring);
    this.ring.destroy();
  }
}
