/**
 * The WebGPU backend against the float64 CPU reference, layer by layer
 * (forward, backwardInput, backwardWeight), then whole stages (loss, the
 * gradient sent across a stage boundary, accumulated parameter gradients,
 * and an optimizer step). Same seeds, so the same float32-rounded initial
 * weights on both; inputs are float32-rounded too. Tolerance 1e-4 relative
 * (‖gpu − cpu‖ / ‖cpu‖).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GpuBackend } from '../gpu/gpu-backend.ts';
import { createTestBackend } from '../gpu/testing/node-gpu.ts';
import { Rng } from '../util/rng.ts';
import type { Activation, Backend, Tensor } from './backend.ts';
import { CpuBackend } from './cpu-backend.ts';
import { ActivationLayer } from './layers/activation-layer.ts';
import { Embedding } from './layers/embedding.ts';
import type { Layer } from './layers/layer.ts';
import { LayerNorm } from './layers/layer-norm.ts';
import { Linear } from './layers/linear.ts';
import { SoftmaxCrossEntropy } from './layers/loss.ts';
import { buildModelSpec } from './model-config.ts';
import type { ModelConfig } from './model-config.ts';
import type { ModelSpec } from './model-spec.ts';
import { createOptimizer } from './optimizer.ts';
import type { OptimizerName } from './optimizer.ts';
import { partitionBlocks } from './partition.ts';
import { Stage } from './stage.ts';
import { compareGrads } from './testing/gradcheck.ts';

let gpu: GpuBackend;
const cpu = new CpuBackend();
const TOL = 1e-4;

beforeAll(async () => {
  gpu = await createTestBackend();
});
afterAll(() => gpu?.destroy());

function f32(rng: Rng, n: number, scale = 1): number[] {
  return Array.from({ length: n }, () => Math.fround(scale * rng.normal()));
}

async function expectClose(g: Tensor, c: Tensor, what: string): Promise<void> {
  expect(g.shape, what).toEqual(c.shape);
  const cmp = compareGrads(await gpu.read(g), await cpu.read(c));
  expect(cmp.relErr, `${what}: relative error`).toBeLessThan(TOL);
}

/** Gives the layer on both backends the same random parameter values. */
function setParams(layers: [Layer, Layer], rng: Rng): void {
  const [lg, lc] = layers;
  lg.params.forEach((p, i) => {
    const v = f32(rng, p.value.size, 0.5);
    for (const [be, q] of [[gpu, p], [cpu, lc.params[i]]] as const) {
      const t = be.tensor(v, q.value.shape);
      be.copyInto(q.value, t);
      be.fill(q.grad, 0);
    }
  });
}

async function checkLayer(make: (be: Backend) => Layer, xData: number[], xShape: number[], dtype: 'f32' | 'i32', seed: number): Promise<void> {
  const rng = new Rng(seed);
  const lg = make(gpu), lc = make(cpu);
  setParams([lg, lc], rng);
  const xg = gpu.tensor(xData, xShape, dtype), xc = cpu.tensor(xData, xShape, dtype);
  const fg = await lg.forward(xg, true), fc = await lc.forward(xc, true);
  await expectClose(fg.y, fc.y, `${lc.name} forward`);
  const dyData = f32(rng, fc.y.size);
  const dyg = gpu.tensor(dyData, fc.y.shape), dyc = cpu.tensor(dyData, fc.y.shape);
  if (dtype === 'f32') await expectClose(await lg.backwardInput(fg.saved, dyg), await lc.backwardInput(fc.saved, dyc), `${lc.name} backwardInput`);
  for (let rep = 0; rep < 2; rep++) {
    lg.backwardWeight?.(fg.saved, dyg);
    lc.backwardWeight?.(fc.saved, dyc);
  }
  for (let i = 0; i < lc.params.length; i++) await expectClose(lg.params[i].grad, lc.params[i].grad, `${lc.params[i].name} grad (accumulated twice)`);
}

describe('layers: GPU vs CPU', () => {
  const rng = new Rng(100);
  it('Linear', async () => {
    const spec = { kind: 'linear', name: 'linear', in: 19, out: 33, init: { kind: 'normal', std: 0.3 } } as const;
    await checkLayer((be) => new Linear(be, 'b.linear', spec, 5), f32(rng, 37 * 19), [37, 19], 'f32', 1);
  });
  it('LayerNorm', async () => {
    const spec = { kind: 'layernorm', name: 'layernorm', dim: 33, eps: 1e-5 } as const;
    await checkLayer((be) => new LayerNorm(be, 'b.ln', spec, 5), f32(rng, 37 * 33, 2), [37, 33], 'f32', 2);
  });
  for (const fn of ['relu', 'gelu', 'tanh'] as Activation[]) {
    it(`activation ${fn}`, async () => {
      await checkLayer((be) => new ActivationLayer(be, `b.${fn}`, fn), f32(rng, 37 * 33, 2), [37, 33], 'f32', 3);
    });
  }
  it('Embedding', async () => {
    const spec = { kind: 'embedding', name: 'embedding', vocab: 28, dim: 7, context: 4, init: { kind: 'normal', std: 1 } } as const;
    const idx = Array.from({ length: 37 * 4 }, () => rng.int(28));
    await checkLayer((be) => new Embedding(be, 'b.emb', spec, 5), idx, [37, 4], 'i32', 4);
  });
  it('softmax cross-entropy: loss and dlogits', async () => {
    const logits = f32(rng, 37 * 28, 3);
    const labels = Array.from({ length: 37 }, () => rng.int(28));
    const g = new SoftmaxCrossEntropy(gpu, 'loss').forward(gpu.tensor(logits, [37, 28]), gpu.tensor(labels, [37], 'i32'), 1 / 37);
    const c = new SoftmaxCrossEntropy(cpu, 'loss').forward(cpu.tensor(logits, [37, 28]), cpu.tensor(labels, [37], 'i32'), 1 / 37);
    await expectClose(g.loss, c.loss, 'loss');
    await expectClose(g.dlogits, c.dlogits, 'dlogits');
  });
});

function stagesOn(be: Backend, spec: ModelSpec, n: number): Stage[] {
  const ranges = partitionBlocks(spec.blocks.length, spec.blocks.map(() => 1), n);
  return ranges.map((r, i) => new Stage(be, spec, i, r, 3));
}

describe('stages: GPU vs CPU (forward, loss, boundary gradient, accumulated grads, optimizer step)', () => {
  const cases: [string, ModelConfig, OptimizerName][] = [
    ['mlp relu', { model: 'mlp', dataset: 'spiral', hidden: 33, layers: 3, activation: 'relu', context: 3, embedDim: 2 }, 'adamw'],
    ['mlp tanh', { model: 'mlp', dataset: 'moons', hidden: 20, layers: 2, activation: 'tanh', context: 3, embedDim: 2 }, 'sgd'],
    ['char-mlp gelu', { model: 'char-mlp', dataset: 'names', hidden: 40, layers: 3, activation: 'gelu', context: 4, embedDim: 9 }, 'adamw'],
  ];
  for (const [label, cfg, optName] of cases) {
    it(label, async () => {
      const spec = buildModelSpec(cfg);
      const sg = stagesOn(gpu, spec, 2), sc = stagesOn(cpu, spec, 2);
      const rng = new Rng(7);
      const n = 29;
      const micro = [0, 1].map(() => ({
        x: spec.input.dtype === 'i32' ? Array.from({ length: n * spec.input.cols }, () => rng.int(28)) : f32(rng, n * 2),
        y: Array.from({ length: n }, () => rng.int(spec.classes)),
      }));
      for (const [mb, { x, y }] of micro.entries()) {
        const outs: Tensor[][] = [];
        for (const [be, stages] of [[gpu, sg], [cpu, sc]] as const) {
          const labels = be.tensor(y, [n], 'i32');
          const act = await stages[0].forward(mb, be.tensor(x, [n, spec.input.cols], spec.input.dtype));
          const actCopy = be.clone(act);
          const loss = await stages[1].forward(mb, act, labels, 1 / (2 * n));
          const dAct = await stages[1].backward(mb, null) as Tensor;
          const dActCopy = be.clone(dAct);
          expect(await stages[0].backward(mb, dAct)).toBeNull();
          outs.push([actCopy, loss, dActCopy]);
        }
        await expectClose(outs[0][0], outs[1][0], `${label} mb ${mb}: stage 0 output`);
        await expectClose(outs[0][1], outs[1][1], `${label} mb ${mb}: loss`);
        await expectClose(outs[0][2], outs[1][2], `${label} mb ${mb}: gradient into stage 1's input`);
      }
      for (let s = 0; s < 2; s++) {
        for (let i = 0; i < sc[s].params.length; i++) await expectClose(sg[s].params[i].grad, sc[s].params[i].grad, `${label}: ${sc[s].params[i].name} grad`);
      }
      const ocfg = { optimizer: optName, lr: 0.01, momentum: 0.9, weightDecay: 0.01 };
      const og = createOptimizer(gpu, sg.flatMap((s) => s.params), ocfg);
      const oc = createOptimizer(cpu, sc.flatMap((s) => s.params), ocfg);
      og.step(1);
      oc.step(1);
      for (let s = 0; s < 2; s++) {
        for (let i = 0; i < sc[s].params.length; i++) await expectClose(sg[s].params[i].value, sc[s].params[i].value, `${label}: ${sc[s].params[i].name} after one ${optName} step`);
      }
      for (const st of [...sg, ...sc]) st.dispose();
    });
  }
});
