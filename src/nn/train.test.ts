/**
 * The single-device loop on the float64 CPU reference: it learns the spiral;
 * one stage, the same model cut into stages, micro-batching and recompute all
 * compute the same thing; the configuration is validated field by field.
 */
import { describe, expect, it } from 'vitest';
import { sampleNames } from '../data/sample-names.ts';
import { NAMES_VOCAB } from '../data/names.ts';
import { CpuBackend } from './cpu-backend.ts';
import { nextCharLogits } from './sample.ts';
import { defaultTrainConfig, lrAt, validateTrainConfig } from './train-config.ts';
import type { TrainConfig } from './train-config.ts';
import { trainSingleDevice } from './train.ts';

const cpu = new CpuBackend();

describe('trainSingleDevice on the CPU reference', () => {
  it('spiral reaches ≥ 95% training accuracy', async () => {
    const cfg: TrainConfig = { ...defaultTrainConfig('spiral'), steps: 100, evalEvery: 0 };
    const r = await trainSingleDevice(cpu, cfg);
    console.log(`cpu spiral: ${cfg.steps} steps, ${(r.ms / 1000).toFixed(1)} s, train accuracy ${r.final.trainAccuracy.toFixed(3)}, val accuracy ${r.final.valAccuracy.toFixed(3)}, loss ${r.losses.at(-1)?.toFixed(4)}`);
    expect(r.losses).toHaveLength(100);
    expect(r.final.trainAccuracy).toBeGreaterThanOrEqual(0.95);
    expect(r.losses.at(-1)).toBeLessThan(r.losses[0] / 4);
  });

  it('one stage and the same model cut into 2 or 4 stages give identical losses and weights', async () => {
    const base: TrainConfig = { ...defaultTrainConfig('spiral'), steps: 8, evalEvery: 0 };
    const one = await trainSingleDevice(cpu, { ...base, stages: 1 });
    for (const stages of [2, 4]) {
      const many = await trainSingleDevice(cpu, { ...base, stages });
      expect(many.ranges).toHaveLength(stages);
      expect(many.losses).toEqual(one.losses);
      expect(many.params).toEqual(one.params);
    }
  });

  it('names: one stage vs three, and recompute, give identical losses and weights', async () => {
    const base: TrainConfig = { ...defaultTrainConfig('names'), hidden: 16, layers: 2, batchSize: 32, steps: 3, evalEvery: 0 };
    const one = await trainSingleDevice(cpu, base);
    const three = await trainSingleDevice(cpu, { ...base, stages: 3, recompute: true });
    expect(three.losses).toEqual(one.losses);
    expect(three.params).toEqual(one.params);
    expect(one.final.valLoss).toBeGreaterThan(2);
  });

  it('gradient accumulation over micro-batches equals one big batch (to rounding)', async () => {
    const base: TrainConfig = { ...defaultTrainConfig('spiral'), steps: 5, evalEvery: 0, optimizer: 'sgd', lr: 0.1 };
    const whole = await trainSingleDevice(cpu, { ...base, microbatches: 1 });
    const split = await trainSingleDevice(cpu, { ...base, microbatches: 8 });
    split.losses.forEach((l, i) => expect(l).toBeCloseTo(whole.losses[i], 12));
    for (const [k, v] of Object.entries(whole.params)) Array.from(split.params[k]).forEach((x, i) => expect(x).toBeCloseTo(v[i], 12));
  });

  it('reports every step and evaluation, and stops when asked', async () => {
    const steps: number[] = [];
    const evals: number[] = [];
    const r = await trainSingleDevice(
      cpu,
      { ...defaultTrainConfig('moons'), steps: 20, evalEvery: 5 },
      { onStep: (s) => void steps.push(s.step), onEval: (e) => void evals.push(e.step), shouldStop: () => steps.length >= 12 },
    );
    expect(steps).toEqual([...Array(12).keys()]);
    expect(evals).toEqual([5, 10, 12]);
    expect(r.stepsDone).toBe(12);
  });

  it('samples names from a trained model (letters and hyphens only)', async () => {
    const cfg: TrainConfig = { ...defaultTrainConfig('names'), hidden: 32, batchSize: 64, microbatches: 1, steps: 30, evalEvery: 0 };
    let names: string[] = [];
    await trainSingleDevice(cpu, cfg, {
      onDone: async (model) => {
        names = await sampleNames(nextCharLogits(cpu, model), { count: 20, context: cfg.context, seed: 3, maxLength: 12 });
      },
    });
    expect(names).toHaveLength(20);
    for (const n of names) {
      expect(n.length).toBeLessThanOrEqual(12);
      for (const c of n) expect(NAMES_VOCAB.slice(1)).toContain(c);
    }
    expect(new Set(names).size).toBeGreaterThan(10);
  });
});

describe('TrainConfig', () => {
  it('the defaults are valid for every data set', () => {
    for (const ds of ['spiral', 'moons', 'circles', 'xor', 'names'] as const) expect(() => validateTrainConfig(defaultTrainConfig(ds))).not.toThrow();
  });

  const bad: [Partial<TrainConfig>, string][] = [
    [{ lr: NaN }, 'lr = NaN: must be a finite number'],
    [{ lr: Infinity }, 'lr = Infinity: must be a finite number'],
    [{ lr: 0 }, 'lr = 0: must be greater than 0'],
    [{ lr: -0.1 }, 'lr = -0.1: must be greater than 0'],
    [{ batchSize: 0 }, 'batchSize = 0: must be an integer between 1 and 65536'],
    [{ batchSize: 64, microbatches: 5 }, 'microbatches = 5: must divide batchSize = 64 evenly'],
    [{ microbatches: 0 }, 'microbatches = 0: must be an integer between 1 and 64'],
    [{ stages: 5 }, 'stages = 5: must be an integer from 1 to the number of blocks, 4 (layers + 1; a stage holds at least one block)'],
    [{ stages: 0 }, 'stages = 0: must be an integer from 1 to the number of blocks, 4'],
    [{ steps: -1 }, 'steps = -1: must be an integer between 1 and 1000000'],
    [{ hidden: 0 }, 'hidden = 0: must be an integer between 1 and 4096'],
    [{ hidden: -3 }, 'hidden = -3: must be an integer between 1 and 4096'],
    [{ layers: 2.5 }, 'layers = 2.5: must be an integer'],
    [{ activation: 'sigmoid' as never }, 'activation = "sigmoid": must be one of relu, gelu, tanh'],
    [{ dataset: 'mnist' as never }, 'dataset = "mnist": must be one of spiral, moons, circles, xor, names'],
    [{ model: 'transformer' as never }, 'model = "transformer": must be one of mlp, char-mlp'],
    [{ dataset: 'names' }, 'dataset = "names": must be a 2-D set (spiral, moons, circles, xor) for model "mlp"'],
    [{ optimizer: 'lion' as never }, 'optimizer = "lion": must be one of sgd, adamw'],
    [{ momentum: 1 }, 'momentum = 1: must be less than 1'],
    [{ weightDecay: -1 }, 'weightDecay = -1: must be at least 0'],
    [{ noise: 2 }, 'noise = 2: must be at most 1'],
    [{ points: 0 }, 'points = 0: must be an integer between 3 and 100000'],
    [{ seed: -1 }, 'seed = -1: must be an integer between 0 and 4294967295'],
    [{ context: 0 }, 'context = 0: must be an integer between 1 and 16'],
    [{ embedDim: 0 }, 'embedDim = 0: must be an integer between 1 and 512'],
    [{ recompute: 'yes' as never }, 'recompute = "yes": must be true or false'],
    [{ lrSchedule: 'step' as never }, 'lrSchedule = "step": must be one of constant, cosine'],
  ];
  for (const [patch, message] of bad) {
    it(`rejects ${JSON.stringify(patch, (_k, v: unknown) => (typeof v === 'number' && !Number.isFinite(v) ? String(v) : v))}`, () => {
      expect(() => validateTrainConfig({ ...defaultTrainConfig('spiral'), ...patch })).toThrow(message);
    });
  }

  it('trainSingleDevice validates before it builds anything', async () => {
    await expect(trainSingleDevice(cpu, { ...defaultTrainConfig('spiral'), lr: NaN })).rejects.toThrow('lr = NaN: must be a finite number');
  });

  it('cosine schedule: lr at the first step, lr/10 at the last', () => {
    const cfg = { lr: 0.01, lrSchedule: 'cosine' as const, steps: 101 };
    expect(lrAt(cfg, 0)).toBeCloseTo(0.01, 15);
    expect(lrAt(cfg, 50)).toBeCloseTo(0.0055, 15);
    expect(lrAt(cfg, 100)).toBeCloseTo(0.001, 15);
    expect(lrAt({ ...cfg, lrSchedule: 'constant' }, 100)).toBe(0.01);
  });
});
