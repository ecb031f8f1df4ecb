/** The shared-device mode of the simulator: by hand on small cases, and equal to the plain simulator when every rank has a lane. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { generateSchedule } from './registry.ts';
import { predictions, simulate } from './simulate.ts';
import { paramsArb } from './test-support.ts';

const rows = (r: ReturnType<typeof simulate>, rank: number) =>
  r.timeline.intervals.filter((x) => x.rank === rank && x.op !== 'comm').map((x) => [`${x.stage}${x.op}${x.mb}`, +x.start.toFixed(9), +x.end.toFixed(9)]);

describe('shared-device simulation', () => {
  it('1F1B, p = 2, m = 2, one lane, F = 1, B = 2, by hand: the device is never idle and never doubled', () => {
    const r = simulate(generateSchedule('1f1b', 2, 2), { lanes: 1 });
    // 0F0 alone [0,1]; 0F1 and 1F0 share [1,3]; 1B0 alone [3,5]; 0B0 and 1F1 share from 5: 1F1 ends at 7 with
    // 0B0 half done; 1B1 and 0B0 share [7,9]: 0B0 ends, 1B1 has 1 left, alone until 10; 0B1 [10,12].
    expect(rows(r, 0)).toEqual([
      ['0F0', 0, 1],
      ['0F1', 1, 3],
      ['0B0', 5, 9],
      ['0B1', 10, 12],
    ]);
    expect(rows(r, 1)).toEqual([
      ['1F0', 1, 3],
      ['1B0', 3, 5],
      ['1F1', 5, 7],
      ['1B1', 7, 10],
    ]);
    expect(r.makespan).toBe(12);
  });

  it('the same with 1.5 lanes: two ranks at once each run at 0.75', () => {
    const r = simulate(generateSchedule('1f1b', 2, 2), { lanes: 1.5 });
    const t = 1 / 0.75;
    expect(rows(r, 0)).toEqual([
      ['0F0', 0, 1],
      ['0F1', 1, +(1 + t).toFixed(9)],
      ['0B0', +(3 + t).toFixed(9), 7],
      ['0B1', 8, 10],
    ]);
    expect(rows(r, 1)).toEqual([
      ['1F0', 1, +(1 + t).toFixed(9)],
      ['1B0', +(1 + t).toFixed(9), +(3 + t).toFixed(9)],
      ['1F1', +(3 + t).toFixed(9), +(3 + 2 * t).toFixed(9)],
      ['1B1', +(3 + 2 * t).toFixed(9), 8],
    ]);
    expect(r.makespan).toBeCloseTo(10, 12);
  });

  it('GPipe with p ranks on one lane takes the total work (every rank busy back to back), link delays aside', () => {
    for (const p of [2, 3, 5]) {
      const r = simulate(generateSchedule('gpipe', p, 4), { lanes: 1 });
      expect(r.makespan).toBeCloseTo(p * 4 * 3, 9);
    }
  });

  it('equals the plain simulator when lanes ≥ ranks, and is never faster with fewer (random schedules and costs)', () => {
    fc.assert(
      fc.property(
        paramsArb(6, 10),
        fc.record({ F: fc.double({ min: 0.1, max: 3, noNaN: true }), B: fc.double({ min: 0.1, max: 5, noNaN: true }), I: fc.double({ min: 0.1, max: 3, noNaN: true }), W: fc.double({ min: 0, max: 3, noNaN: true }), latency: fc.integer({ min: 0, max: 8 }).map((k) => k / 8) }),
        fc.double({ min: 0.3, max: 8, noNaN: true }),
        ({ name, p, m, v }, costs, lanes) => {
          const s = generateSchedule(name, p, m, v);
          const plain = simulate(s, costs);
          const wide = simulate(s, { ...costs, lanes: p + 0.5 });
          expect(wide.makespan).toBe(plain.makespan);
          const two = predictions(s, costs, lanes);
          expect(two.independent.makespan).toBe(plain.makespan);
          // The compute (DualPipe's sum over its copies, a collective after it, is priced by the link's latency here).
          const a = plain.timeline.intervals.filter((x) => x.op !== 'comm' && x.op !== 'collective');
          const b = two.thisMachine.timeline.intervals.filter((x) => x.op !== 'comm' && x.op !== 'collective');
          expect(b.length).toBe(a.length);
          // every action starts and ends no earlier on the shared device
          for (let i = 0; i < a.length; i++) {
            expect(b[i].start).toBeGreaterThanOrEqual(a[i].start - 1e-9);
            expect(b[i].end).toBeGreaterThanOrEqual(a[i].end - 1e-9);
          }
          // and the device never does more than `lanes` ranks' worth of work per unit of time
          const work = a.reduce((x, y) => x + (y.end - y.start), 0);
          expect(two.thisMachine.makespan).toBeGreaterThanOrEqual(work / Math.min(lanes, p) - 1e-9);
          expect(two.thisMachine.timeline.intervals.filter((x) => x.op === 'comm').length).toBe(plain.timeline.intervals.filter((x) => x.op === 'comm').length);
        },
      ),
      { numRuns: 200, seed: 3 },
    );
  });

  it('rejects lanes ≤ 0 naming the field', () => {
    expect(() => simulate(generateSchedule('1f1b', 2, 2), { lanes: 0 })).toThrow('costs.lanes = 0: must be a number greater than 0');
  });
});
