/**
 * The warm-up on WebGPU (Dawn in Node, one device per rank, in-process ranks
 * over real MessageChannels): each rank compiles exactly the kernels its steps
 * use — none is compiled during a step (step 0 is measured like the others),
 * none that its stages never run (no loss kernel before the last stage, one
 * matmul variant) — and the dry pass that names them changes nothing: the
 * losses equal the float64 CPU reference run of the same pipeline.
 * Needs VK_ICD_FILENAMES=/usr/lib/chromium/vk_swiftshader_icd.json here.
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { GpuBackend } from '../../gpu/gpu-backend.ts';
import { DEFAULT_MATMUL_VARIANT, matmulSpec, MATMUL_VARIANTS } from '../../gpu/kernels.ts';
import { PipelineCache } from '../../gpu/pipelines.ts';
import { createTestBackend } from '../../gpu/testing/node-gpu.ts';
import { CpuBackend } from '../../nn/cpu-backend.ts';
import type { Backend } from '../../nn/backend.ts';
import { runPipeline } from '../coordinator.ts';
import { InProcessRankHost } from './in-process-host.ts';
import { defaultRunConfig, type RunConfig } from '../../config/run-config.ts';

const backends: GpuBackend[] = [];
afterAll(() => {
  for (const b of backends) b.destroy();
});

function config(optimizer: RunConfig['optimizer']): RunConfig {
  return { ...defaultRunConfig(), ranks: 3, layers: 3, hidden: 8, batchSize: 16, microbatches: 4, steps: 3, evalEvery: 0, optimizer, lr: 0.01 };
}

function run(cfg: RunConfig, bes: Backend[]) {
  return runPipeline(cfg, { hostFactory: (r) => new InProcessRankHost(r, bes[r]) });
}

/** Cache keys of the default matmul variant (any form, aligned or ragged loads): the only matmul kernels a run without the autotune may compile. */
function defaultMatmulKeys(): Set<string> {
  const v = MATMUL_VARIANTS.find((x) => x.name === DEFAULT_MATMUL_VARIANT)!;
  const cache = new PipelineCache({} as GPUDevice);
  const keys = new Set<string>();
  const flags = [false, true];
  // Every form, with each operand read aligned (vec4) or ragged (in place, bounds-checked): the same kernel either way.
  for (const a of flags) for (const b of flags) for (const ra of flags) for (const rb of flags) keys.add(cache.key(matmulSpec(v, a, b, 0, [ra, rb])));
  return keys;
}

/** One run of `optimizer` on fresh devices, one per rank, made once per file: the adamw one is also the first warm-up that the last test repeats. */
const firstRuns = new Map<RunConfig['optimizer'], Promise<{ cfg: RunConfig; gpus: GpuBackend[]; report: Awaited<ReturnType<typeof run>> }>>();
function firstRun(optimizer: RunConfig['optimizer']) {
  let p = firstRuns.get(optimizer);
  if (!p) {
    p = (async () => {
      const cfg = config(optimizer);
      const gpus: GpuBackend[] = [];
      for (let r = 0; r < cfg.ranks; r++) gpus.push(await createTestBackend());
      backends.push(...gpus);
      return { cfg, gpus, report: await run(cfg, gpus) };
    })();
    firstRuns.set(optimizer, p);
  }
  return p;
}

describe('warm-up compiles what a rank uses, before step 0', () => {
  for (const optimizer of ['sgd', 'adamw'] as const) {
    it(`${optimizer}: every kernel the steps ran was compiled by the warm-up, only those, and the losses equal the CPU run`, async () => {
      const { cfg, gpus, report } = await firstRun(optimizer);
      const ranks = report.phases.ranks;
      expect(ranks.map((s) => s.rank)).toEqual([0, 1, 2]);
      const matmuls = defaultMatmulKeys();
      gpus.forEach((be, r) => {
        const keys = be.compiledKernels();
        // The steps compiled nothing more than the warm-up named and built.
        expect(keys.length).toBe(ranks[r].kernels);
        expect(ranks[r].compiled).toBe(ranks[r].kernels);
        // Only the stage's own kernels: the loss on the last rank alone, one matmul variant, this optimizer alone.
        const has = (file: string) => keys.some((k) => k.startsWith(`${file}#`));
        expect(has('softmax_xent')).toBe(r === cfg.ranks - 1);
        expect(keys.some((k) => k.startsWith(`optimizer#${optimizer}|`))).toBe(true);
        expect(keys.some((k) => k.startsWith(`optimizer#${optimizer === 'sgd' ? 'adamw' : 'sgd'}|`))).toBe(false);
        for (const k of keys.filter((x) => x.startsWith('matmul#'))) expect(matmuls.has(k), k).toBe(true);
      });
      // The naming pass computed nothing: same losses as the float64 CPU reference.
      const cpu = await run(cfg, gpus.map(() => new CpuBackend()));
      expect(cpu.phases.ranks.every((s) => s.kernels === 0)).toBe(true);
      expect(report.losses.length).toBe(cfg.steps);
      report.losses.forEach((l, i) => expect(Math.abs(l - cpu.losses[i])).toBeLessThan(1e-4 * Math.max(1, Math.abs(cpu.losses[i]))));
      expect(report.leakedBuffers).toBe(0);
    }, 120_000);
  }

  it('a second warm-up of the same kernels on the same device compiles none', async () => {
    // The adamw test's devices, after its run (its warm-up compiled every kernel that run used; checked there).
    const { cfg, gpus, report: first } = await firstRun('adamw');
    const second = await run({ ...cfg, seed: cfg.seed + 1 }, gpus);
    second.phases.ranks.forEach((s, r) => {
      expect(s.kernels).toBe(first.phases.ranks[r].kernels);
      expect(s.compiled).toBe(0);
    });
  }, 120_000);
});
