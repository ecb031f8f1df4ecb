import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../util/errors.ts';
import { formatAction } from './action-text.ts';
import { generateSchedule, SCHEDULES } from './registry.ts';
import { peakMemory, simulate } from './simulate.ts';
import { closedForm, closedFormPeakActivations } from './theory.ts';
import { summarizeSchedule, validateSchedule } from './validate.ts';

/** Hanayo with W waves: v = 2W stages per rank through the registry, as every caller asks for it. */
const hanayo = (p: number, m: number, W: number) => generateSchedule('hanayo', p, m, 2 * W);
const text = (p: number, m: number, W: number, r: number) => hanayo(p, m, W).order[r].map(formatAction).join(' ');

describe('hanayo: W waves zig-zagging down the ranks and back up', () => {
  it('places stage s of wave ⌊s/2p⌋ on rank s mod 2p going down and 2p − 1 − (s mod 2p) coming back up', () => {
    expect(hanayo(3, 6, 2).stageToRank).toEqual([0, 1, 2, 2, 1, 0, 0, 1, 2, 2, 1, 0]);
    expect(hanayo(4, 8, 1).stageToRank).toEqual([0, 1, 2, 3, 3, 2, 1, 0]);
    for (let p = 1; p <= 9; p++) {
      for (let W = 1; W <= 4; W++) {
        const s = hanayo(p, 2, W);
        expect(s.stages).toBe(2 * W * p);
        s.stageToRank.forEach((r, st) => {
          const at = st % (2 * p);
          expect(r, `p=${p} W=${W} stage ${st}`).toBe(at < p ? at : 2 * p - 1 - at);
        });
        // Every rank holds two stages of each wave; rank 0 the first and the last stage.
        for (const stages of summarizeSchedule(s).stagesPerRank) expect(stages).toHaveLength(2 * W);
        expect([s.stageToRank[0], s.stageToRank[s.stages - 1]]).toEqual([0, 0]);
      }
    }
  });

  it('passes a micro-batch on without a message at every turn: v(p − 1) of its S − 1 hops cross ranks, interleaved 1F1B’s v·p − 1', () => {
    const crossings = (map: number[]) => map.slice(1).filter((r, s) => r !== map[s]).length;
    for (let p = 2; p <= 8; p++) {
      for (let W = 1; W <= 3; W++) {
        expect(crossings(hanayo(p, 1, W).stageToRank)).toBe(2 * W * (p - 1));
        expect(crossings(generateSchedule('interleaved-1f1b', p, p, 2 * W).stageToRank)).toBe(2 * W * p - 1);
      }
    }
  });

  it('orders each rank by its slots, a slot’s F before its B (p = 2, m = 2, one wave, worked by hand)', () => {
    // F of stage (c, q), micro-batch i in slot c·p + q + 2i; B in slot v·p − 1 + c′·p + q′ + 2i, c′ = 1 − c, q′ = 1 − q.
    // Rank 0 (stages 0, 3): F0 in slots 0, 2; F3 and B3 in 3, 5; B0 in 6, 8.
    expect(text(2, 2, 1, 0)).toBe('0F0 0F1 3F0 3B0 3F1 3B1 0B0 0B1');
    // Rank 1 (stages 1, 2): F1 in 1, 3; F2 in 2, 4; B2 in 4, 6; B1 in 5, 7.
    expect(text(2, 2, 1, 1)).toBe('1F0 2F0 1F1 2F1 2B0 1B0 2B1 1B1');
  });

  it('validates for every p ≤ 8, m ≤ 16, W ≤ 3, complete, each rank warming up with F’s and ending with B’s', () => {
    for (let p = 1; p <= 8; p++) {
      for (let m = 1; m <= 16; m++) {
        for (let W = 1; W <= 3; W++) {
          const s = hanayo(p, m, W);
          const r = validateSchedule(s);
          if (!r.ok) throw new Error(`hanayo p=${p} m=${m} W=${W}: ${r.error}`);
          for (const list of s.order) {
            expect(list).toHaveLength(2 * 2 * W * m);
            expect([list[0].op, list[list.length - 1].op]).toEqual(['F', 'B']);
          }
        }
      }
    }
  });

  it('validates on random p ≤ 24, m ≤ 64, W ≤ 6 (property)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 24 }), fc.integer({ min: 1, max: 64 }), fc.integer({ min: 1, max: 6 }), (p, m, W) => {
        const s = hanayo(p, m, W);
        expect(validateSchedule(s)).toEqual({ ok: true });
        const sum = summarizeSchedule(s);
        expect([sum.ops.F, sum.ops.B, sum.ops.I, sum.ops.W]).toEqual([2 * W * p * m, 2 * W * p * m, 0, 0]);
      }),
      { numRuns: 60 },
    );
  });

  it('takes W through virtual = 2W and refuses an odd virtual by field, value and rule', () => {
    expect(SCHEDULES.hanayo.defaultVirtual).toBe(2);
    expect(generateSchedule('hanayo', 4, 8).stages).toBe(8);
    expect(SCHEDULES.hanayo.virtualFor(3)).toBe(4);
    expect(SCHEDULES.hanayo.costChunks(4)).toBe(4);
    for (const v of [1, 3, 5]) {
      let err: unknown;
      try {
        generateSchedule('hanayo', 4, 8, v);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(ConfigError);
      const e = err as ConfigError;
      expect([e.field, e.value]).toEqual(['virtual', v]);
      expect(e.message).toBe(`virtual = ${v}: hanayo holds 2 stages per rank in each of its W waves (down the ranks and back up), so virtual = 2W must be even (2, 4, …)`);
    }
    expect(() => generateSchedule('hanayo', 4, 8, 66)).toThrow(/^virtual = 66: /);
  });
});

describe('hanayo against the simulator and interleaved 1F1B (F = 1, B = 2 per stage, free links)', () => {
  it('simulates to its closed form for p = 1..10, m = 1..24, W = 1..3', () => {
    for (let p = 1; p <= 10; p++) {
      for (let m = 1; m <= 24; m++) {
        for (let W = 1; W <= 3; W++) {
          const r = simulate(hanayo(p, m, W));
          const cf = closedForm('hanayo', p, m, 2 * W);
          if (!cf || r.makespan !== cf.makespan) throw new Error(`hanayo p=${p} m=${m} W=${W}: simulated ${r.makespan}, closed form ${cf?.makespan}`);
          expect(Math.abs(r.bubble - cf.bubble)).toBeLessThan(1e-12);
        }
      }
    }
    expect(closedForm('hanayo', 4, 8, 3)).toBeNull();
  });

  it('idles 4(p − 1) per rank where interleaved 1F1B at the same v = 2W idles 3(p − 1): a larger bubble, falling with W', () => {
    for (const p of [2, 3, 4, 8]) {
      for (const m of [p, 2 * p, 4 * p]) {
        let last = 1;
        for (let W = 1; W <= 4; W++) {
          const h = simulate(hanayo(p, m, W));
          const il = simulate(generateSchedule('interleaved-1f1b', p, m, 2 * W));
          const work = 3 * 2 * W * m;
          // Every rank does the same work, so each idles makespan − work.
          expect(h.busy.every((b) => b === work) && il.busy.every((b) => b === work)).toBe(true);
          expect(h.makespan - work).toBe(4 * (p - 1));
          expect(il.makespan - work).toBe(3 * (p - 1));
          expect(h.bubble).toBeGreaterThan(il.bubble);
          expect(h.bubble).toBeCloseTo((4 * (p - 1)) / (3 * 2 * W * m + 4 * (p - 1)), 12);
          expect(h.bubble).toBeLessThan(last);
          last = h.bubble;
        }
      }
    }
  });

  it('holds v·p stage activations on every rank once m ≥ 2p, at most that from m ≥ p; interleaved’s first rank holds p − 1 more', () => {
    for (let p = 1; p <= 8; p++) {
      for (let m = p; m <= 4 * p; m++) {
        for (let W = 1; W <= 3; W++) {
          const v = 2 * W;
          const peaks = peakMemory(hanayo(p, m, W)).map((x) => x.peakMicrobatches);
          expect(Math.max(...peaks), `p=${p} m=${m} W=${W}`).toBeLessThanOrEqual(v * p);
          if (m >= 2 * p) expect(peaks).toEqual(closedFormPeakActivations('hanayo', p, m, v));
          if (m >= 2 * p) expect(peaks.every((x) => x === v * p)).toBe(true);
          if (m >= 2 * p && m % p === 0) expect(peakMemory(generateSchedule('interleaved-1f1b', p, m, v))[0].peakMicrobatches).toBe(v * p + p - 1);
        }
      }
    }
  });
});
