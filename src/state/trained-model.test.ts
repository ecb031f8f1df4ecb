import { describe, expect, it } from 'vitest';
import { CpuBackend } from '../nn/cpu-backend.ts';
import { buildModelSpec } from '../nn/model-config.ts';
import { StageChain } from '../nn/stage-chain.ts';
import { defaultRunConfig, toTrainConfig } from '../runtime/run-config.ts';
import { decisionBoundary, parameterShapes, sampleTrainedNames } from './trained-model.ts';

describe('trained model on the CPU', () => {
  it('knows the shape of every parameter and draws a boundary from initial weights', async () => {
    const cfg = defaultRunConfig();
    const shapes = parameterShapes(cfg);
    const be = new CpuBackend();
    const chain = new StageChain(be, buildModelSpec(toTrainConfig(cfg)), 1, cfg.seed);
    const weights = await chain.readParams();
    for (const [name, w] of Object.entries(weights)) expect(shapes[name].reduce((a, b) => a * b, 1)).toBe(w.length);
    const grid = await decisionBoundary(cfg, weights, 16);
    expect(grid.classes.length).toBe(256);
    expect(Math.max(...grid.classes)).toBeLessThan(3);
    expect(grid.accuracy).toBeGreaterThanOrEqual(0);
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
