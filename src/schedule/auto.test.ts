/**
 * The memory-capped automatic schedule against the validator, an independent
 * replay of its peak memory, 1F1B, ZB-H1 and a lower bound on the makespan.
 */
import { describe, expect, it } from 'vitest';
import { autoSchedule, type MemoryCap } from './generators/auto.ts';
import { generateSchedule } from './registry.ts';
import { simulate, type CostModel } from './simulate.ts';
import { closedForm } from './theory.ts';
import type { Schedule } from './types.ts';
import { validateSchedule } from './validate.ts';

/** Independent count of what each rank holds: +1 at F, −1 at W or B, in its own order. */
function peaks(s: Schedule, held: number[]): { count: number[]; bytes: number[] } {
  const count: number[] = [];
  const bytes: number[] = [];
  for (const list of s.order) {
    let n = 0;
    let b = 0;
    let pn = 0;
    let pb = 0;
    for (const a of list) {
      const d = a.op === 'F' ? 1 : a.op === 'W' || a.op === 'B' ? -1 : 0;
      n += d;
      b += d * held[a.stage];
      pn = Math.max(pn, n);
      pb = Math.max(pb, b);
    }
    count.push(pn);
    bytes.push(pb);
  }
  return { count, bytes };
}

/** No schedule beats the last rank's first input plus its work, nor the first rank's first gradient plus its backward work. */
function lowerBound(p: number, m: number, F: number[], I: number[], W: number[]): number {
  let lb = 0;
  let head = 0;
  for (let r = 0; r < p; r++) {
    lb = Math.max(lb, head + m * (F[r] + I[r] + W[r]));
    head += F[r];
  }
  const back = I.slice(1).reduce((a, b) => a + b, 0);
  return Math.max(lb, Math.max(m * F[0], head + back) + m * (I[0] + W[0]));
}

const seq = (n: number, f: (i: number) => number) => Array.from({ length: n }, (_, i) => f(i));

describe('auto schedule', () => {
  it('is valid, within the cap, and no slower than 1F1B and ZB-H1 when they fit (grid of p, m, caps, costs)', () => {
    let cases = 0;
    for (let p = 1; p <= 6; p++) {
      for (const m of [1, 2, p, p + 1, 2 * p, 3 * p + 1]) {
        for (const costs of [
          { F: 1, I: 1, W: 1, B: 2 },
          { F: 1, I: 2, W: 0.5, B: 2.5 },
          { F: seq(p, (r) => 1 + ((r * 7) % 3)), I: seq(p, (r) => 1 + ((r * 5) % 4) / 2), W: seq(p, (r) => 0.5 + (r % 2)), B: seq(p, (r) => 1 + ((r * 5) % 4) / 2 + 0.5 + (r % 2)), latency: 0.25 },
        ] as CostModel[]) {
          for (const cap of [1, 2, p - 1, p, p + 1, 2 * p, 3 * p]) {
            if (cap < 1) continue;
            const a = autoSchedule(p, m, costs, { microbatches: cap });
            const v = validateSchedule(a.schedule);
            if (!v.ok) throw new Error(`p=${p} m=${m} cap=${cap}: ${v.error}`);
            expect(a.schedule).toMatchObject({ name: 'auto', ranks: p, stages: p, microbatches: m });
            for (const c of peaks(a.schedule, seq(p, () => 1)).count) expect(c).toBeLessThanOrEqual(cap);
            const again = simulate(a.schedule, costs);
            expect(again.makespan).toBe(a.simulation.makespan);
            const ofb = simulate(generateSchedule('1f1b', p, m), costs).makespan;
            const zb = simulate(generateSchedule('zb-h1', p, m), costs).makespan;
            if (cap >= Math.min(p, m)) {
              expect(a.simulation.makespan).toBeLessThanOrEqual(ofb);
              expect(a.simulation.makespan).toBeLessThanOrEqual(zb);
            }
            cases++;
          }
        }
      }
    }
    expect(cases).toBeGreaterThan(600);
  });

  it('reaches ZB-H1’s bubble when the cap is 1F1B’s memory (p micro-batches), F = I = W', () => {
    for (let p = 1; p <= 10; p++) {
      for (let m = p; m <= 3 * p; m += Math.max(1, Math.floor(p / 2))) {
        const a = autoSchedule(p, m, { F: 1, I: 1, W: 1, B: 2 }, { microbatches: p });
        const cf = closedForm('zb-h1', p, m) ?? { makespan: NaN, bubble: NaN };
        expect(a.simulation.makespan).toBe(cf.makespan);
        expect(a.simulation.bubble).toBeCloseTo(cf.bubble, 12);
        // which is the lower bound: no schedule does better, whatever the cap
        expect(a.simulation.makespan).toBe(lowerBound(p, m, seq(p, () => 1), seq(p, () => 1), seq(p, () => 1)));
      }
    }
  });

  it('gets faster as the cap grows and closes on the lower bound (I heavier than W, m ≥ 2p)', () => {
    let worst = 0;
    for (let p = 2; p <= 8; p++) {
      for (const m of [2 * p, 3 * p]) {
        for (const [I, W] of [
          [1.5, 0.5],
          [2, 1],
          [2, 0.5],
        ]) {
          const costs = { F: 1, I, W, B: I + W };
          let prev = Infinity;
          for (const cap of [1, 2, p, 2 * p, 3 * p]) {
            const ms = autoSchedule(p, m, costs, { microbatches: cap }).simulation.makespan;
            expect(ms).toBeLessThanOrEqual(prev);
            prev = ms;
          }
          const lb = lowerBound(p, m, seq(p, () => 1), seq(p, () => I), seq(p, () => W));
          const zb = simulate(generateSchedule('zb-h1', p, m), costs).makespan;
          const gap = prev / lb - 1;
          worst = Math.max(worst, gap);
          expect(prev).toBeGreaterThanOrEqual(lb - 1e-9);
          // the cap bought something whenever ZB-H1 was not already at the bound
          if (zb > lb + 1e-9) expect(prev).toBeLessThan(zb);
        }
      }
    }
    // A greedy, not an exact solver: its worst distance to this simple bound over the grid.
    expect(worst).toBeLessThan(0.11);
  });

  it('keeps a cap in bytes, with stages of different sizes', () => {
    const held = [40, 10, 25, 5];
    const costs: CostModel = { F: 1, I: 1, W: 1, B: 2, heldBytes: held };
    for (const bytes of [40, 60, 100, 160, 400]) {
      const cap: MemoryCap = { bytes };
      const a = autoSchedule(4, 12, costs, cap);
      expect(validateSchedule(a.schedule)).toEqual({ ok: true });
      for (const b of peaks(a.schedule, held).bytes) expect(b).toBeLessThanOrEqual(bytes);
      expect(a.simulation.memory.every((x) => x.peakBytes <= bytes)).toBe(true);
    }
    // both caps at once
    const both = autoSchedule(4, 12, costs, { bytes: 100, microbatches: 2 });
    const pk = peaks(both.schedule, held);
    expect(Math.max(...pk.count)).toBeLessThanOrEqual(2);
    expect(Math.max(...pk.bytes)).toBeLessThanOrEqual(100);
  });

  it('says when no schedule meets the cap, with the smallest cap that works', () => {
    expect(() => autoSchedule(4, 8, {}, { microbatches: 0.5 })).toThrow(
      'memCap.microbatches = 0.5: must be at least 1: no schedule runs with less than one micro-batch in flight; the smallest cap that works is 1',
    );
    expect(() => autoSchedule(4, 8, { heldBytes: [10, 30, 20, 5] }, { bytes: 25 })).toThrow(
      'memCap.bytes = 25: is below one micro-batch of stage 1 (30 bytes): no schedule meets it; the smallest cap that works is 30 bytes',
    );
    expect(() => autoSchedule(4, 8, {}, {})).toThrow('memCap = {}: needs a cap in micro-batches, in bytes, or both');
    expect(() => autoSchedule(0, 8, {}, { microbatches: 1 })).toThrow('ranks = 0');
    // and the smallest cap it names does work
    expect(validateSchedule(autoSchedule(4, 8, { heldBytes: [10, 30, 20, 5] }, { bytes: 30 }).schedule)).toEqual({ ok: true });
  });
});
