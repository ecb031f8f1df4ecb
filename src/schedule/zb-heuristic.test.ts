/**
 * The zero-bubble paper's heuristic builder (generators/zb-heuristic.ts) against the validator and an
 * independent memory replay, and the auto builder under the paper's ZB-1P / ZB-2P memory limits (p and 2p
 * micro-batches) against the paper's closed forms at T_F = T_B = T_W: bubble / compute = (p − 1)/m for
 * 1F1B, (p − 1)/3m for ZB-1P, 0 for ZB-2P (Qi et al., ICLR 2024, §2–3; the authors' comparison table).
 */
import { describe, expect, it } from 'vitest';
import { autoSchedule, quickSpan } from './generators/auto.ts';
import { HEURISTIC_VARIANTS, zbHeuristic } from './generators/zb-heuristic.ts';
import { generateSchedule } from './registry.ts';
import { resolveCosts, type CostModel } from './simulate.ts';
import { validateSchedule } from './validate.ts';
import type { Schedule } from './types.ts';

/** Peak bytes per rank replayed by hand: +held at F, −(held − after) at I, −after at W, −held at B. */
function peakBytes(s: Schedule, held: number[], after: number[]): number[] {
  return s.order.map((list) => {
    let b = 0;
    let peak = 0;
    for (const a of list) {
      b += a.op === 'F' ? held[a.stage] : a.op === 'I' ? after[a.stage] - held[a.stage] : a.op === 'W' ? -after[a.stage] : -held[a.stage];
      peak = Math.max(peak, b);
    }
    return peak;
  });
}

describe('the zero-bubble heuristic', () => {
  it('every variant builds a valid schedule within its cap, or says it cannot (null)', () => {
    let built = 0;
    for (let p = 2; p <= 5; p++) {
      for (const m of [1, p, 2 * p + 1]) {
        const costs: CostModel = { F: Array.from({ length: p }, (_, r) => 1 + (r % 2)), I: 1.5, W: 0.75, heldBytes: 4, heldAfterInput: 1, latency: 0.1 };
        const c = resolveCosts(costs, p);
        for (const capMb of [1, 2, p, 2 * p]) {
          for (const v of HEURISTIC_VARIANTS) {
            const s = zbHeuristic(p, m, c, capMb * 4, v);
            if (!s) continue;
            built++;
            expect(validateSchedule(s)).toEqual({ ok: true });
            for (const x of peakBytes(s, new Array<number>(p).fill(4), new Array<number>(p).fill(1))) expect(x).toBeLessThanOrEqual(capMb * 4);
          }
        }
      }
    }
    expect(built).toBeGreaterThan(100);
  });

  it('under memory limits of p and 2p micro-batches reproduces the paper’s bubble rates at T_F = T_B = T_W', () => {
    for (const [p, m] of [[4, 12], [8, 24], [8, 32], [8, 64]]) {
      const costs: CostModel = { F: 1, I: 1, W: 1, B: 2, heldBytes: 1 };
      const c = resolveCosts(costs, p);
      const compute = 3 * m;
      const rate = (s: Schedule) => (quickSpan(s, c) - compute) / compute;
      expect(rate(generateSchedule('1f1b', p, m, 1))).toBeCloseTo((p - 1) / m, 12);
      expect(rate(autoSchedule(p, m, costs, { microbatches: p }, { objective: 'span' }).schedule)).toBeCloseTo((p - 1) / (3 * m), 12);
      expect(rate(autoSchedule(p, m, costs, { microbatches: 2 * p }, { objective: 'span' }).schedule)).toBeCloseTo(0, 12);
    }
  });
});
