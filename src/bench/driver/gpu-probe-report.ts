/**
 * The adapter probe (src/gpu/adapter-probe.ts) in words, for the bench's log
 * and for scripts/gpu-browser-bench.sh: what adapter the page and a dedicated
 * worker got, whether it is hardware, and what crossing to it costs.
 */
import type { AdapterProbeResult } from '../../gpu/adapter-probe.ts';

/** What the script prints when no hardware adapter came up (tests look for it). */
export const FALLBACK_LINE = 'no hardware WebGPU adapter: falling back to SwiftShader';

export interface PageAndWorkerProbe {
  page: AdapterProbeResult;
  worker: AdapterProbeResult;
}

/** Hardware only when both the page and the worker got a device on a non-software adapter. */
export function isHardware(p: PageAndWorkerProbe): boolean {
  return p.page.ok && p.worker.ok && !p.page.software && !p.worker.software;
}

const ms = (x: number): string => `${x.toFixed(3)} ms`;

function describeOne(r: AdapterProbeResult): string[] {
  if (!r.ok) return [`${r.where}: no WebGPU device (${r.error})`];
  const a = r.adapter;
  const kind = r.software ? 'software' : 'hardware';
  const lines = [
    `${r.where}: ${kind} adapter vendor=${a.vendor || '?'} architecture=${a.architecture || '?'} description=${JSON.stringify(a.description)} isFallbackAdapter=${a.isFallbackAdapter}`,
    `${r.where}: subgroups ${r.subgroupMinSize ? `${r.subgroupMinSize}..${r.subgroupMaxSize}` : 'none'}; workgroup storage ${r.limits.maxComputeWorkgroupStorageSize} B; ${r.limits.maxComputeInvocationsPerWorkgroup} invocations per workgroup`,
    `${r.where}: per action sync ${ms(r.crossing.syncMs)}; upload ${ms(r.crossing.uploadMs)} and readback ${ms(r.crossing.readbackMs)} per ${r.crossing.bytes} B crossing${r.crossing.roundTrip ? '' : ' (DATA DID NOT ROUND-TRIP)'}`,
  ];
  const t = r.timestamps;
  lines.push(t
    ? `${r.where}: timestamp queries: ${t.zeroSpans}/${t.spans} spans read 0, shortest ${t.minSpanNs} ns, quantum ${t.quantumNs} ns`
    : `${r.where}: no timestamp-query feature`);
  return lines;
}

/** Lines for the log: each side's adapter and costs, then the verdict. */
export function describeProbe(p: PageAndWorkerProbe): string[] {
  const lines = [...describeOne(p.page), ...describeOne(p.worker)];
  lines.push(isHardware(p) ? 'hardware WebGPU adapter in the page and in a dedicated worker' : 'software WebGPU adapter (or none) in the page or the worker');
  return lines;
}
