/**
 * The planner's ZeRO model against the ZeRO paper's text (Rajbhandari et al. 2020, arXiv:1910.02054):
 * Figure 1's model-state memory per device for 7.5B parameters on 64 GPUs, and §7's communication volume.
 * Every number goes through the functions the planner itself calls (transformer.ts stateBytesPerParam,
 * zero.ts), not a copy of the formula.
 */
import { describe, expect, it } from 'vitest';
import { stateBytesPerParam, type TransformerModel } from './transformer.ts';
import { zeroCollectives, zeroSentBytes, type ZeroStage } from './zero.ts';

// Only bytesPerElement matters to the state per parameter: 2 (fp16 weights and gradients), K = 12.
const mixed: TransformerModel = { layers: 1, hidden: 64, heads: 1, seq: 1, vocab: 1, bytesPerElement: 2 };

/** Rounded to the figure's printed precision: `digits` decimals of GB (1e9 bytes). */
const gb = (bytes: number, digits: number) => Number((bytes / 1e9).toFixed(digits));

describe('the ZeRO paper', () => {
  it('Figure 1: Ψ = 7.5B, N_d = 64, K = 12: 120 GB → 31.4 GB → 16.6 GB → 1.9 GB per device', () => {
    const psi = 7.5e9;
    const perDevice = (zero: ZeroStage) => psi * stateBytesPerParam(mixed, zero, 64);
    // (2 + 2 + K)Ψ; 2Ψ + 2Ψ + KΨ/N_d; 2Ψ + (2 + K)Ψ/N_d; (2 + 2 + K)Ψ/N_d.
    expect(perDevice(0)).toBe(120e9);
    expect(gb(perDevice(1), 1)).toBe(31.4);
    expect(gb(perDevice(2), 1)).toBe(16.6);
    expect(gb(perDevice(3), 1)).toBe(1.9);
    // Unrounded: 31.40625, 16.640625, 1.875 GB.
    expect([1, 2, 3].map((z) => perDevice(z as ZeroStage) / 1e9)).toEqual([31.40625, 16.640625, 1.875]);
    // The planner's booleans of before stages 2 and 3: true is ZeRO-1, false none.
    expect(stateBytesPerParam(mixed, true, 64)).toBe(stateBytesPerParam(mixed, 1, 64));
    expect(stateBytesPerParam(mixed, false, 64)).toBe(16);
  });

  it('in fp32 (e = 4, K = 8 for Adam’s m and v) the same division: 16, 8.125, 4.1875, 0.25 bytes a parameter at N_d = 64', () => {
    const fp32 = { ...mixed, bytesPerElement: 4 as const };
    expect(([0, 1, 2, 3] as const).map((z) => stateBytesPerParam(fp32, z, 64))).toEqual([16, 8 + 8 / 64, 4 + 12 / 64, 16 / 64]);
  });

  it('§7: ZeRO-1 and ZeRO-2 move what the all-reduce moves (2Ψ), ZeRO-3 1.5 times it (3Ψ), one micro-batch a step', () => {
    const psi = 7.5e9;
    const n = 64;
    const allReduce = zeroSentBytes(0, 1, 2 * psi, n);
    expect(allReduce).toBeCloseTo((2 * 2 * psi * (n - 1)) / n, 0);
    expect(zeroSentBytes(1, 1, 2 * psi, n)).toBe(allReduce);
    expect(zeroSentBytes(2, 1, 2 * psi, n)).toBe(allReduce);
    expect(zeroSentBytes(3, 1, 2 * psi, n) / allReduce).toBeCloseTo(1.5, 12);
  });

  it('with m micro-batches as the tab runs them: ZeRO-2 (m + 1) halves, ZeRO-3 m + 1 (reshard step) or 3m (reshard microbatch)', () => {
    const m = 8;
    expect(zeroCollectives(2, m)).toEqual({ allReduces: 0, reduceScatters: 8, allGathers: 1 });
    expect(zeroCollectives(3, m, 'step')).toEqual({ allReduces: 0, reduceScatters: 8, allGathers: 1 });
    expect(zeroCollectives(3, m, 'microbatch')).toEqual({ allReduces: 0, reduceScatters: 8, allGathers: 16 });
    // Ψ·(N_d − 1)/N_d per half: (m + 1)·Ψ·(N_d − 1)/N_d for ZeRO-2.
    expect(zeroSentBytes(2, m, 1000, 4)).toBe(9 * 750);
    expect(zeroSentBytes(3, m, 1000, 4)).toBe(24 * 750);
    expect(zeroSentBytes(3, m, 1000, 1)).toBe(0);
  });
});
