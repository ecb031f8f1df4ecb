import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { generateSchedule } from './registry.ts';
import { costsPerStage, simulate } from './simulate.ts';
import { paramsArb } from './test-support.ts';
import { closedForm, closedFormBubble, closedFormPeakActivations } from './theory.ts';

/**
 * The simulator (default per-stage costs F=1, B=2, I=W=1, free links) against
 * the closed forms, exactly: makespans are integers and compared with ===; the
 * bubble fraction is compared with the textbook formula to 1e−12 (the two are
 * the same rational number computed in different orders).
 */
function check(name: string, p: number, m: number, v: number): void {
  const s = generateSchedule(name, p, m, v);
  const r = simulate(s);
  const cf = closedForm(name, p, m, v);
  if (!cf) throw new Error(`no closed form for ${name} p=${p} m=${m} v=${v}`);
  if (r.makespan !== cf.makespan) throw new Error(`${name} p=${p} m=${m} v=${v}: simulated makespan ${r.makespan}, closed form ${cf.makespan}`);
  if (Math.abs(r.bubble - cf.bubble) > 1e-12) throw new Error(`${name} p=${p} m=${m} v=${v}: bubble ${r.bubble} vs ${cf.bubble}`);
  for (const busy of r.busy) if (busy !== cf.work) throw new Error(`${name}: busy ${busy} vs work ${cf.work}`);
}

describe('simulator = closed forms, p = 1..16, m = 1..64', () => {
  it('gpipe and 1f1b: (p−1)/(m+p−1)', () => {
    for (let p = 1; p <= 16; p++) {
      for (let m = 1; m <= 64; m++) {
        check('gpipe', p, m, 1);
        check('1f1b', p, m, 1);
        expect(closedFormBubble('1f1b', p, m)).toBe((p - 1) / (m + p - 1));
      }
    }
  });

  it('interleaved-1f1b: (p−1)/(v·m+p−1) for every m ≥ p (a multiple of p or not), v = 1..4', () => {
    for (let p = 1; p <= 16; p++) {
      for (let m = p; m <= 64; m++) {
        for (let v = 1; v <= 4; v++) check('interleaved-1f1b', p, m, v);
      }
    }
  });

  it('interleaved-1f1b with fewer micro-batches than ranks: 1 − v·m/((v−1)·p + m + p − 1)', () => {
    for (let p = 2; p <= 12; p++) for (let m = 1; m < p; m++) for (let v = 1; v <= 4; v++) check('interleaved-1f1b', p, m, v);
  });

  it('interleaved-1f1b with each rank’s model costing F=1, B=2 (per-stage costs 1/v)', () => {
    for (const [p, m, v] of [
      [4, 8, 2],
      [8, 16, 4],
      [3, 6, 3],
      [16, 64, 4],
    ]) {
      const r = simulate(generateSchedule('interleaved-1f1b', p, m, v), costsPerStage({ F: 1, B: 2 }, v));
      expect(r.bubble).toBeCloseTo((p - 1) / (v * m + p - 1), 12);
      // Bubble time is Megatron's (p−1)(t_f + t_b)/v with t_f = 1, t_b = 2.
      expect(r.makespan - 3 * m).toBeCloseTo((3 * (p - 1)) / v, 9);
    }
  });

  it('zb-h1: 3m+p−1, bubble p−1 per rank, a third of 1F1B’s 3(p−1); 2m+2p−1 when m < p', () => {
    for (let p = 1; p <= 16; p++) {
      for (let m = 1; m <= 64; m++) {
        check('zb-h1', p, m, 1);
        if (m >= p) {
          expect(closedFormBubble('zb-h1', p, m)).toBe((p - 1) / (3 * m + p - 1));
          const zb = simulate(generateSchedule('zb-h1', p, m)).makespan - 3 * m;
          const ofb = simulate(generateSchedule('1f1b', p, m)).makespan - 3 * m;
          expect(3 * zb).toBe(ofb);
        }
      }
    }
  });

  it('zb-v: 6m + max(p−1, 4p−2m−2)', () => {
    for (let p = 1; p <= 16; p++) {
      for (let m = 1; m <= 64; m++) check('zb-v', p, m, 2);
    }
  });

  it('dualpipe-v: 6m + max(p−1, 5p−2m−1−2·[m ≤ p])', () => {
    for (let p = 1; p <= 16; p++) {
      for (let m = 1; m <= 64; m++) check('dualpipe-v', p, m, 2);
    }
    expect(closedFormBubble('dualpipe-v', 4, 8, 2)).toBe(3 / 51);
    expect(closedFormBubble('dualpipe-v', 4, 8, 1)).toBeNull();
  });

  it('looped-bfs: 3(v−1)·max(m,p) + 3(m+p−1), i.e. (p−1)/(v·m+p−1) when m ≥ p', () => {
    for (let p = 1; p <= 16; p++) {
      for (let m = 1; m <= 64; m += p > 8 ? 3 : 1) {
        for (const v of [1, 2, 3]) check('looped-bfs', p, m, v);
      }
    }
  });

  it('interleaved-zb: 3v·m + p − 1 for every m ≥ p, v = 1..4 (p − 1 per rank, a third of interleaved 1F1B’s 3(p − 1))', () => {
    for (let p = 1; p <= 16; p++) {
      for (let m = p; m <= 64; m += p > 8 ? 5 : 1) {
        for (let v = 1; v <= 4; v++) check('interleaved-zb', p, m, v);
      }
    }
    expect(closedFormBubble('interleaved-zb', 4, 8, 2)).toBe(3 / 51);
    expect(closedFormBubble('interleaved-zb', 4, 3, 2)).toBeNull();
  });

  it('interleaved-zb has less bubble than interleaved 1F1B at equal F, B = I + W, any m (m < p included)', () => {
    for (const costs of [{ F: 1, B: 2, I: 1, W: 1 }, { F: 1, B: 2, I: 1.5, W: 0.5 }, { F: 2, B: 2, I: 0.5, W: 1.5 }]) {
      for (let p = 2; p <= 8; p++) {
        for (let m = 1; m <= 3 * p; m++) {
          for (let v = 1; v <= 3; v++) {
            const zb = simulate(generateSchedule('interleaved-zb', p, m, v), costs);
            const il = simulate(generateSchedule('interleaved-1f1b', p, m, v), costs);
            expect(zb.bubble, `${JSON.stringify(costs)} p=${p} m=${m} v=${v}`).toBeLessThan(il.bubble);
          }
        }
      }
    }
  });

  it('has no closed form where none is claimed', () => {
    expect(closedFormBubble('gpipe', 4, 6, 2)).toBeNull();
    expect(closedFormBubble('zb-v', 4, 6, 1)).toBeNull();
    expect(closedFormBubble('something', 4, 6, 1)).toBeNull();
  });
});

describe('peak activation memory', () => {
  it('GPipe holds all m micro-batches, on the first rank too; 1F1B at most p', () => {
    for (let p = 1; p <= 16; p++) {
      for (let m = 1; m <= 64; m += 7) {
        const g = simulate(generateSchedule('gpipe', p, m)).memory;
        expect(g[0].peakMicrobatches).toBe(m);
        const o = simulate(generateSchedule('1f1b', p, m)).memory;
        expect(o[0].peakMicrobatches).toBe(Math.min(p, m));
        for (const r of o) expect(r.peakMicrobatches).toBeLessThanOrEqual(p);
      }
    }
  });

  it('matches the closed forms per rank (gpipe, 1f1b, zb-h1, interleaved, interleaved-zb), bytes included', () => {
    fc.assert(
      fc.property(
        paramsArb(12, 32).filter((x) => ['gpipe', '1f1b', 'zb-h1', 'interleaved-1f1b', 'interleaved-zb'].includes(x.name)),
        fc.integer({ min: 1, max: 1000 }),
        ({ name, p, m, v }, bytes) => {
          const r = simulate(generateSchedule(name, p, m, v), { activationBytes: bytes });
          const want = closedFormPeakActivations(name, p, m, v);
          expect(r.memory.map((x) => x.peakMicrobatches)).toEqual(want);
          expect(r.memory.map((x) => x.peakBytes)).toEqual(want?.map((k) => k * bytes));
        },
      ),
      { numRuns: 150 },
    );
  });

  it('zb-v holds 2p half-stage chunks on every rank once m ≥ 2p − 1 (1F1B’s first rank’s p stages, spread evenly), and has no closed form below', () => {
    for (let p = 1; p <= 10; p++) {
      for (let m = 1; m <= 4 * p + 5; m++) {
        const got = simulate(generateSchedule('zb-v', p, m, 2)).memory.map((x) => x.peakMicrobatches);
        const want = closedFormPeakActivations('zb-v', p, m, 2);
        if (m >= 2 * p - 1) expect(got, `p ${p}, m ${m}`).toEqual(new Array(p).fill(2 * p));
        else expect(want, `p ${p}, m ${m}`).toBeNull();
        if (want) expect(got).toEqual(want);
      }
    }
  });

  it('interleaved-zb holds at most interleaved 1F1B’s peak + r on rank r (its deferred W’s), the same worst rank', () => {
    for (let p = 1; p <= 8; p++) {
      for (let m = 1; m <= 3 * p + 2; m++) {
        for (let v = 1; v <= 4; v++) {
          const zb = simulate(generateSchedule('interleaved-zb', p, m, v)).memory.map((x) => x.peakMicrobatches);
          const il = simulate(generateSchedule('interleaved-1f1b', p, m, v)).memory.map((x) => x.peakMicrobatches);
          zb.forEach((k, r) => expect(k).toBeLessThanOrEqual(il[r] + r));
          expect(Math.max(...zb)).toBe(Math.max(...il));
        }
      }
    }
  });

  it('ZB-H1 and ZB-V hold no more than 1F1B’s worst rank (ZB-V counts half-size stages)', () => {
    for (let p = 1; p <= 12; p++) {
      for (let m = 1; m <= 40; m += 3) {
        const zb = simulate(generateSchedule('zb-h1', p, m)).memory;
        for (const r of zb) expect(r.peakMicrobatches).toBeLessThanOrEqual(Math.min(p, m));
        const zv = simulate(generateSchedule('zb-v', p, m)).memory;
        for (const r of zv) expect(r.peakMicrobatches / 2).toBeLessThanOrEqual(p);
      }
    }
  });
});
