/**
 * Reading tensors back to the CPU: every tensor of one read copied into one staging buffer (MAP_READ, from the
 * buffer pool, returned to it after), one submit, one map. A read of k tensors is one wait for the GPU, not k
 * (a stage's gradients for a ring all-reduce, a step's losses, a tp collective's tensors).
 */
import type { BufferPool } from './buffer-pool.ts';
import type { GpuTensor } from './gpu-tensor.ts';
import type { CommandStream } from './launch.ts';

export interface ReadbackHost {
  /** Maps the staging buffer: the backend's one wait (counted, nudged, ended by a lost device). */
  map(buf: GPUBuffer, bytes: number): Promise<void>;
  /** Throws what the device reported meanwhile. */
  throwGpuErrors(): void;
  /** Whether the backend was destroyed while it waited (the pool is gone then). */
  destroyed(): boolean;
}

/** Each tensor's values (Float32Array, or Int32Array for i32), in order, from one staging buffer and one map. */
export async function readTensors(stream: CommandStream, pool: BufferPool, ts: readonly GpuTensor[], h: ReadbackHost): Promise<(Float32Array | Int32Array)[]> {
  if (ts.length === 0) return [];
  // Each tensor at an 8-byte-aligned offset (copies need 4, a map's offset 8).
  const offsets: number[] = [];
  let bytes = 0;
  for (const t of ts) {
    offsets.push(bytes);
    bytes += Math.ceil(t.byteLength / 8) * 8;
  }
  const staging = pool.acquire(bytes, GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST, 'readback', 'staging').buffer;
  ts.forEach((t, i) => stream.copy(t.buf!, 0, staging, offsets[i], t.byteLength));
  const dtypes = ts.map((t) => t.dtype);
  stream.flush();
  try {
    await h.map(staging, bytes);
    const all = staging.getMappedRange(0, bytes).slice(0);
    staging.unmap();
    h.throwGpuErrors();
    return ts.map((t, i) => (dtypes[i] === 'i32' ? new Int32Array(all, offsets[i], t.size) : new Float32Array(all, offsets[i], t.size)));
  } finally {
    if (!h.destroyed()) pool.release(staging);
  }
}
