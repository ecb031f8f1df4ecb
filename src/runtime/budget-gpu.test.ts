/**
 * The budget's GPU plan bounds the GPU backend's count (issue 54): on Dawn in Node (SwiftShader), one device per rank,
 * a run whose budget is exactly its GPU plan (config/memory-budget.ts budgetPeak 'gpu': the plan and the GPU's own
 * overheads, config/gpu-overhead.ts) runs to its end without a breach of the per-step check, for a tiny MLP (with and
 * without recomputation) and the Make it fit preset's five shapes; each worker's count (the last step's high-water
 * mark, the check's kinds) stays under its GPU plan less the uniform ring, and the ratio is printed. The same MLP
 * at a budget of its plain plan is stopped by the per-step check; one byte under the GPU plan the plain plan admits what a GPU
 * backend refuses, and the refusal names the GPU's line.
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { GpuBackend } from '../gpu/gpu-backend.ts';
import { createTestBackend } from '../gpu/testing/node-gpu.ts';
import { runPipeline } from './coordinator.ts';
import { MemoryBudgetError } from './budget-check.ts';
import { InProcessRankHost } from './executor/in-process-host.ts';
import { defaultRunConfig, type RunConfig } from '../config/run-config.ts';
import { budgetPeak, budgetRefusal, MiB, plannedPeaks, worstBudgetPeak } from '../config/memory-budget.ts';
import { gpuOverhead } from '../config/gpu-overhead.ts';
import { placeOf, meshOfRun } from '../schedule/mesh.ts';
import { planKinds } from './report/high-water.ts';
import { fitShapes } from '../state/compare/fit-preset.ts';

const backends: GpuBackend[] = [];
afterAll(() => {
  for (const b of backends) b.destroy();
});

const mlp: RunConfig = { ...defaultRunConfig(), ranks: 2, layers: 3, hidden: 16, batchSize: 32, microbatches: 4, steps: 3, evalEvery: 0, optimizer: 'adamw', lr: 0.01, schedule: 'gpipe' };

/** Runs `cfg` at a budget of exactly its GPU plan; returns each worker's count / GPU plan (less the ring, which the check does not count). */
async function atGpuPlan(name: string, cfg: RunConfig): Promise<number[]> {
  while (backends.length < cfg.ranks * cfg.dp) backends.push(await createTestBackend());
  const memoryBudget = worstBudgetPeak(cfg, 'gpu') / MiB;
  const run = { ...cfg, memoryBudget };
  expect(budgetRefusal(run, 'gpu')).toBeNull();
  const r = await runPipeline(run, { hostFactory: (k) => new InProcessRankHost(k, backends[k]), budgetTarget: 'gpu' });
  expect(r.losses.length).toBe(cfg.steps);
  const plans = plannedPeaks(cfg);
  const m = meshOfRun(cfg);
  return r.heldBytesPerWorker.map((h, w) => {
    const plan = plans[placeOf(m, w).rank];
    const k = planKinds(h.measured!.byKind);
    const count = k.weights + k.grads + k.optimizer + k.stash + k.transient;
    const bound = budgetPeak(plan, 'gpu') - gpuOverhead(plan).ring;
    console.log(`${name} worker ${w}: count ${count} B, plan ${plan.total} B (count/plan ${(count / plan.total).toFixed(2)}), GPU plan less ring ${bound} B (count/that ${(count / bound).toFixed(2)})`);
    expect(count).toBeLessThanOrEqual(bound);
    // The ring the GPU plan names is the one the backend made (its buffer's size, as the ledger counted it).
    expect(h.measured!.byKind.uniforms).toBe(gpuOverhead(plan).ring);
    return count / bound;
  });
}

describe('the GPU plan bounds the GPU backend\'s count', () => {
  it('a tiny MLP, with and without recomputation, runs at a budget of its GPU plan', async () => {
    await atGpuPlan('mlp', mlp);
    await atGpuPlan('mlp recompute', { ...mlp, recompute: true });
  }, 120_000);

  for (const shape of fitShapes(2)) {
    it(`the fit preset's GPT (${shape.key}) runs at a budget of its GPU plan`, async () => {
      await atGpuPlan(`fit ${shape.key}`, shape.config);
    }, 180_000);
  }

  it('at a budget of the plain plan the same MLP is stopped by the per-step check on the GPU (what the GPU plan adds is needed)', async () => {
    while (backends.length < mlp.ranks) backends.push(await createTestBackend());
    const run = { ...mlp, memoryBudget: worstBudgetPeak(mlp, 'cpu') / MiB };
    await expect(runPipeline(run, { hostFactory: (k) => new InProcessRankHost(k, backends[k]) })).rejects.toThrow(MemoryBudgetError);
  }, 60_000);

  it('the refusal on a GPU backend names the GPU runtime; the plain plan admits what the GPU plan refuses', () => {
    const gpu = worstBudgetPeak(mlp, 'gpu');
    const cfg = { ...mlp, memoryBudget: (gpu - 1) / MiB };
    expect(budgetRefusal(cfg, 'cpu')).toBeNull();
    const msg = budgetRefusal(cfg, 'gpu');
    expect(msg).toMatch(/GPU runtime .*uniform ring 256\.0 KiB/);
    expect(msg).toMatch(/pool rounding ≤ .*then ≤ 25% more/);
  });
});
