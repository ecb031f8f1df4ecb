/** The page's default GPT from the adapter: makemore's size on a hardware GPU, the small one on software WebGPU. */
import { describe, expect, it } from 'vitest';
import { classifyAdapter } from '../../gpu/adapter-kind.ts';
import { buildModelSpec, GPT_DEFAULTS, MAKEMORE_GPT } from '../../nn/model-config.ts';
import { paramCount } from '../../nn/model-spec.ts';
import { MAKEMORE_RECIPE, namesModelSwitch } from '../../nn/train-config.ts';
import { defaultRunConfig, validateRunConfig, withDataset } from '../../config/run-config.ts';
import { gptSizeFor, gptSizingLine } from './gpt-sizing.ts';

const swiftshader = classifyAdapter({ vendor: 'google', architecture: 'swiftshader' });
const h100 = classifyAdapter({ vendor: 'nvidia', architecture: 'hopper' });

describe('the default GPT, sized for the device', () => {
  it('a hardware GPU gets makemore’s 4 × 4 × 64 with its recipe; software WebGPU the small one', () => {
    expect(gptSizeFor(h100)).toBe('makemore');
    expect(gptSizeFor(swiftshader)).toBe('small');
    expect(gptSizeFor(undefined)).toBe('small');
    const big = namesModelSwitch('gpt', 1, 'names', gptSizeFor(h100));
    expect(big).toMatchObject({ layers: 4, heads: 4, width: 64, blockSize: 16, optimizer: 'adamw', batchSize: 64, lr: 2e-3, weightDecay: 0.1, lrSchedule: 'cosine', steps: 3000 });
    expect(namesModelSwitch('gpt', 1, 'names', gptSizeFor(swiftshader))).toMatchObject({ ...GPT_DEFAULTS, batchSize: 32, lr: 5e-3 });
    // makemore's GPT at block 16 on names is 204,672 parameters (ENVIRONMENT.md's reference figure).
    const cfg = { ...withDataset(defaultRunConfig(), 'names'), ...big };
    validateRunConfig(cfg);
    expect(paramCount(buildModelSpec(cfg))).toBe(204_672);
    expect(MAKEMORE_GPT).toEqual({ layers: 4, heads: 4, width: 64 });
  });

  it('says which it chose and why, in one line', () => {
    expect(gptSizingLine({ state: 'available', adapter: 'google swiftshader', kind: swiftshader })).toBe(
      "Default GPT: the small 2 layers × 4 heads × 32 wide, because it is SwiftShader, a software renderer on the CPU (google swiftshader); makemore's 4 layers × 4 heads × 64 wide takes seconds a step without a GPU.",
    );
    expect(gptSizingLine({ state: 'available', adapter: 'nvidia hopper', kind: h100 })).toBe(
      `Default GPT: makemore's 4 layers × 4 heads × 64 wide with its recipe (AdamW, batch 64, lr 0.002 cosine, weight decay 0.1, 3,000 steps), because it is a GPU (nvidia hopper).`,
    );
    expect(MAKEMORE_RECIPE.steps).toBe(3000);
  });
});
