/**
 * The memory budget on the float64 CPU host with real workers' code (issue 54): the plan the budget is checked on
 * (config/memory-budget.ts) bounds each worker's allocator count (nn/memory-ledger.ts, report/high-water.ts
 * stepHighWater) in every step, so the refusal before start and the check after every step agree: a budget of the
 * plan runs to its end, one byte less is refused before any worker starts; a run over its budget is refused; a run
 * that starts and then grows past it ends after that step, naming the worker and what grew, its earlier checkpoint
 * handed out and nothing hanging.
 */
import { describe, expect, it } from 'vitest';
import { CpuBackend } from '../nn/cpu-backend.ts';
import { kindIndex } from '../nn/memory-ledger.ts';
import { runPipeline } from './coordinator.ts';
import { InProcessRankHost, recordingHosts } from './executor/in-process-host.ts';
import type { StepResult, StreamNews } from './executor/index.ts';
import { defaultRunConfig, withDataset, type RunConfig } from '../config/run-config.ts';
import { ConfigError } from '../util/errors.ts';
import { MiB, PEAK_KINDS, plannedPeaks, totalOf, worstPeak } from '../config/memory-budget.ts';
import { MemoryBudgetError } from './budget-check.ts';
import { policyHeld, stepHighWater } from './report/index.ts';

const spiral = (over: Partial<RunConfig> = {}): RunConfig => ({ ...defaultRunConfig(), steps: 2, evalEvery: 0, ...over });
const gpt = (over: Partial<RunConfig>): RunConfig => ({ ...withDataset(defaultRunConfig(), 'names'), model: 'gpt', layers: 2, heads: 2, width: 16, blockSize: 16, batchSize: 16, microbatches: 4, steps: 2, evalEvery: 0, ranks: 2, schedule: 'gpipe', ...over });

/** A worker whose count of stash grows by `extra` bytes from step `from` on (a leak the plan did not see). */
class LeakyHost extends InProcessRankHost {
  constructor(rank: number, private readonly from: number, private readonly extra: number) {
    super(rank, new CpuBackend());
  }
  override async step(step: number, onStream?: StreamNews): Promise<StepResult> {
    const r = await super.step(step, onStream);
    if (step < this.from || !r.memory) return r;
    const live = [...r.memory.peak.live];
    live[kindIndex('stash')] += this.extra;
    return { ...r, memory: { ...r.memory, peak: { ...r.memory.peak, live } } };
  }
}

/** Runs `cfg` on the CPU host, keeping every worker's step results. */
async function runSeen(cfg: RunConfig): Promise<StepResult[][]> {
  const seen: StepResult[][] = [];
  await runPipeline(cfg, { hostFactory: recordingHosts(seen, () => new CpuBackend()), recvTimeoutMs: 20000 });
  return seen;
}

describe('the memory budget on the CPU host', () => {
  const COUNTED: [string, RunConfig, number][] = [
    // [title, run, how close the count comes to the plan on its fullest worker]
    ['1F1B, AdamW', spiral({ optimizer: 'adamw' }), 0.05],
    ['GPipe, SGD, full recomputation', spiral({ schedule: 'gpipe', optimizer: 'sgd', recompute: true }), 0.05],
    ['GPipe, every stage swapped', spiral({ schedule: 'gpipe', swap: 'all' }), 0.05],
    ['1F1B, optimizer offload', spiral({ optimizer: 'adamw', offloadOptimizer: true }), 0.05],
    ['dp 2, ZeRO-1, AdamW', spiral({ optimizer: 'adamw', ranks: 2, layers: 3, dp: 2, zero: 1 }), 0.15],
    ['dp 2, ZeRO-3, AdamW', spiral({ optimizer: 'adamw', ranks: 2, dp: 2, zero: 3 }), 0.15],
    ['dp 2, ZeRO-2 with optimizer offload', spiral({ optimizer: 'adamw', ranks: 2, dp: 2, zero: 2, offloadOptimizer: true }), 0.2],
    ['the GPT, GPipe', gpt({}), 0.15],
  ];
  for (const [title, cfg, close] of COUNTED) {
    it(`${title}: every worker's allocator count stays within the plan in every step; a budget of the plan runs to its end, one byte less is refused`, async () => {
      const plan = plannedPeaks(cfg);
      const worst = worstPeak(cfg).total;
      const seen = await runSeen({ ...cfg, memoryBudget: worst / MiB });
      expect(seen).toHaveLength(cfg.steps);
      let most = 0;
      for (const step of seen)
        step.forEach((r, w) => {
          const hw = stepHighWater(r);
          // The count is the allocator's: its high-water mark, folded into the plan's kinds.
          expect(totalOf(hw)).toBe(r.memory!.peak.live.reduce((a, b) => a + b, 0));
          expect(totalOf(hw)).toBeLessThanOrEqual(plan[w % cfg.ranks].total);
          // The model states at that moment never pass their plan (ZeRO-1's update may hold a gathered chunk as weights beside its freed gradients).
          if (cfg.zero === 0) for (const k of ['weights', 'grads', 'optimizer'] as const) expect(hw[k]).toBeLessThanOrEqual(plan[w % cfg.ranks][k]);
          most = Math.max(most, totalOf(hw));
        });
      expect(most / worst).toBeGreaterThan(1 - close);
      await expect(runPipeline({ ...cfg, memoryBudget: (worst - 1) / MiB }, { hostFactory: () => { throw new Error('no worker may start'); } })).rejects.toThrow(ConfigError);
    });
  }

  it("the policy's own held bytes by kind (the report's per-kind figures) equal the plan's model states and stash", async () => {
    const cfg = spiral({ optimizer: 'adamw' });
    const plan = plannedPeaks(cfg);
    for (const step of await runSeen(cfg))
      step.forEach((r, w) => {
        const h = policyHeld(r);
        expect(PEAK_KINDS.filter((k) => k !== 'transient').map((k) => h[k])).toEqual(PEAK_KINDS.filter((k) => k !== 'transient').map((k) => plan[w][k]));
      });
  });

  it('a run over its budget is refused before any worker starts', async () => {
    const cfg = spiral({ memoryBudget: 0.001 });
    let started = 0;
    const run = runPipeline(cfg, { hostFactory: (w) => (started++, new InProcessRankHost(w, new CpuBackend())) });
    await expect(run).rejects.toThrow(ConfigError);
    await expect(run).rejects.toThrow(/^memoryBudget = 0\.001: worker \d \(R\d\) plans a peak of .* against a budget of 1\.0 KiB/);
    expect(started).toBe(0);
  });

  it('a worker that grows past its budget ends the run after that step, naming what grew; the earlier checkpoint stays', async () => {
    const cfg = spiral({ steps: 3, optimizer: 'adamw' });
    const plan = plannedPeaks(cfg);
    const budget = worstPeak(cfg).total;
    // Worker 2's stash grows from step 1 on by more than the room left under the budget.
    const extra = budget - plan[2].total + 4096;
    const progress: number[] = [];
    const steps: number[] = [];
    const run = runPipeline(
      { ...cfg, memoryBudget: budget / MiB },
      {
        hostFactory: (w) => (w === 2 ? new LeakyHost(w, 1, extra) : new InProcessRankHost(w, new CpuBackend())),
        recvTimeoutMs: 10000,
        progressEvery: 1,
        onProgress: (p) => progress.push(p.stepsDone),
        onStep: (s) => steps.push(s.step),
      },
    );
    await expect(run).rejects.toThrow(MemoryBudgetError);
    await expect(run).rejects.toThrow(new RegExp(`^step 1: worker 2 \\(R2\\) held .*, over its memory budget of .*\\. What grew past the plan of .*: stash .* \\(planned .*\\)\\. The run stopped after that step; its last checkpoint stays\\.$`));
    expect(steps).toEqual([0]);
    expect(progress).toEqual([1]);
  });
});
