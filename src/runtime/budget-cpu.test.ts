/**
 * The memory budget on the float64 CPU host with real workers' code (issue 54): the plan the budget is checked on
 * equals each worker's count by kind (report/high-water.ts); a run over its budget is refused before any worker
 * starts; a run that starts and then grows past it ends after that step, naming the worker and what grew, its
 * earlier checkpoint handed out and nothing hanging.
 */
import { describe, expect, it } from 'vitest';
import { CpuBackend } from '../nn/cpu-backend.ts';
import { runPipeline } from './coordinator.ts';
import { InProcessRankHost } from './executor/in-process-host.ts';
import type { StepResult, StreamNews } from './executor/index.ts';
import { defaultRunConfig, type RunConfig } from '../config/run-config.ts';
import { ConfigError } from '../util/errors.ts';
import { MiB, plannedPeaks, worstPeak } from '../config/memory-budget.ts';
import { MemoryBudgetError } from './budget-check.ts';
import { stepHighWater } from './report/index.ts';

const spiral = (over: Partial<RunConfig> = {}): RunConfig => ({ ...defaultRunConfig(), steps: 2, evalEvery: 0, ...over });

/** A worker whose stash grows by `extra` bytes from step `from` on (a leak the plan did not see). */
class LeakyHost extends InProcessRankHost {
  constructor(rank: number, private readonly from: number, private readonly extra: number) {
    super(rank, new CpuBackend());
  }
  override async step(step: number, onStream?: StreamNews): Promise<StepResult> {
    const r = await super.step(step, onStream);
    if (step < this.from) return r;
    const peak = { ...r.peakStashBytes };
    const s = Number(Object.keys(peak)[0]);
    peak[s] += this.extra;
    return { ...r, peakStashBytes: peak };
  }
}

describe('the memory budget on the CPU host', () => {
  const COUNTED: [string, RunConfig][] = [
    ['1F1B, AdamW', spiral({ optimizer: 'adamw' })],
    ['GPipe, SGD, full recomputation', spiral({ schedule: 'gpipe', optimizer: 'sgd', recompute: true })],
    ['dp 2, ZeRO-1, AdamW', spiral({ optimizer: 'adamw', ranks: 2, layers: 3, dp: 2, zero: 1 })],
  ];
  for (const [title, cfg] of COUNTED) {
    it(`${title}: the plan of each kind at rest and of the stash equals each worker's count`, async () => {
      const seen: StepResult[][] = [];
      const hosts = (w: number) => {
        const h = new InProcessRankHost(w, new CpuBackend());
        const step = h.step.bind(h);
        h.step = async (s, n) => {
          const r = await step(s, n);
          (seen[s] ??= [])[w] = r;
          return r;
        };
        return h;
      };
      await runPipeline({ ...cfg, memoryBudget: worstPeak(cfg).total / MiB }, { hostFactory: hosts, recvTimeoutMs: 10000 });
      const plan = plannedPeaks(cfg);
      for (const step of seen) {
        // Under ZeRO a worker's shard is its chunk of each stage: the plan is the largest of its rank's replicas'.
        const most = plan.map((_, rank) => Math.max(...step.filter((_, w) => w % cfg.ranks === rank).map((r) => stepHighWater(r).optimizer)));
        expect(most).toEqual(plan.map((p) => p.optimizer));
        step.forEach((r, w) => {
          const hw = stepHighWater(r);
          const p = plan[w % cfg.ranks];
          expect(hw.optimizer).toBeLessThanOrEqual(p.optimizer);
          expect([hw.weights, hw.grads, hw.stash]).toEqual([p.weights, p.grads, p.stash]);
          // The recomputation's live-again activations are not in the stages' count; the policy's transient is 0 here.
          expect(hw.transient).toBe(0);
        });
      }
    });
  }

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
