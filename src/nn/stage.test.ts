/**
 * Stage: whole-model backward (including the loss) against finite
 * differences, the stage-boundary gradients, equality of one stage vs the
 * same model cut into several, recompute and the I/W split, stash accounting,
 * ownership (no leaks, no use after dispose) and its error messages.
 */
import { describe, expect, it } from 'vitest';
import { Rng } from '../util/rng.ts';
import type { Backend, Tensor } from './backend.ts';
import { CpuBackend } from './cpu-backend.ts';
import { buildModelSpec } from './model-config.ts';
import type { HiddenActivation, ModelConfig } from './model-config.ts';
import type { ModelSpec } from './model-spec.ts';
import { partitionBlocks } from './partition.ts';
import { Stage } from './stage.ts';
import { compareGrads, cpuData, dot, numericGrad, randomArray } from './testing/gradcheck.ts';
import { trackingBackend } from './testing/tracking-backend.ts';

const cpu = new CpuBackend();
const SEED = 11;

function mlpConfig(activation: HiddenActivation, layers = 3, hidden = 5): ModelConfig {
  return { model: 'mlp', dataset: 'spiral', hidden, layers, activation, context: 3, embedDim: 2 };
}
function charConfig(activation: HiddenActivation = 'tanh'): ModelConfig {
  return { model: 'char-mlp', dataset: 'names', hidden: 6, layers: 2, activation, context: 3, embedDim: 2 };
}

interface Batch {
  input: number[];
  labels: number[];
  n: number;
}

function randomBatch(spec: ModelSpec, n: number, seed: number): Batch {
  const rng = new Rng(seed);
  const cols = spec.input.cols;
  const input = spec.input.dtype === 'i32' ? Array.from({ length: n * cols }, () => rng.int(28)) : randomArray(rng, n * cols);
  return { input, labels: Array.from({ length: n }, () => rng.int(spec.classes)), n };
}

function inputTensor(be: Backend, spec: ModelSpec, b: Batch): Tensor {
  return be.tensor(b.input, [b.n, spec.input.cols], spec.input.dtype);
}

/** Runs one micro-batch forward through `stages` in order and backward in reverse; returns the loss. */
async function forwardBackward(be: Backend, spec: ModelSpec, stages: Stage[], mb: number, b: Batch, scale: number): Promise<number> {
  let x = inputTensor(be, spec, b);
  const labels = be.tensor(b.labels, [b.n], 'i32');
  for (const s of stages) x = await s.forward(mb, x, s.isLast ? labels : undefined, scale);
  be.dispose(labels);
  const loss = cpuData(x)[0];
  be.dispose(x);
  let d: Tensor | null = null;
  for (let i = stages.length - 1; i >= 0; i--) d = await stages[i].backward(mb, d);
  expect(d).toBeNull();
  return loss;
}

function split(be: Backend, spec: ModelSpec, n: number, opts = {}): Stage[] {
  const ranges = partitionBlocks(spec.blocks.length, spec.blocks.map(() => 1), n);
  return ranges.map((r, i) => new Stage(be, spec, i, r, SEED, opts));
}

/** Loss of the whole model by inference (no stash), for finite differences. */
async function inferLoss(stages: Stage[], spec: ModelSpec, b: Batch, scale: number): Promise<number> {
  let x = inputTensor(cpu, spec, b);
  for (const s of stages) x = await s.infer(x);
  const { loss } = cpu.softmaxCrossEntropy(x, cpu.tensor(b.labels, [b.n], 'i32'), scale);
  return cpuData(loss)[0];
}

describe('Stage backward against finite differences (whole model, with the loss)', () => {
  const cases: [string, ModelConfig][] = [
    ['mlp tanh', mlpConfig('tanh')],
    ['mlp gelu', mlpConfig('gelu')],
    ['mlp relu', mlpConfig('relu')],
    ['char-mlp tanh', charConfig('tanh')],
    ['char-mlp gelu', charConfig('gelu')],
  ];
  for (const [label, cfg] of cases) {
    it(`${label}: every parameter's gradient`, async () => {
      const spec = buildModelSpec(cfg);
      const [stage] = split(cpu, spec, 1);
      // Move off the init values (zero biases, unit gains) so every path is exercised.
      const rng = new Rng(3);
      for (const p of stage.params) {
        const d = cpuData(p.value);
        for (let i = 0; i < d.length; i++) d[i] += 0.2 * rng.normal();
      }
      const b = randomBatch(spec, 6, 4);
      const scale = 1 / 6;
      if (cfg.activation === 'relu') expect(await minAbsPreActivation(stage, spec, b)).toBeGreaterThan(1e-3);
      stage.zeroGrads();
      await forwardBackward(cpu, spec, [stage], 0, b, scale);
      for (const p of stage.params) {
        const c = compareGrads(cpuData(p.grad), await numericGrad(() => inferLoss([stage], spec, b, scale), cpuData(p.value), 1e-5));
        expect(c.relErr, `${p.name}`).toBeLessThan(1e-6);
        expect(c.norm, `${p.name} gradient is not zero`).toBeGreaterThan(1e-6);
      }
    });
  }

  it('the input gradient a middle stage and the last stage send back', async () => {
    const spec = buildModelSpec(mlpConfig('tanh', 3, 4));
    const stages = split(cpu, spec, 4); // one block each
    const rng = new Rng(8);
    const n = 5;
    // Middle stage: objective Σ y·R, so dOutput = R.
    const mid = stages[1];
    const x = cpu.tensor(randomArray(rng, n * mid.inCols), [n, mid.inCols]);
    const R = randomArray(rng, n * mid.outCols);
    await mid.forward(0, cpu.clone(x));
    const dx = await mid.backwardInput(0, cpu.tensor(R, [n, mid.outCols])) as Tensor;
    const c1 = compareGrads(cpuData(dx), await numericGrad(async () => dot(cpuData(await mid.infer(x)), R), cpuData(x), 1e-5));
    expect(c1.relErr).toBeLessThan(1e-6);
    mid.backwardWeight(0);
    // Last stage: the loss gradient is internal.
    const last = stages[3];
    const labels = Array.from({ length: n }, () => rng.int(3));
    const xl = cpu.tensor(randomArray(rng, n * last.inCols), [n, last.inCols]);
    await last.forward(0, cpu.clone(xl), cpu.tensor(labels, [n], 'i32'), 1 / n);
    const dxl = await last.backward(0, null) as Tensor;
    const lossOf = async () => cpuData(cpu.softmaxCrossEntropy(await last.infer(xl), cpu.tensor(labels, [n], 'i32'), 1 / n).loss)[0];
    expect(compareGrads(cpuData(dxl), await numericGrad(lossOf, cpuData(xl), 1e-5)).relErr).toBeLessThan(1e-6);
  });
});

async function minAbsPreActivation(stage: Stage, spec: ModelSpec, b: Batch): Promise<number> {
  let x = inputTensor(cpu, spec, b);
  let m = Infinity;
  for (const l of stage.layers) {
    const y = (await l.forward(x, false)).y;
    if (l.name.endsWith('.act')) for (const v of cpuData(x)) m = Math.min(m, Math.abs(v));
    x = y;
  }
  return m;
}

describe('one stage vs the same model cut into stages', () => {
  for (const [label, cfg] of [['mlp', mlpConfig('gelu', 4, 6)], ['char-mlp', charConfig('gelu')]] as const) {
    it(`${label}: identical initial weights, losses and gradients for every split`, async () => {
      const spec = buildModelSpec(cfg);
      const batches = [0, 1, 2].map((i) => randomBatch(spec, 4, 20 + i));
      const run = async (n: number) => {
        const stages = split(cpu, spec, n);
        const init = Object.assign({}, ...(await Promise.all(stages.map((s) => s.readParams()))));
        const losses: number[] = [];
        for (const [mb, b] of batches.entries()) losses.push(await forwardBackward(cpu, spec, stages, mb, b, 1 / 12));
        const grads = Object.assign({}, ...(await Promise.all(stages.map((s) => s.readGrads()))));
        return { init, losses, grads };
      };
      const one = await run(1);
      for (let n = 2; n <= spec.blocks.length; n++) {
        const many = await run(n);
        expect(Object.keys(many.init).sort()).toEqual(Object.keys(one.init).sort());
        expect(many.init).toEqual(one.init);
        expect(many.losses).toEqual(one.losses);
        expect(many.grads).toEqual(one.grads);
      }
    });
  }
});

describe('recompute and the I/W split', () => {
  it('recompute gives the same losses and gradients, holding less', async () => {
    const spec = buildModelSpec(charConfig('gelu'));
    const b = randomBatch(spec, 8, 5);
    const plain = split(cpu, spec, 2);
    const rec = split(cpu, spec, 2, { recompute: true });
    const fwd = async (stages: Stage[]) => {
      let x = inputTensor(cpu, spec, b);
      for (const s of stages) x = await s.forward(0, x, s.isLast ? cpu.tensor(b.labels, [b.n], 'i32') : undefined, 0.125);
      return { loss: cpuData(x)[0], bytes: stages.map((s) => s.stashBytes()) };
    };
    const p = await fwd(plain), r = await fwd(rec);
    expect(r.loss).toBe(p.loss);
    // Recompute holds only the input (and the labels on the last stage).
    expect(r.bytes[0]).toBe(4 * b.n * spec.input.cols);
    expect(r.bytes[1]).toBe(4 * (b.n * rec[1].inCols + b.n));
    for (let i = 0; i < 2; i++) expect(r.bytes[i]).toBeLessThan(p.bytes[i]);
    for (const stages of [plain, rec]) {
      const d = await stages[1].backward(0, null);
      expect(await stages[0].backward(0, d)).toBeNull();
    }
    for (let i = 0; i < 2; i++) expect(await rec[i].readGrads()).toEqual(await plain[i].readGrads());
  });

  it('all backwardInputs first and backwardWeights later, in any order, equal full backwards', async () => {
    const spec = buildModelSpec(mlpConfig('tanh', 3, 5));
    const batches = [0, 1, 2, 3].map((i) => randomBatch(spec, 3, 40 + i));
    const full = split(cpu, spec, 2);
    for (const [mb, b] of batches.entries()) await forwardBackward(cpu, spec, full, mb, b, 1 / 12);
    const zb = split(cpu, spec, 2);
    for (const [mb, b] of batches.entries()) {
      let x = inputTensor(cpu, spec, b);
      for (const s of zb) x = await s.forward(mb, x, s.isLast ? cpu.tensor(b.labels, [b.n], 'i32') : undefined, 1 / 12);
    }
    for (const mb of [2, 0, 3, 1]) {
      const d = await zb[1].backwardInput(mb, null);
      expect(await zb[0].backwardInput(mb, d)).toBeNull();
    }
    expect(zb[0].liveStashes()).toBe(4);
    for (const mb of [3, 1, 2, 0]) for (const s of zb) s.backwardWeight(mb);
    for (let i = 0; i < 2; i++) {
      const a = await zb[i].readGrads(), e = await full[i].readGrads();
      for (const k of Object.keys(e)) Array.from(a[k]).forEach((v, j) => expect(v).toBeCloseTo(e[k][j], 12));
      expect(zb[i].liveStashes()).toBe(0);
      expect(zb[i].stashBytes()).toBe(0);
    }
  });
});

describe('stash accounting and ownership', () => {
  it('stashBytes counts every element held, 4 bytes each, and drops to 0', async () => {
    const spec = buildModelSpec(mlpConfig('relu', 2, 5)); // [2→5, act], [5→5, act], head [5→3]
    const [s] = split(cpu, spec, 1);
    const n = 4;
    const b = randomBatch(spec, n, 1);
    await s.forward(0, inputTensor(cpu, spec, b), cpu.tensor(b.labels, [n], 'i32'), 1 / n);
    // x, the two pre-activations, the two activations, dlogits.
    expect(s.stashBytes()).toBe(4 * n * (2 + 5 + 5 + 5 + 5 + 3));
    await s.forward(1, inputTensor(cpu, spec, b), cpu.tensor(b.labels, [n], 'i32'), 1 / n);
    expect(s.liveStashes()).toBe(2);
    await s.backwardInput(0, null);
    // Only what backwardWeight needs: the linears' inputs (x, act0, act1) and output gradients (5, 5, 3).
    expect(s.stashBytes()).toBe(4 * n * (2 + 5 + 5 + 5 + 5 + 3) + 4 * n * (2 + 5 + 5 + 5 + 5 + 3));
    s.backwardWeight(0);
    expect(s.stashBytes()).toBe(4 * n * 25);
    await s.backward(1, null);
    expect(s.stashBytes()).toBe(0);
    expect(s.liveStashes()).toBe(0);
  });

  for (const recompute of [false, true]) {
    it(`leaves no tensor behind and never touches a disposed one (recompute ${recompute})`, async () => {
      const { be, live } = trackingBackend(new CpuBackend());
      for (const cfg of [mlpConfig('gelu', 3, 4), charConfig('relu')]) {
        const spec = buildModelSpec(cfg);
        const stages = split(be, spec, 3, { recompute });
        const baseline = live.size; // params and grads
        const batches = [0, 1, 2].map((i) => randomBatch(spec, 4, i));
        for (const [mb, b] of batches.entries()) {
          let x = inputTensor(be, spec, b);
          const labels = be.tensor(b.labels, [b.n], 'i32');
          for (const s of stages) x = await s.forward(mb, x, s.isLast ? labels : undefined, 1 / 12);
          be.dispose(labels); // the caller may drop labels right after forward
          be.dispose(x);
        }
        for (const mb of [1, 0, 2]) {
          let d: Tensor | null = null;
          for (let i = stages.length - 1; i >= 0; i--) d = await stages[i].backwardInput(mb, d);
        }
        for (const mb of [0, 2, 1]) for (const s of stages) s.backwardWeight(mb);
        expect(live.size).toBe(baseline);
        const input = inputTensor(be, spec, batches[0]);
        let y = input;
        for (const s of stages) {
          const next = await s.infer(y);
          if (y !== input) be.dispose(y);
          y = next;
        }
        be.dispose(y);
        be.dispose(input);
        expect(live.size).toBe(baseline);
        for (const s of stages) s.dispose();
        expect(live.size).toBe(0);
      }
    });
  }
});

describe('readParams / loadParams', () => {
  it('round-trips, and loading all values into another split reproduces the model', async () => {
    const spec = buildModelSpec(charConfig());
    const a = split(cpu, spec, 1)[0];
    const rng = new Rng(1);
    const values = await a.readParams();
    for (const v of Object.values(values)) for (let i = 0; i < v.length; i++) v[i] = rng.normal();
    const b = split(cpu, spec, 3);
    for (const s of b) s.loadParams(values);
    a.loadParams(values);
    const batch = randomBatch(spec, 5, 2);
    expect(await inferLoss(b, spec, batch, 0.2)).toBe(await inferLoss([a], spec, batch, 0.2));
  });

  it('names a missing or wrong-sized parameter', async () => {
    const spec = buildModelSpec(mlpConfig('tanh', 1, 3));
    const [s] = split(cpu, spec, 1);
    expect(() => s.loadParams({})).toThrow('params["block0.linear.W"] = "missing": must be given: stage 0 holds it');
    const ok = { 'block0.linear.W': new Float64Array(6), 'block0.linear.b': new Float64Array(3), 'head.linear.W': new Float64Array(9), 'head.linear.b': new Float64Array(2) };
    expect(() => s.loadParams(ok)).toThrow('params["head.linear.b"].length = 2: must be 3 (shape [3])');
  });
});

describe('bad input is rejected with the field, the value and the rule', () => {
  const spec = buildModelSpec(mlpConfig('tanh', 2, 4));
  const stages = () => split(cpu, spec, 3);

  it('mismatched input shape or dtype', async () => {
    const [s0, s1] = stages();
    await expect(s0.forward(0, cpu.zeros([4, 3]))).rejects.toThrow('stage 0 input.shape = [4, 3]: must be [rows, 2]');
    await expect(s1.forward(0, cpu.zeros([4, 2]))).rejects.toThrow('stage 1 input.shape = [4, 2]: must be [rows, 4]');
    await expect(s0.forward(0, cpu.zeros([4, 2], 'i32'))).rejects.toThrow('stage 0 input.dtype = "i32": must be f32');
  });

  it('labels and loss scale on the last stage', async () => {
    const last = stages()[2];
    const x = () => cpu.zeros([4, 4]);
    await expect(last.forward(0, x())).rejects.toThrow('labels = undefined: must be given to the last stage (stage 2): i32 [4]');
    await expect(last.forward(0, x(), cpu.zeros([3], 'i32'), 0.25)).rejects.toThrow('labels.shape = [3]: must be i32 [4] (one label per input row)');
    await expect(last.forward(0, x(), cpu.zeros([4], 'i32'), NaN)).rejects.toThrow('lossScale = NaN: must be a finite number');
    await expect(last.forward(0, x(), cpu.zeros([4], 'i32'), 0)).rejects.toThrow('lossScale = 0: must be greater than 0');
  });

  it('gradients of the wrong shape, and calls out of order', async () => {
    const [s0, s1, s2] = stages();
    await s1.forward(0, cpu.zeros([4, 4]));
    await expect(s1.forward(0, cpu.zeros([4, 4]))).rejects.toThrow('mb = 0: stage 1 already holds the forward of this micro-batch (run its backward first)');
    await expect(s1.backwardInput(0, cpu.zeros([4, 3]))).rejects.toThrow('dOutput.shape = [4, 3]: must be [4, 4] (f32)');
    await expect(s1.backwardInput(0, null)).rejects.toThrow('dOutput = null: must be a gradient tensor [4, 4] on stage 1, which is not the last');
    expect(() => s1.backwardWeight(0)).toThrow('mb = 0: stage 1 must run backwardInput for this micro-batch before backwardWeight');
    await expect(s1.backwardInput(1, cpu.zeros([4, 4]))).rejects.toThrow('mb = 1: stage 1 holds no forward of this micro-batch (run forward first)');
    await expect(s0.forward(-1, cpu.zeros([4, 2]))).rejects.toThrow('mb = -1: must be an integer at least 0');
    await s2.forward(0, cpu.zeros([4, 4]), cpu.zeros([4], 'i32'), 0.25);
    await expect(s2.backwardInput(0, cpu.zeros([4, 3]))).rejects.toThrow('dOutput = [4, 3]: must be null on the last stage (stage 2): the loss gradient is internal');
  });

  it('block ranges outside the model', async () => {
    expect(() => new Stage(cpu, spec, 0, [0, 4], 1)).toThrow('blockRange[1] = 4: must be an integer between 1 and 3');
    expect(() => new Stage(cpu, spec, 0, [2, 2], 1)).toThrow('blockRange[1] = 2: must be an integer between 3 and 3');
    expect(() => new Stage(cpu, spec, 0, [0, 1], 1.5)).toThrow('seed = 1.5: must be an integer');
  });
});
