import { describe, expect, it } from 'vitest';
import { CpuBackend } from '../../nn/cpu-backend.ts';
import { buildModelSpec } from '../../nn/model-config.ts';
import { StageChain } from '../../nn/stage-chain.ts';
import { defaultRunConfig, toTrainConfig } from '../../config/run-config.ts';
import { decisionBoundary, parameterShapes, sampleTrainedNames } from './trained-model.ts';

/** Logits of the MLP (Linear → ReLU per hidden block, then the head) for one 2-D point, in float64 from the weights by name. */
function mlpLogits(w: Record<string, Float32Array | Float64Array>, layers: number, hidden: number, classes: number, x: readonly number[]): number[] {
  let h: number[] = [...x];
  const affine = (prefix: string, inCols: number, outCols: number): number[] => {
    const W = w[`${prefix}.linear.W`];
    const b = w[`${prefix}.linear.b`];
    const out = new Array<number>(outCols).fill(0);
    for (let o = 0; o < outCols; o++) {
      let z = b[o];
      for (let i = 0; i < inCols; i++) z += h[i] * W[i * outCols + o];
      out[o] = z;
    }
    return out;
  };
  for (let l = 0; l < layers; l++) h = affine(`block${l}`, l === 0 ? 2 : hidden, hidden).map((z) => Math.max(0, z));
  return affine('head', hidden, classes);
}

function argmax(xs: readonly number[]): number {
  let a = 0;
  for (let j = 1; j < xs.length; j++) if (xs[j] > xs[a]) a = j;
  return a;
}

describe('trained model on the CPU', () => {
  it('knows the shape of every parameter', async () => {
    const cfg = defaultRunConfig();
    const shapes = parameterShapes(cfg);
    const be = new CpuBackend();
    const chain = new StageChain(be, buildModelSpec(toTrainConfig(cfg)), 1, cfg.seed);
    const weights = await chain.readParams();
    expect(Object.keys(shapes).sort()).toEqual(Object.keys(weights).sort());
    for (const [name, w] of Object.entries(weights)) expect(shapes[name].reduce((a, b) => a * b, 1)).toBe(w.length);
  });

  it('draws the decision boundary and the accuracy of a plain float64 forward pass of the same weights', async () => {
    const cfg = { ...defaultRunConfig(), hidden: 8, layers: 2, activation: 'relu' as const };
    const shapes = parameterShapes(cfg);
    // Random weights of unit scale: a boundary with more than one class, unlike a fresh initialisation.
    let s = 12345;
    const rnd = () => ((s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 4294967296 - 0.5) * 2;
    const weights: Record<string, Float64Array> = {};
    for (const [name, shape] of Object.entries(shapes)) weights[name] = Float64Array.from({ length: shape.reduce((a, b) => a * b, 1) }, rnd);
    const size = 12;
    const grid = await decisionBoundary(cfg, weights, size);
    expect(grid.classes.length).toBe(size * size);
    const step = (grid.hi - grid.lo) / size;
    const expected: number[] = [];
    for (let r = 0; r < size; r++) {
      for (let c = 0; c < size; c++) {
        const x = grid.lo + (c + 0.5) * step;
        const y = grid.hi - (r + 0.5) * step;
        expected.push(argmax(mlpLogits(weights, cfg.layers, cfg.hidden, grid.classCount, [x, y])));
      }
    }
    expect(Array.from(grid.classes)).toEqual(expected);
    expect(new Set(expected).size).toBeGreaterThan(1);
    let correct = 0;
    for (let i = 0; i < grid.labels.length; i++) {
      const p = [grid.points[2 * i], grid.points[2 * i + 1]];
      if (argmax(mlpLogits(weights, cfg.layers, cfg.hidden, grid.classCount, p)) === grid.labels[i]) correct++;
    }
    expect(grid.accuracy).toBe(correct / grid.labels.length);
  });

  it('samples names from a names model', async () => {
    const cfg = { ...defaultRunConfig(), dataset: 'names' as const, model: 'char-mlp' as const, hidden: 16, embedDim: 4 };
    const be = new CpuBackend();
    const chain = new StageChain(be, buildModelSpec(toTrainConfig(cfg)), 1, cfg.seed);
    const names = await sampleTrainedNames(cfg, await chain.readParams(), 5, 3);
    expect(names).toHaveLength(5);
    for (const n of names) expect(n).toMatch(/^[a-z-]*$/);
  });
});
