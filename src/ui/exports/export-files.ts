/**
 * The files PipeLab hands out: a Chrome trace of a timeline, a schedule as
 * PyTorch's CSV, the run report as JSON (weights left out: they have their own
 * file), the trained weights as safetensors, and the run as a PyTorch
 * program with its files (a zip; see src/export/torch-bundle.ts).
 */
import { buildTorchBundle } from '../../export/torch-bundle.ts';
import type { TorchProgram } from '../../export/torch-program.ts';
import { memoryCounters, type RunReport } from '../../runtime/report/index.ts';
import type { StepMemory } from '../../nn/memory-ledger.ts';
import type { RunConfig } from '../../config/run-config.ts';
import { toChromeTrace, toCsv, type Schedule, type Timeline } from '../../schedule/index.ts';
import { parameterShapes } from '../../state/run/index.ts';
import { writeSafetensors, type NamedTensor } from '../../util/safetensors.ts';
import { writeZip } from '../../util/zip.ts';

/** The PyTorch program's modules (src/export/torch/*.py), by file name. */
const TORCH_PROGRAM: TorchProgram = Object.fromEntries(
  Object.entries(import.meta.glob<string>('../../export/torch/*.py', { query: '?raw', import: 'default', eager: true })).map(([path, text]) => [path.slice(path.lastIndexOf('/') + 1), text]),
);

export interface ExportFile {
  name: string;
  type: string;
  data: string | Uint8Array;
}

export function slug(s: string): string {
  return s.replace(/[^a-z0-9]+/gi, '-').replace(/^-|-$/g, '').toLowerCase();
}

/** The timeline as a Chrome trace; a measured run's memory per worker (its last step's count) as counter tracks under it. */
export function traceFile(t: Timeline, title: string, base: string, memory?: readonly StepMemory[]): ExportFile {
  return { name: `${base}-trace.json`, type: 'application/json', data: JSON.stringify(toChromeTrace(t, title, memory ? memoryCounters(memory) : [])) };
}

export function csvFile(s: Schedule, base: string): ExportFile {
  return { name: `${base}-schedule.csv`, type: 'text/csv', data: toCsv(s) };
}

/** The report as plain JSON; `weights` becomes a list of names and shapes (the values go in the safetensors file). */
export function reportFile(r: RunReport, base: string): ExportFile {
  const { weights, ...rest } = r;
  const shapes = weights ? Object.fromEntries(Object.entries(weights).map(([k, v]) => [k, v.length])) : undefined;
  return { name: `${base}-report.json`, type: 'application/json', data: JSON.stringify({ ...rest, weightSizes: shapes }, null, 1) };
}

export function safetensorsFile(config: RunConfig, weights: Record<string, Float32Array | Float64Array>, base: string): ExportFile {
  const shapes = parameterShapes(config);
  const tensors: Record<string, NamedTensor> = {};
  for (const name of Object.keys(shapes).sort()) {
    const w = weights[name];
    if (!w) throw new Error(`safetensors export: the run read back no weights for ${name}`);
    tensors[name] = { data: w instanceof Float32Array ? w : Float32Array.from(w), shape: shapes[name] };
  }
  const metadata = { format: 'pt', producer: 'PipeLab', config: JSON.stringify(config) };
  return { name: `${base}-weights.safetensors`, type: 'application/octet-stream', data: writeSafetensors(tensors, metadata) };
}

/** The run configuration as a PyTorch bundle (train.py and its modules, config, schedule, weights, batches), one zip holding one folder. */
export function torchBundleFile(config: RunConfig, base: string): ExportFile {
  const folder = `${base}-torch`;
  const files = buildTorchBundle(config, TORCH_PROGRAM);
  return { name: `${folder}.zip`, type: 'application/zip', data: writeZip(files.map((f) => ({ path: `${folder}/${f.path}`, data: f.data }))) };
}

export function download(f: ExportFile): void {
  const part: BlobPart = typeof f.data === 'string' ? f.data : new Uint8Array(f.data);
  const url = URL.createObjectURL(new Blob([part], { type: f.type }));
  const a = document.createElement('a');
  a.href = url;
  a.download = f.name;
  a.rel = 'noopener';
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}
