/**
 * The memory fields (issue 54): their rules by field, value and rule; the link; and the budget's refusal before any
 * worker starts, by worker and kind, with what would fit, each option's peak the plan of the run changed that way.
 * (The plan against the stages' and policies' own count: runtime/budget-cpu.test.ts.)
 */
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../util/errors.ts';
import { configFromQuery, configToQuery, defaultRunConfig, validateRunConfig, type RunConfig } from './run-config.ts';
import { budgetRefusal, checkMemoryBudget, fitOptions, MiB, plannedPeaks, worstPeak } from './memory-budget.ts';
import { layerParamCount } from '../nn/model-spec.ts';
import { stageCut, stageMemory } from './run-limits.ts';

const spiral = (over: Partial<RunConfig> = {}): RunConfig => ({ ...defaultRunConfig(), steps: 2, evalEvery: 0, ...over });

function refusal(cfg: RunConfig): ConfigError {
  try {
    validateRunConfig(cfg);
    checkMemoryBudget(cfg);
  } catch (e) {
    if (e instanceof ConfigError) return e;
    throw e;
  }
  throw new Error('not refused');
}

describe('the memory fields’ rules', () => {
  it('a budget that is not a positive number is refused by field, value and rule', () => {
    for (const bad of [0, -1, NaN, Infinity, '8' as unknown as number]) {
      const e = refusal(spiral({ memoryBudget: bad }));
      expect(e.field).toBe('memoryBudget');
      expect(e.message).toMatch(/^memoryBudget = .*: must be a positive number of MiB/);
    }
    expect(() => validateRunConfig(spiral({ memoryBudget: 0.25 }))).not.toThrow();
  });

  it('offload with PipeDream or PipeDream-2BW (no step’s end in a stream window) or ZeRO-2/3 is refused by field and rule', () => {
    const pd = refusal(spiral({ schedule: 'pipedream', offloadOptimizer: true }));
    expect(pd.field).toBe('offloadOptimizer');
    expect(pd.message).toMatch(/^offloadOptimizer = true: .*PipeDream \(schedule = pipedream\) updates inside its stream window, after every backward/);
    expect(refusal(spiral({ schedule: 'pipedream-2bw', offloadOptimizer: true })).message).toMatch(/every m micro-batches/);
    expect(refusal(spiral({ dp: 2, zero: 3, batchSize: 64, offloadOptimizer: true })).message).toMatch(/^offloadOptimizer = true: .*ZeRO-3 \(zero = 3\) also shards the weights.*use zero ≤ 2/);
    expect(() => validateRunConfig(spiral({ dp: 2, zero: 2, batchSize: 64, offloadOptimizer: true }))).not.toThrow();
    expect(refusal(spiral({ offloadOptimizer: 'yes' as unknown as boolean })).message).toMatch(/^offloadOptimizer = "?yes"?: must be true or false/);
    expect(() => validateRunConfig(spiral({ dp: 2, zero: 1, offloadOptimizer: true }))).not.toThrow();
  });

  it('travels in a link (not at its default), and a bad value there is reported and dropped', () => {
    const q = configToQuery(spiral({ memoryBudget: 0.5, offloadOptimizer: true }));
    expect(q).toContain('memoryBudget=0.5');
    expect(q).toContain('offloadOptimizer=true');
    const back = configFromQuery(q);
    expect(back.errors).toEqual([]);
    expect([back.config.memoryBudget, back.config.offloadOptimizer]).toEqual([0.5, true]);
    expect(configToQuery(spiral({ offloadOptimizer: false }))).not.toContain('offloadOptimizer');
    const bad = configFromQuery('memoryBudget=-2');
    expect(bad.errors.map((e) => e.message)).toEqual([expect.stringMatching(/^memoryBudget = -2: must be a positive number/)]);
    expect('memoryBudget' in bad.config).toBe(false);
  });
});

describe('the planned peak by kind', () => {
  it('counts each rank’s parameters from the model: 4 bytes a weight and a gradient, AdamW 8, SGD 4; ZeRO divides by dp', () => {
    const cfg = spiral({ optimizer: 'adamw' });
    const { spec, stageBlocks } = stageCut(cfg);
    // Independently: each stage's parameters from the model's layers.
    const params = stageBlocks.map(([a, b]) => spec.blocks.slice(a, b).flatMap((bl) => bl.layers).reduce((n, l) => n + layerParamCount(l), 0));
    const peaks = plannedPeaks(cfg);
    expect(peaks.map((p) => [p.weights, p.grads, p.optimizer])).toEqual(params.map((n) => [4 * n, 4 * n, 8 * n]));
    const z1 = plannedPeaks(spiral({ optimizer: 'adamw', dp: 2, zero: 1 }));
    // A shard is the largest of a stage's dp chunks: ⌈P / dp⌉ values.
    const half = (n: number) => Math.ceil(n / 2);
    expect(z1.map((p) => [p.weights, p.grads, p.optimizer])).toEqual(params.map((n) => [4 * n, 4 * n, 8 * half(n)]));
    const z3 = plannedPeaks(spiral({ optimizer: 'sgd', dp: 2, zero: 3 }));
    expect(z3.map((p) => [p.weights, p.grads, p.optimizer])).toEqual(params.map((n) => [4 * half(n), 4 * half(n), 4 * half(n)]));
    // ZeRO-3 gathers the rank's whole stage for the step (reshard = step) and reads one stage's whole gradient, beside
    // a backward's working set (run-limits.ts StageMemory.working, tested in run-limits-schedule.test.ts).
    const working = stageMemory(spiral({ optimizer: 'sgd', dp: 2, zero: 3 })).map((s) => s.transient + s.working + s.incoming);
    // With replicas one chunk of a stage is staged up (⌈P / dp⌉: a ring's piece), and the gradient a backward receives.
    expect(z3.map((p) => p.transient)).toEqual(params.map((n, r) => 8 * n + 4 * half(n) + working[r]));
    // Offload: no optimizer state on the device, nothing else moves.
    const off = plannedPeaks(spiral({ optimizer: 'adamw', offloadOptimizer: true }));
    expect(off.map((p) => [p.weights, p.optimizer, p.stash])).toEqual(peaks.map((p) => [p.weights, 0, p.stash]));
    for (const p of peaks) expect(p.total).toBe(p.weights + p.grads + p.optimizer + p.stash + p.transient);
  });
});

describe('the budget’s refusal before any worker starts', () => {
  it('names the worker, its peak by kind against the budget, and each option with the peak it would reach', () => {
    const base = spiral({ optimizer: 'adamw', hidden: 32, layers: 7, microbatches: 8, schedule: 'gpipe' });
    const worst = worstPeak(base);
    // A budget just under the plan: recomputation (GPipe keeps all 8 micro-batches) and offload each free enough.
    const budgetBytes = worst.total - 1024;
    const cfg = { ...base, memoryBudget: budgetBytes / MiB };
    const e = refusal(cfg);
    expect(e.field).toBe('memoryBudget');
    expect(e.message).toMatch(new RegExp(`^memoryBudget = ${cfg.memoryBudget}: worker ${worst.rank} \\(R${worst.rank}\\) plans a peak of`));
    for (const k of ['weights', 'gradients', 'optimizer state', 'stash', 'transient']) expect(e.message).toContain(k);
    const options = fitOptions(cfg, budgetBytes);
    expect(options.map((o) => o.label)).toEqual([expect.stringMatching(/^more stages \(ranks = \d+\)$/), 'recomputation (recompute = true)', 'ZeRO-3 over two replicas (dp = 2, zero = 3)', 'activation swapping (swap = all)', 'optimizer offload (offloadOptimizer = true)']);
    for (const o of options) {
      // Each option's peak is the plan of the run changed that way, and one that fits is admitted.
      const changed = { ...cfg, ...o.change };
      expect(o.peak).toBe(worstPeak(changed).total);
      expect(o.fits).toBe(o.peak <= budgetBytes);
      if (o.fits) expect(budgetRefusal(changed)).toBeNull();
    }
    expect(options.find((o) => o.change.offloadOptimizer)!.peak).toBe(worst.total - worst.optimizer);
    // Swapping leaves two micro-batches' stash of each stage on the device (GPipe keeps all 8 without it).
    const swap = options.find((o) => o.change.swap === 'all')!;
    expect(swap.peak).toBeLessThan(worst.total);
    expect(options.filter((o) => o.fits).length).toBeGreaterThan(0);
    expect(e.message).toContain('It would fit with');
  });

  it('a budget the plan stays under is no refusal; none is none', () => {
    const cfg = spiral();
    expect(budgetRefusal(cfg)).toBeNull();
    expect(budgetRefusal({ ...cfg, memoryBudget: worstPeak(cfg).total / MiB })).toBeNull();
  });

  it('where nothing fits alone, all of them together are tried', () => {
    const cfg = spiral({ optimizer: 'adamw', ranks: 2, layers: 3, memoryBudget: 1e-4 });
    const options = fitOptions(cfg, 1e-4 * MiB);
    expect(options.every((o) => !o.fits)).toBe(true);
    expect(options.at(-1)!.label).toMatch(/^all of more stages, recomputation, activation swapping, optimizer offload together$/);
    expect(refusal(cfg).message).toMatch(/Nothing tried here fits it\. Still over: /);
  });
});
