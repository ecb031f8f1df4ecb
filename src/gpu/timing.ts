/**
 * GPU timing of a span of dispatches.
 *
 *   const span = timer.begin();
 *   ...issue ops...
 *   const { ms, source } = await span.end();
 *
 * With the adapter's timestamp-query feature, `begin` opens a compute pass
 * that writes a timestamp at its start (the following dispatches join that
 * pass) and `end` writes one after the last command, resolves both and reads
 * them back: `source: 'timestamp'`, the GPU's own time (browsers may round it
 * to ~0.1 ms). Without it, `source: 'wall'`: the time from the later of
 * `begin()` and the completion of the work submitted before it, to the
 * completion of the span's work (queue.onSubmittedWorkDone).
 */
import type { BufferPool } from './buffer-pool.ts';
import type { CommandStream } from './launch.ts';

export interface SpanResult {
  ms: number;
  source: 'timestamp' | 'wall';
}

export interface GpuSpan {
  end(): Promise<SpanResult>;
}

const now = (): number => (typeof performance !== 'undefined' ? performance.now() : Date.now());

export class GpuTimer {
  constructor(
    private readonly device: GPUDevice,
    private readonly stream: CommandStream,
    private readonly pool: BufferPool,
    /** Use timestamp queries (only when the device has the feature). */
    readonly useTimestamps: boolean,
  ) {}

  begin(): GpuSpan {
    return this.useTimestamps ? this.beginTimestamp() : this.beginWall();
  }

  private beginWall(): GpuSpan {
    const t0 = now();
    this.stream.flush();
    const priorDone = this.device.queue.onSubmittedWorkDone().then(now);
    return {
      end: async () => {
        this.stream.flush();
        await this.device.queue.onSubmittedWorkDone();
        const t1 = now();
        const start = Math.max(t0, await priorDone);
        return { ms: Math.max(0, t1 - start), source: 'wall' };
      },
    };
  }

  private beginTimestamp(): GpuSpan {
    const querySet = this.device.createQuerySet({ type: 'timestamp', count: 2 });
    this.stream.beginTimestampPass(querySet, 0);
    let ended = false;
    return {
      end: async () => {
        if (ended) throw new Error('GpuSpan.end() called twice');
        ended = true;
        this.stream.endTimestampPass(querySet, 1);
        const resolve = this.pool.acquire(16, GPUBufferUsage.QUERY_RESOLVE | GPUBufferUsage.COPY_SRC, 'timing', 'staging').buffer;
        const staging = this.pool.acquire(16, GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST, 'timing readback', 'staging').buffer;
        const enc = this.stream.encoderForCommands();
        enc.resolveQuerySet(querySet, 0, 2, resolve, 0);
        enc.copyBufferToBuffer(resolve, 0, staging, 0, 16);
        this.stream.releaseAfterSubmit(resolve);
        this.stream.flush();
        try {
          await staging.mapAsync(GPUMapMode.READ, 0, 16);
          const t = new BigUint64Array(staging.getMappedRange(0, 16).slice(0));
          staging.unmap();
          const ns = Number(t[1] - t[0]);
          return { ms: Math.max(0, ns) / 1e6, source: 'timestamp' };
        } finally {
          this.pool.release(staging);
          querySet.destroy();
        }
      },
    };
  }
}
