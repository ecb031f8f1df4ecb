/** SGD and AdamW against the update rules computed by hand here, and the lr checks. */
import { describe, expect, it } from 'vitest';
import { CpuBackend } from './cpu-backend.ts';
import { createOptimizer } from './optimizer.ts';
import type { OptimizerConfig } from './optimizer.ts';
import type { Param } from './param.ts';

const be = new CpuBackend();

function param(name: string, value: number[], grad: number[], decay: boolean): Param {
  return { name, value: be.tensor(value, [value.length]), grad: be.tensor(grad, [grad.length]), decay };
}

async function values(p: Param): Promise<number[]> {
  return Array.from(await be.read(p.value));
}

describe('sgd', () => {
  it('momentum and weight decay (decay only where the param asks for it), over two steps', async () => {
    const w = param('W', [1, -2], [0.5, 0.25], true);
    const b = param('b', [3], [1], false);
    const opt = createOptimizer(be, [w, b], { optimizer: 'sgd', lr: 0.1, momentum: 0.9, weightDecay: 0.01 });
    opt.step(2);
    // v = 2g + wd·p; p -= lr·v
    let vw = [2 * 0.5 + 0.01 * 1, 2 * 0.25 + 0.01 * -2];
    let pw = [1 - 0.1 * vw[0], -2 - 0.1 * vw[1]];
    let vb = 2 * 1;
    let pb = 3 - 0.1 * vb;
    (await values(w)).forEach((x, i) => expect(x).toBeCloseTo(pw[i], 14));
    expect((await values(b))[0]).toBeCloseTo(pb, 14);
    opt.step(2);
    vw = vw.map((v, i) => 0.9 * v + 2 * [0.5, 0.25][i] + 0.01 * pw[i]);
    pw = pw.map((p, i) => p - 0.1 * vw[i]);
    vb = 0.9 * vb + 2;
    pb = pb - 0.1 * vb;
    (await values(w)).forEach((x, i) => expect(x).toBeCloseTo(pw[i], 14));
    expect((await values(b))[0]).toBeCloseTo(pb, 14);
    expect(opt.steps).toBe(2);
  });
});

describe('adamw', () => {
  it('bias-corrected moments and decoupled weight decay, over two steps', async () => {
    const w = param('W', [0.5], [0.2], true);
    const cfg: OptimizerConfig = { optimizer: 'adamw', lr: 0.01, momentum: 0, weightDecay: 0.1 };
    const opt = createOptimizer(be, [w], cfg);
    let p = 0.5, m = 0, v = 0;
    for (let t = 1; t <= 2; t++) {
      opt.step(1);
      const g = 0.2;
      m = 0.9 * m + 0.1 * g;
      v = 0.999 * v + 0.001 * g * g;
      const mh = m / (1 - 0.9 ** t), vh = v / (1 - 0.999 ** t);
      p = p * (1 - 0.01 * 0.1) - (0.01 * mh) / (Math.sqrt(vh) + 1e-8);
      expect((await values(w))[0]).toBeCloseTo(p, 14);
    }
  });

  it('the lr can change between steps (schedules)', async () => {
    const w = param('W', [1], [1], false);
    const opt = createOptimizer(be, [w], { optimizer: 'adamw', lr: 0.1, momentum: 0, weightDecay: 0 });
    opt.lr = 0.05;
    opt.step();
    // First AdamW step moves by lr·g/|g| (up to eps).
    expect((await values(w))[0]).toBeCloseTo(0.95, 6);
  });
});

describe('optimizer config errors name the field, the value and the rule', () => {
  const w = () => [param('W', [1], [1], true)];
  const base: OptimizerConfig = { optimizer: 'sgd', lr: 0.1, momentum: 0.9, weightDecay: 0 };
  const cases: [Partial<OptimizerConfig>, string][] = [
    [{ lr: NaN }, 'lr = NaN: must be a finite number'],
    [{ lr: Infinity }, 'lr = Infinity: must be a finite number'],
    [{ lr: -Infinity }, 'lr = -Infinity: must be a finite number'],
    [{ lr: 0 }, 'lr = 0: must be greater than 0'],
    [{ lr: 100 }, 'lr = 100: must be at most 10'],
    [{ momentum: -0.1 }, 'momentum = -0.1: must be at least 0'],
    [{ weightDecay: NaN }, 'weightDecay = NaN: must be a finite number'],
    [{ optimizer: 'adam' as never }, 'optimizer = "adam": must be one of sgd, adamw'],
    [{ optimizer: 'adamw', beta2: 1 }, 'beta2 = 1: must be less than 1'],
    [{ optimizer: 'adamw', eps: 0 }, 'eps = 0: must be greater than 0'],
  ];
  for (const [patch, msg] of cases) {
    it(msg, () => expect(() => createOptimizer(be, w(), { ...base, ...patch })).toThrow(msg));
  }

  it('a non-finite lr set later, or a bad gradScale, is caught at step', () => {
    const opt = createOptimizer(be, w(), base);
    opt.lr = NaN;
    expect(() => opt.step()).toThrow('lr = NaN: must be a finite number');
    opt.lr = 0.1;
    expect(() => opt.step(Infinity)).toThrow('gradScale = Infinity: must be a finite number');
  });
});

describe('optimizer state out and in, by parameter name', () => {
  it('AdamW: the moments and step count read out are the update rule\'s, under PyTorch\'s slot names', async () => {
    const w = param('W', [0.5, -1], [0.2, -0.4], true);
    const opt = createOptimizer(be, [w], { optimizer: 'adamw', lr: 0.01, momentum: 0, weightDecay: 0 });
    opt.step();
    opt.step();
    const s = await opt.readState();
    // m = Σ (1−β1) β1^(t−i) g; v likewise with g².
    const m = [0.2, -0.4].map((g) => 0.1 * g * 0.9 + 0.1 * g);
    const v = [0.2, -0.4].map((g) => 0.001 * g * g * 0.999 + 0.001 * g * g);
    expect(s.name).toBe('adamw');
    expect(s.steps).toBe(2);
    expect(Object.keys(s.slots)).toEqual(['W']);
    expect(Object.keys(s.slots.W)).toEqual(['exp_avg', 'exp_avg_sq']);
    Array.from(s.slots.W.exp_avg).forEach((x, i) => expect(x).toBeCloseTo(m[i], 15));
    Array.from(s.slots.W.exp_avg_sq).forEach((x, i) => expect(x).toBeCloseTo(v[i], 15));
  });

  it('SGD: the velocity reads out as momentum_buffer; loaded into a fresh optimizer, the next step is the same', async () => {
    const cfg: OptimizerConfig = { optimizer: 'sgd', lr: 0.1, momentum: 0.9, weightDecay: 0 };
    const a = param('W', [1], [0.5], true);
    const optA = createOptimizer(be, [a], cfg);
    optA.step();
    const s = await optA.readState();
    expect(Array.from(s.slots.W.momentum_buffer)).toEqual([0.5]);
    const b = param('W', await values(a), [0.5], true);
    const optB = createOptimizer(be, [b], cfg);
    optB.loadState(s);
    expect(optB.steps).toBe(1);
    optA.step();
    optB.step();
    expect(await values(b)).toEqual(await values(a));
    // 1 − 0.1·0.5, then − 0.1·(0.9·0.5 + 0.5).
    expect((await values(b))[0]).toBeCloseTo(1 - 0.05 - 0.1 * 0.95, 15);
  });

  it('a state that does not fit is refused, naming it, and nothing is loaded', async () => {
    const w = param('W', [1, 2], [1, 1], true);
    const b = param('b', [0], [1], false);
    const opt = createOptimizer(be, [w, b], { optimizer: 'adamw', lr: 0.1, momentum: 0, weightDecay: 0 });
    opt.step();
    const before = await opt.readState();
    const good = { name: 'adamw' as const, steps: 7, slots: { W: { exp_avg: [9, 9], exp_avg_sq: [9, 9] }, b: { exp_avg: [9], exp_avg_sq: [9] } } };
    const cases: [unknown, string][] = [
      [{ ...good, name: 'sgd' }, 'optimizer state.name = "sgd": must be "adamw", the optimizer of this run'],
      [{ ...good, steps: -1 }, 'optimizer state.steps = -1: must be an integer at least 0'],
      [{ ...good, slots: { W: good.slots.W } }, 'optimizer state.slots["b"] = "missing": must hold exp_avg and exp_avg_sq of this parameter'],
      [{ ...good, slots: { ...good.slots, b: { exp_avg: [9] } } }, 'optimizer state.slots["b"].exp_avg_sq = "missing": must be given (adamw keeps exp_avg and exp_avg_sq)'],
      [{ ...good, slots: { ...good.slots, b: { exp_avg: [9], exp_avg_sq: [9, 9] } } }, 'optimizer state.slots["b"].exp_avg_sq.length = 2: must be 1 (shape [1])'],
    ];
    for (const [state, message] of cases) expect(() => opt.loadState(state as never)).toThrow(message);
    expect(await opt.readState()).toEqual(before);
    // Names of parameters this optimizer does not hold (another stage's) are ignored.
    opt.loadState({ ...good, slots: { ...good.slots, 'other.W': { exp_avg: [1], exp_avg_sq: [1] } } });
    expect((await opt.readState()).steps).toBe(7);
  });
});
