import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../util/errors.ts';
import { formatAction, parseAction } from './action-text.ts';
import { generateSchedule, RUN_SCHEDULE_NAMES, SCHEDULES, SCHEDULE_NAMES, UPDATE_WINDOWS } from './registry.ts';
import { interleavedRounds } from './generators/interleaved.ts';
import { paramsArb } from './test-support.ts';
import type { Schedule } from './types.ts';
import { peakMemory } from './simulate.ts';
import { summarizeSchedule, validateSchedule } from './validate.ts';

const text = (s: Schedule, r: number) => s.order[r].map(formatAction).join(' ');

describe('generators', () => {
  it('every generated schedule validates and is complete (random p, m, v)', () => {
    fc.assert(
      fc.property(paramsArb(), ({ name, p, m, v }) => {
        const s = generateSchedule(name, p, m, v);
        expect(validateSchedule(s)).toEqual({ ok: true });
        expect(s.ranks).toBe(p);
        // DualPipe runs two copies of the p · v stages (each micro-batch through one copy).
        const copies = SCHEDULES[name].copies;
        expect(s.copies ?? 1).toBe(copies);
        expect(s.stages).toBe(p * v * copies);
        expect(s.microbatches).toBe(m);
        const sum = summarizeSchedule(s);
        expect(sum.ops.F).toBe(p * v * m);
        expect(sum.ops.B + sum.ops.I).toBe(p * v * m);
        expect(sum.ops.W).toBe(sum.ops.I);
        // dualpipe-v splits only its last backwards, none of which may be left when m is small.
        if (!SCHEDULES[name].splitBackward) expect(sum.ops.I).toBe(0);
        else if (name !== 'dualpipe-v' && name !== 'auto') expect(sum.ops.I).toBeGreaterThan(0);
        // Every rank holds v stages (of each copy).
        for (const stages of sum.stagesPerRank) expect(stages).toHaveLength(v * copies);
      }),
      { numRuns: 300 },
    );
  });

  it('validates over the whole grid p = 1..16, m = 1..32 for the one-stage-per-rank schedules and zb-v', () => {
    for (let p = 1; p <= 16; p++) {
      for (let m = 1; m <= 32; m++) {
        for (const name of ['gpipe', '1f1b', 'zb-h1', 'zb-v', 'dualpipe-v'] as const) {
          const r = validateSchedule(generateSchedule(name, p, m));
          if (!r.ok) throw new Error(`${name} p=${p} m=${m}: ${r.error}`);
        }
      }
    }
  });

  it('places stages: plain s→s, interleaved and looped s→s mod p, zb-v as a V', () => {
    expect(generateSchedule('1f1b', 4, 4).stageToRank).toEqual([0, 1, 2, 3]);
    expect(generateSchedule('interleaved-1f1b', 4, 4, 2).stageToRank).toEqual([0, 1, 2, 3, 0, 1, 2, 3]);
    expect(generateSchedule('looped-bfs', 3, 4, 3).stageToRank).toEqual([0, 1, 2, 0, 1, 2, 0, 1, 2]);
    expect(generateSchedule('zb-v', 4, 8).stageToRank).toEqual([0, 1, 2, 3, 3, 2, 1, 0]);
  });

  it('gpipe: all forwards then all backwards', () => {
    const s = generateSchedule('gpipe', 2, 3);
    expect(text(s, 0)).toBe('0F0 0F1 0F2 0B0 0B1 0B2');
    expect(text(s, 1)).toBe('1F0 1F1 1F2 1B0 1B1 1B2');
  });

  it('1f1b: p−r−1 warm-up forwards, then one forward one backward, then the cool-down', () => {
    const s = generateSchedule('1f1b', 3, 4);
    expect(text(s, 0)).toBe('0F0 0F1 0F2 0B0 0F3 0B1 0B2 0B3');
    expect(text(s, 1)).toBe('1F0 1F1 1B0 1F2 1B1 1F3 1B2 1B3');
    expect(text(s, 2)).toBe('2F0 2B0 2F1 2B1 2F2 2B2 2F3 2B3');
    // Fewer micro-batches than ranks: the warm-up is capped at m.
    expect(text(generateSchedule('1f1b', 4, 1), 0)).toBe('0F0 0B0');
  });

  it('interleaved-1f1b: Megatron order, chunks in groups of p micro-batches', () => {
    const s = generateSchedule('interleaved-1f1b', 2, 4, 2);
    // Rank 0 warms up with 2(p−r−1) + (v−1)p = 4 forwards.
    expect(text(s, 0)).toBe('0F0 0F1 2F0 2F1 0F2 2B0 0F3 2B1 2F2 0B0 2F3 0B1 2B2 2B3 0B2 0B3');
    expect(text(s, 1)).toBe('1F0 1F1 3F0 3B0 3F1 3B1 1F2 1B0 1F3 1B1 3F2 3B2 3F3 3B3 1B2 1B3');
  });

  it('zb-h1: 1F1B with B split into I and W, rank r trailing its W passes by r', () => {
    const s = generateSchedule('zb-h1', 3, 4);
    expect(text(s, 0)).toBe('0F0 0F1 0F2 0I0 0W0 0F3 0I1 0W1 0I2 0W2 0I3 0W3');
    expect(text(s, 1)).toBe('1F0 1F1 1I0 1F2 1I1 1W0 1F3 1I2 1W1 1I3 1W2 1W3');
    expect(text(s, 2)).toBe('2F0 2I0 2F1 2I1 2F2 2I2 2W0 2F3 2I3 2W1 2W2 2W3');
  });

  it('looped-bfs: breadth first over chunks, backwards last micro-batch first', () => {
    const s = generateSchedule('looped-bfs', 2, 2, 2);
    expect(text(s, 0)).toBe('0F0 0F1 2F0 2F1 2B1 2B0 0B1 0B0');
  });

  it('zb-v drops the actions of micro-batches it was padded with when m < 2p−1', () => {
    const s = generateSchedule('zb-v', 4, 2);
    expect(s.order.flat().every((a) => a.mb < 2)).toBe(true);
    expect(validateSchedule(s).ok).toBe(true);
  });

  it('dualpipe-v: DualPipeV’s eight phases, its V placement, deferred W’s first in first out', () => {
    const s = generateSchedule('dualpipe-v', 2, 4);
    expect(s.stageToRank).toEqual([0, 1, 1, 0]);
    // rank 0: 2 F(0); F(0) F(1); I(1) W F(1); F(0) B(1) F(1) B(0); B(1) F(1) B(0); B(1) I(0); W I(0); W.
    expect(text(s, 0)).toBe('0F0 0F1 0F2 3F0 3I0 3W0 3F1 0F3 3B1 3F2 0B0 3B2 3F3 0B1 3B3 0I2 0W2 0I3 0W3');
    // rank 1 (the tip of the V): F(0) F(1) twice; the steady state; B(1) B(0) with the second half split; the W's.
    expect(text(s, 1)).toBe('1F0 2F0 1F1 2F1 1F2 2B0 2F2 1B0 1F3 2B1 2F3 1B1 2B2 1B2 2I3 1I3 2W3 1W3');
  });

  it('dualpipe-v holds at most 2p + 1 chunk activations per rank (DualPipe’s PP + 1), every micro-batch dropped beyond m', () => {
    for (let p = 1; p <= 10; p++) {
      for (let m = 1; m <= 3 * p + 2; m++) {
        const s = generateSchedule('dualpipe-v', p, m);
        expect(s.order.flat().every((a) => a.mb < m)).toBe(true);
        for (const r of peakMemory(s)) expect(r.peakMicrobatches).toBeLessThanOrEqual(2 * p + 1);
      }
    }
  });

  it('is pure: the same parameters give equal schedules', () => {
    for (const name of SCHEDULE_NAMES) {
      const v = SCHEDULES[name].defaultVirtual;
      expect(generateSchedule(name, 4, 8, v)).toEqual(generateSchedule(name, 4, 8, v));
    }
  });
});

describe('validateParams', () => {
  const fieldOf = (f: () => unknown): string => {
    try {
      f();
    } catch (e) {
      expect(e).toBeInstanceOf(ConfigError);
      return (e as ConfigError).field;
    }
    throw new Error('did not throw');
  };

  it('names the field that broke a rule', () => {
    expect(fieldOf(() => generateSchedule('interleaved-1f1b', 4, 0, 2))).toBe('microbatches');
    expect(fieldOf(() => generateSchedule('gpipe', 4, 8, 2))).toBe('virtual');
    expect(fieldOf(() => generateSchedule('zb-h1', 4, 8, 3))).toBe('virtual');
    expect(fieldOf(() => generateSchedule('zb-v', 4, 8, 3))).toBe('virtual');
    expect(fieldOf(() => generateSchedule('1f1b', 0, 8))).toBe('ranks');
    expect(fieldOf(() => generateSchedule('1f1b', 2.5, 8))).toBe('ranks');
    expect(fieldOf(() => generateSchedule('1f1b', 4, 0))).toBe('microbatches');
    expect(fieldOf(() => generateSchedule('looped-bfs', 4, 8, 0))).toBe('virtual');
    expect(fieldOf(() => generateSchedule('nope', 4, 8))).toBe('schedule');
    expect(fieldOf(() => generateSchedule('looped-bfs', 1024, 65536, 64))).toBe('microbatches');
  });

  it('says the rule in the message', () => {
    expect(() => generateSchedule('zb-v', 4, 8, 3)).toThrow(/^virtual = 3: /);
  });

  it('interleaved-1f1b for any m: rounds of at least p micro-batches, every order valid (p ≤ 8, v ≤ 4, m ≤ 4p + 3)', () => {
    expect(interleavedRounds(4, 6)).toEqual([6]);
    expect(interleavedRounds(4, 9)).toEqual([5, 4]);
    expect(interleavedRounds(4, 8)).toEqual([4, 4]);
    expect(interleavedRounds(4, 3)).toEqual([3]);
    for (let p = 1; p <= 8; p++) {
      for (let v = 1; v <= 4; v++) {
        for (let m = 1; m <= 4 * p + 3; m++) {
          const s = generateSchedule('interleaved-1f1b', p, m, v);
          const r = validateSchedule(s);
          expect(r.ok, `p=${p} m=${m} v=${v}: ${JSON.stringify(r).slice(0, 200)}`).toBe(true);
          // Each rank runs every micro-batch's F and B once on each of its v chunks.
          for (const row of s.order) expect(row.length).toBe(2 * v * m);
        }
      }
    }
  });

  it('interleaved-zb for any m: interleaved 1F1B’s F and I order, rank r’s W’s trailing by r, every order valid (p ≤ 8, v ≤ 4, m ≤ 4p + 3)', () => {
    for (let p = 1; p <= 8; p++) {
      for (let v = 1; v <= 4; v++) {
        for (let m = 1; m <= 4 * p + 3; m++) {
          const s = generateSchedule('interleaved-zb', p, m, v);
          const r = validateSchedule(s);
          expect(r.ok, `p=${p} m=${m} v=${v}: ${JSON.stringify(r).slice(0, 200)}`).toBe(true);
          const il = generateSchedule('interleaved-1f1b', p, m, v);
          const critical = (row: readonly { op: string }[]) => row.filter((a) => a.op !== 'W').map((a) => ({ ...a, op: a.op === 'I' ? 'B' : a.op }));
          const pendingMax = (row: readonly { op: string }[]) => {
            let most = 0;
            let pending = 0;
            for (const a of row) if (a.op === 'I') most = Math.max(most, ++pending);
            else if (a.op === 'W') pending--;
            return most;
          };
          s.order.forEach((row, rank) => {
            // The F's and I's are interleaved 1F1B's F's and B's, in its order; at most r + 1 W's wait (r after the I's run).
            expect(critical(row)).toEqual(il.order[rank]);
            expect(row.length).toBe(3 * v * m);
            expect(pendingMax(row)).toBeLessThanOrEqual(Math.min(rank + 1, v * m));
          });
        }
      }
    }
    // p = 2, m = 2, v = 2: rank 0 runs each W right after its I (lag 0); rank 1 keeps one back.
    const s = generateSchedule('interleaved-zb', 2, 2, 2);
    expect(text(s, 0)).toBe('0F0 0F1 2F0 2F1 2I0 2W0 2I1 2W1 0I0 0W0 0I1 0W1');
    expect(text(s, 1)).toBe('1F0 1F1 3F0 3I0 3F1 3I1 3W0 1I0 3W1 1I1 1W0 1W1');
  });

  it('lists which schedules accept virtual > 1', () => {
    const accepts = SCHEDULE_NAMES.filter((n) => SCHEDULES[n].acceptsVirtual);
    expect(accepts).toEqual(['interleaved-1f1b', 'interleaved-zb', 'zb-v', 'looped-bfs', 'dualpipe-v', 'hanayo']);
    expect(SCHEDULES['dualpipe-v'].defaultVirtual).toBe(2);
    expect(() => generateSchedule('dualpipe-v', 4, 8, 1)).toThrow('virtual = 1: dualpipe-v holds exactly 2 stages per rank (a V), so virtual must be 2');
    expect(SCHEDULES['zb-v'].defaultVirtual).toBe(2);
    expect(generateSchedule('zb-v', 3, 5).stages).toBe(6);
  });
});

describe('what the registry declares for its callers', () => {
  const all = Object.values(SCHEDULES);

  it('virtualFor: the fixed count, the requested one (hanayo: the even one at or above it), or 1, agreeing with validateParams', () => {
    for (const kind of all) {
      for (const requested of [1, 2, 3, 5]) {
        const v = kind.virtualFor(requested);
        expect(() => kind.validateParams(4, 8, v)).not.toThrow();
        if (kind.acceptsVirtual && requested !== v) expect(() => kind.validateParams(4, 8, requested)).toThrow();
        if (!kind.acceptsVirtual) expect(v).toBe(1);
      }
      expect(kind.virtualFor(kind.defaultVirtual)).toBe(kind.defaultVirtual);
    }
    expect(SCHEDULES['zb-v'].virtualFor(5)).toBe(2);
    expect(SCHEDULES['interleaved-1f1b'].virtualFor(3)).toBe(3);
    expect([1, 2, 3, 4, 5].map((v) => SCHEDULES.hanayo.virtualFor(v))).toEqual([2, 2, 4, 4, 6]);
  });

  it('the synchronous names are exactly the flush schedules; PipeDream stashes and updates after every backward; 2BW double-buffers', () => {
    expect(all.filter((k) => k.update === 'flush').map((k) => k.name)).toEqual([...SCHEDULE_NAMES]);
    expect(RUN_SCHEDULE_NAMES.filter((n) => SCHEDULES[n].update !== 'flush')).toEqual(['pipedream', 'pipedream-2bw']);
    expect(SCHEDULES.pipedream.update).toBe('stash-and-update-after-backward');
    expect(SCHEDULES['pipedream-2bw'].update).toBe('double-buffered');
  });

  it("pipedream-2bw's window is a 1F1B order over every step's micro-batches, with one older weight version and m ≥ p", () => {
    const w = UPDATE_WINDOWS[SCHEDULES['pipedream-2bw'].update];
    expect([w.stream, w.windows(30), w.microbatches(4, 30), w.extraWeightVersions(8), w.lossOver]).toEqual([true, 1, 120, 1, 'step']);
    const s = generateSchedule('pipedream-2bw', 4, w.microbatches(4, 3));
    expect(s.name).toBe('pipedream-2bw');
    expect(s.order).toEqual(generateSchedule('1f1b', 4, 12).order);
    expect(validateSchedule(s).ok).toBe(true);
    expect(SCHEDULES['pipedream-2bw'].theoryAs).toBe('1f1b');
    expect(() => generateSchedule('pipedream-2bw', 4, 2)).toThrow(/^microbatches = 2: PipeDream-2BW needs m ≥ p = 4/);
    expect(() => generateSchedule('pipedream-2bw', 4, 4, 2)).toThrow(/^virtual = 2: pipedream-2bw holds one stage per rank/);
  });

  it("pipedream's window is a valid 1F1B order over every step's micro-batches", () => {
    const w = UPDATE_WINDOWS[SCHEDULES.pipedream.update];
    expect(w.windows(30)).toBe(1);
    expect(w.microbatches(4, 30)).toBe(120);
    const s = generateSchedule('pipedream', 4, w.microbatches(4, 3));
    expect(s.name).toBe('pipedream');
    expect(s.order).toEqual(generateSchedule('1f1b', 4, 12).order);
    expect(validateSchedule(s).ok).toBe(true);
    expect(UPDATE_WINDOWS.flush.windows(30)).toBe(30);
    expect(UPDATE_WINDOWS.flush.microbatches(4, 30)).toBe(4);
  });

  it('costChunks: zb-v costs each of its two stages as a full stage, the others split a rank over v', () => {
    expect(SCHEDULES['zb-v'].costChunks(2)).toBe(1);
    expect(SCHEDULES['interleaved-1f1b'].costChunks(3)).toBe(3);
    expect(SCHEDULES.gpipe.costChunks(1)).toBe(1);
  });
});

describe('action text', () => {
  it('writes {stage}{op}{mb} and reads it back', () => {
    fc.assert(
      fc.property(fc.nat(10_000), fc.constantFrom('F', 'B', 'I', 'W' as const), fc.nat(10_000), (stage, op, mb) => {
        const a = { stage, op, mb };
        expect(parseAction(formatAction(a))).toEqual(a);
      }),
    );
    expect(formatAction({ stage: 2, op: 'F', mb: 0 })).toBe('2F0');
    expect(parseAction(' 1I3 ')).toEqual({ stage: 1, op: 'I', mb: 3 });
  });

  it('rejects what is not a compute action', () => {
    for (const bad of ['', 'F0', '1F', '1X0', '1SEND_F0', '0UNSHARD', '-1F0', '1F0x', '1 F0', '1.5F0']) {
      expect(parseAction(bad)).toBeNull();
    }
  });
});
