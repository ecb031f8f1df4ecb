/**
 * Counts WebGPU API calls made in this page (by PipeLab and by TensorFlow.js
 * alike) by wrapping a few prototype methods, so the benchmark can say how many
 * dispatches, submits, uniform/buffer writes, bind groups and buffer creations
 * a step costs each side. Only the bench page installs it.
 */
export interface GpuCounts {
  dispatches: number;
  submits: number;
  writeBuffers: number;
  writeBufferBytes: number;
  bindGroups: number;
  buffersCreated: number;
  mapAsyncs: number;
  pipelinesCreated: number;
}

const counts: GpuCounts = { dispatches: 0, submits: 0, writeBuffers: 0, writeBufferBytes: 0, bindGroups: 0, buffersCreated: 0, mapAsyncs: 0, pipelinesCreated: 0 };
let installed = false;

function wrap<T extends object>(proto: T | undefined, name: string, count: (args: unknown[]) => void): void {
  if (!proto) return;
  const p = proto as Record<string, unknown>;
  const orig = p[name];
  if (typeof orig !== 'function') return;
  p[name] = function (this: unknown, ...args: unknown[]) {
    count(args);
    return (orig as (...a: unknown[]) => unknown).apply(this, args);
  };
}

/** Installs the counters (once). False where WebGPU's classes are missing. */
export function installGpuCounters(): boolean {
  if (installed) return true;
  if (typeof GPUComputePassEncoder === 'undefined') return false;
  installed = true;
  wrap(GPUComputePassEncoder.prototype, 'dispatchWorkgroups', () => counts.dispatches++);
  wrap(GPUQueue.prototype, 'submit', () => counts.submits++);
  wrap(GPUQueue.prototype, 'writeBuffer', (a) => {
    counts.writeBuffers++;
    const data = a[2] as ArrayBufferView | ArrayBuffer;
    const size = a[4] as number | undefined;
    // For a typed array, size counts elements.
    const unit = ArrayBuffer.isView(data) ? ((data as unknown as { BYTES_PER_ELEMENT?: number }).BYTES_PER_ELEMENT ?? 1) : 1;
    counts.writeBufferBytes += size !== undefined ? size * unit : data.byteLength;
  });
  wrap(GPUDevice.prototype, 'createBindGroup', () => counts.bindGroups++);
  wrap(GPUDevice.prototype, 'createBuffer', () => counts.buffersCreated++);
  wrap(GPUDevice.prototype, 'createComputePipeline', () => counts.pipelinesCreated++);
  wrap(GPUDevice.prototype, 'createComputePipelineAsync', () => counts.pipelinesCreated++);
  wrap(GPUBuffer.prototype, 'mapAsync', () => counts.mapAsyncs++);
  return true;
}

export function gpuCounts(): GpuCounts {
  return { ...counts };
}

export function diffCounts(a: GpuCounts, b: GpuCounts): GpuCounts {
  const out = { ...a };
  for (const k of Object.keys(out) as (keyof GpuCounts)[]) out[k] = b[k] - a[k];
  return out;
}

export function addCounts(into: GpuCounts, d: GpuCounts): void {
  for (const k of Object.keys(into) as (keyof GpuCounts)[]) into[k] += d[k];
}

export function zeroCounts(): GpuCounts {
  return { dispatches: 0, submits: 0, writeBuffers: 0, writeBufferBytes: 0, bindGroups: 0, buffersCreated: 0, mapAsyncs: 0, pipelinesCreated: 0 };
}

export function scaleCounts(c: GpuCounts, by: number): GpuCounts {
  const out = { ...c };
  for (const k of Object.keys(out) as (keyof GpuCounts)[]) out[k] = c[k] / by;
  return out;
}
