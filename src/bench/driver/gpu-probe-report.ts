/**
 * The adapter probe (src/gpu/adapter-probe.ts) in words, for the bench's log
 * and for scripts/gpu-browser-bench.sh: what adapter the page and a dedicated
 * worker got, whether it is hardware, and what crossing to it costs.
 */
import type { AdapterProbe, AdapterProbeResult } from '../../gpu/adapter-probe.ts';

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

/** The probe for RESULTS.md: which adapter, hardware or software, in the page and the worker, and the crossing costs side by side. */
export function probeMarkdown(p: PageAndWorkerProbe): string[] {
  if (!p.page.ok || !p.worker.ok) {
    return [`- Adapter probe: ${[p.page, p.worker].map((r) => (r.ok ? `${r.where} ok` : `${r.where} failed (${r.error})`)).join('; ')}`];
  }
  const page: AdapterProbe = p.page;
  const worker: AdapterProbe = p.worker;
  const a = page.adapter;
  const same = a.vendor === worker.adapter.vendor && a.architecture === worker.adapter.architecture;
  const kind = isHardware(p) ? 'hardware' : 'software';
  const both = (f: (r: AdapterProbe) => string): string => `${f(page)} / ${f(worker)}`;
  const ts = (r: AdapterProbe): string => (r.timestamps ? `${r.timestamps.quantumNs} ns` : 'none');
  return [
    `- Adapter probe (page / dedicated worker): ${kind}, isFallbackAdapter ${both((r) => String(r.adapter.isFallbackAdapter))}${same ? '' : `; the worker got ${worker.adapter.vendor} / ${worker.adapter.architecture}`}; subgroups ${page.subgroupMinSize ? `${page.subgroupMinSize}..${page.subgroupMaxSize}` : 'none'}`,
    `- Crossing costs (page / worker, medians of ${page.crossing.repeats}): per-action sync ${both((r) => r.crossing.syncMs.toFixed(2))} ms; upload ${both((r) => r.crossing.uploadMs.toFixed(2))} ms and readback ${both((r) => r.crossing.readbackMs.toFixed(2))} ms per ${page.crossing.bytes} B; timestamp-query quantum ${both(ts)}`,
  ];
}
