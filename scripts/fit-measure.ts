/**
 * Measures the "Make it fit" preset's five runs on WebGPU through Dawn in Node (one device per rank, in-process ranks;
 * SwiftShader unless PIPELAB_REAL_GPU=1): per run, the most one worker's device held by kind, its host bytes, the mean
 * step time (the first step left out) and the final loss. Prints a Markdown table (bench/FIT.md records one).
 *   node scripts/fit-measure.mjs [steps]   (bundles this file: its WGSL is imported with ?raw)
 */
import { createTestBackend } from '../src/gpu/testing/node-gpu.ts';
import type { GpuBackend } from '../src/gpu/gpu-backend.ts';
import { runPipeline } from '../src/runtime/coordinator.ts';
import { InProcessRankHost } from '../src/runtime/executor/in-process-host.ts';
import { FIT_PRESET_BUDGET_MIB, fitFigures, fitSentence, fitShapes } from '../src/state/compare/fit-preset.ts';

const steps = Number(process.argv[2] ?? 5);
const shapes = fitShapes(steps);
const gpus: GpuBackend[] = [];
const kib = (b: number) => (b / 1024).toFixed(1);
const rows = [];
let adapter = '';
for (const s of shapes) {
  const workers = s.config.dp * s.config.ranks;
  while (gpus.length < workers) gpus.push(await createTestBackend());
  // A first run compiles the kernels; the measured one runs on warm devices.
  await runPipeline({ ...s.config, steps: 1 }, { hostFactory: (w) => new InProcessRankHost(w, gpus[w]) });
  const report = await runPipeline(s.config, { hostFactory: (w) => new InProcessRankHost(w, gpus[w]) });
  adapter = report.adapter;
  rows.push({ key: s.key, f: fitFigures(report), planned: s.planned, admitted: s.admitted });
}
console.log(`adapter: ${adapter}; ${steps} steps; budget ${FIT_PRESET_BUDGET_MIB} MiB a worker\n`);
console.log('| run | plan (KiB), budget says | device peak (KiB) | weights | gradients | optimizer | stash | transient | host (KiB) | step (ms) | final loss |');
console.log('| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |');
for (const r of rows) {
  const f = r.f;
  console.log(`| ${r.key} | ${kib(r.planned)}, ${r.admitted ? 'fits' : 'refused'} | ${kib(f.peak)} | ${kib(f.weights)} | ${kib(f.grads)} | ${kib(f.optimizer)} | ${kib(f.stash)} | ${kib(f.transient)} | ${kib(f.host)} | ${f.stepMs.toFixed(1)} | ${f.loss.toFixed(6)} |`);
}
console.log(`\n${fitSentence(rows)}`);
for (const g of gpus) g.destroy();
