/**
 * What a WebGPU adapter is, and what crossing between the CPU and it costs,
 * measured where the code runs (a page, a dedicated worker, Node on Dawn):
 *
 * - the adapter: vendor, architecture, description, the fallback flag,
 *   features, subgroup sizes, the limits the kernels care about;
 * - per-action synchronisation: one tiny kernel submitted and waited for;
 * - upload and readback latency per crossing: a micro-batch's activations
 *   (64 KiB) written into a tensor and waited for, and read back (the ops a
 *   pipeline's transport runs at every stage boundary), checked to round-trip;
 * - timestamp-query resolution: spans of one tiny kernel timed by the
 *   backend's timestamp queries; a browser may quantize them (for privacy),
 *   which `quantumNs` shows.
 *
 * Used by the bench page (window.pipelabBench.adapterProbe: the page and a
 * worker), by the Chromium probe of scripts/gpu-browser-bench.sh and by
 * `npm run bench:node`.
 */
import { acquireDevice, isSoftwareAdapter, type AdapterSummary } from './device.ts';
import { GpuBackend } from './gpu-backend.ts';

export interface CrossingCosts {
  /** Bytes per upload and per readback. */
  bytes: number;
  /** Timed repeats of each (medians below). */
  repeats: number;
  /** One tiny kernel, submitted and waited for. */
  syncMs: number;
  /** `bytes` uploaded into a tensor (queue.writeBuffer), waited for. */
  uploadMs: number;
  /** `bytes` read back from a tensor (copy, mapAsync, copy out). */
  readbackMs: number;
  /** The data read back equals the data uploaded. */
  roundTrip: boolean;
}

export interface TimestampResolution {
  /** Spans timed, and how many of them read 0. */
  spans: number;
  zeroSpans: number;
  /** The shortest span that read more than 0, ns. */
  minSpanNs: number;
  /** The greatest common divisor of the spans, ns: 1 for exact timestamps, 100000 for a 0.1 ms quantization. */
  quantumNs: number;
}

export interface AdapterProbe {
  ok: true;
  /** 'page', 'worker', 'node', ... */
  where: string;
  adapter: AdapterSummary;
  /** A software adapter (SwiftShader, llvmpipe, ...; or the browser's fallback flag). */
  software: boolean;
  features: string[];
  /** 0 without the subgroups feature. */
  subgroupMinSize: number;
  subgroupMaxSize: number;
  limits: {
    maxComputeWorkgroupStorageSize: number;
    maxComputeInvocationsPerWorkgroup: number;
    maxStorageBufferBindingSize: number;
    maxBufferSize: number;
  };
  crossing: CrossingCosts;
  /** Null without timestamp-query. */
  timestamps: TimestampResolution | null;
}

export interface AdapterProbeFailure {
  ok: false;
  where: string;
  /** Why no device came up (WebGPU missing, no adapter, device refused). */
  error: string;
}

export type AdapterProbeResult = AdapterProbe | AdapterProbeFailure;

export interface ProbeOptions {
  /** The GPU object; default navigator.gpu. */
  gpu?: GPU;
  /** Bytes per crossing. Default 65536 (a 64 × 256 float32 micro-batch). */
  bytes?: number;
  /** Repeats per measure. Default 15. */
  repeats?: number;
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const now = (): number => performance.now();

function gcd(a: number, b: number): number {
  while (b) [a, b] = [b, a % b];
  return a;
}

/** Resolution seen in span lengths (ns): how many read 0, the shortest positive one, and their common divisor. */
export function timestampResolution(spansNs: readonly number[]): TimestampResolution {
  const ns = spansNs.map((x) => Math.round(x));
  const positive = ns.filter((x) => x > 0);
  return {
    spans: ns.length,
    zeroSpans: ns.length - positive.length,
    minSpanNs: positive.length ? Math.min(...positive) : 0,
    quantumNs: positive.reduce((g, x) => gcd(g, x), 0),
  };
}

/** Probes the adapter where this runs; a failure to get a device is a result, not an exception. */
export async function probeAdapter(where: string, o: ProbeOptions = {}): Promise<AdapterProbeResult> {
  let acq;
  try {
    acq = await acquireDevice(o.gpu);
  } catch (e) {
    return { ok: false, where, error: e instanceof Error ? e.message : String(e) };
  }
  const { adapter } = acq;
  const be = new GpuBackend(acq);
  try {
    const info = adapter.info as GPUAdapterInfo & { subgroupMinSize?: number; subgroupMaxSize?: number };
    return {
      ok: true,
      where,
      adapter: acq.adapterInfo,
      software: isSoftwareAdapter(acq.adapterInfo),
      features: [...adapter.features].map(String).sort(),
      subgroupMinSize: info.subgroupMinSize ?? 0,
      subgroupMaxSize: info.subgroupMaxSize ?? 0,
      limits: {
        maxComputeWorkgroupStorageSize: adapter.limits.maxComputeWorkgroupStorageSize,
        maxComputeInvocationsPerWorkgroup: adapter.limits.maxComputeInvocationsPerWorkgroup,
        maxStorageBufferBindingSize: adapter.limits.maxStorageBufferBindingSize,
        maxBufferSize: adapter.limits.maxBufferSize,
      },
      crossing: await crossingCosts(be, o.bytes ?? 65536, o.repeats ?? 15),
      timestamps: be.hasTimestamps ? await spans(be, 2 * (o.repeats ?? 15)) : null,
    };
  } finally {
    be.destroy();
  }
}

async function crossingCosts(be: GpuBackend, bytes: number, repeats: number): Promise<CrossingCosts> {
  const n = Math.max(1, Math.floor(bytes / 4));
  const data = new Float32Array(n).map((_, i) => (i % 251) - 125);
  const tiny = be.zeros([64]);
  const sync: number[] = [];
  const upload: number[] = [];
  const readback: number[] = [];
  let roundTrip = true;
  await be.sync();
  // One untimed round of each first (pipeline compile, buffer pool).
  for (let r = -1; r < repeats; r++) {
    let t0 = now();
    be.fill(tiny, r);
    await be.sync();
    const s = now() - t0;
    t0 = now();
    const t = be.tensor(data, [n]);
    await be.sync();
    const u = now() - t0;
    t0 = now();
    const back = await be.read(t);
    const rb = now() - t0;
    if (r === -1) roundTrip = back.length === n && back.every((v, i) => v === data[i]);
    be.dispose(t);
    if (r < 0) continue;
    sync.push(s);
    upload.push(u);
    readback.push(rb);
  }
  be.dispose(tiny);
  return { bytes: n * 4, repeats, syncMs: median(sync), uploadMs: median(upload), readbackMs: median(readback), roundTrip };
}

async function spans(be: GpuBackend, count: number): Promise<TimestampResolution> {
  const tiny = be.zeros([64]);
  await be.sync();
  const ns: number[] = [];
  for (let i = 0; i < count; i++) {
    const r = await be.time(() => be.fill(tiny, i));
    ns.push(r.ms * 1e6);
  }
  be.dispose(tiny);
  return timestampResolution(ns);
}

/** In a page: the probe here and in a dedicated worker (each gets its own adapter and device). */
export async function probePageAndWorker(o: Omit<ProbeOptions, 'gpu'> = {}): Promise<{ page: AdapterProbeResult; worker: AdapterProbeResult }> {
  const page = await probeAdapter('page', o);
  const w = new Worker(new URL('./adapter-probe-worker.ts', import.meta.url), { type: 'module', name: 'pipelab-adapter-probe' });
  try {
    const worker = await new Promise<AdapterProbeResult>((resolve) => {
      w.onmessage = (e: MessageEvent<AdapterProbeResult>) => resolve(e.data);
      w.onerror = (e) => resolve({ ok: false, where: 'worker', error: `the worker failed: ${e.message || 'no message'}` });
      w.postMessage(o);
    });
    return { page, worker };
  } finally {
    w.terminate();
  }
}
