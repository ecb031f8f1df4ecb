/** The steps-per-second estimate: over the steps after the first, from the times they landed. */
import { describe, expect, it } from 'vitest';
import { defaultRunConfig } from '../../config/run-config.ts';
import { ESTIMATE_STEPS, estimateConfig, stepsPerSecondOf } from './speed-estimate.ts';

describe('speed estimate', () => {
  it('leaves out the first step (warm-up) and counts the gaps after it', () => {
    // Steps landing at 5 s (a cold first step), 5.5, 6 and 6.5 s: 3 steps in 1.5 s after the first.
    expect(stepsPerSecondOf(0, [5000, 5500, 6000, 6500])).toBeCloseTo(2, 12);
    // One step only: from the start.
    expect(stepsPerSecondOf(1000, [1250])).toBeCloseTo(4, 12);
    expect(stepsPerSecondOf(0, [])).toBeNaN();
  });

  it('runs the same configuration for a few steps without evaluation', () => {
    const cfg = { ...defaultRunConfig(), steps: 300, evalEvery: 50 };
    expect(estimateConfig(cfg)).toEqual({ ...cfg, steps: ESTIMATE_STEPS, evalEvery: 0 });
    expect(estimateConfig({ ...cfg, steps: 2 }).steps).toBe(2);
  });
});
