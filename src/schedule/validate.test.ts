import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../util/errors.ts';
import { formatAction, parseAction } from './action-text.ts';
import { generateSchedule } from './registry.ts';
import { clone, dependsOn, paramsArb, presentActions } from './test-support.ts';
import type { Action, Schedule } from './types.ts';
import { assertValidSchedule, validateSchedule, type ValidationFailure } from './validate.ts';

const A = (t: string): Action => parseAction(t) as Action;
const fromRows = (rows: string[], stageToRank: number[], microbatches: number): Schedule => ({
  name: 'test',
  stages: stageToRank.length,
  ranks: rows.length,
  microbatches,
  stageToRank,
  order: rows.map((r) => (r.trim() === '' ? [] : r.trim().split(/\s+/).map(A))),
});

function failure(s: Schedule): ValidationFailure {
  const r = validateSchedule(s);
  if (r.ok) throw new Error('expected the schedule to be rejected');
  return r;
}

/** The failure points at an action that is really there (or names a missing one). */
function expectConsistent(s: Schedule, f: ValidationFailure): void {
  if (f.rank !== null && f.index !== null && f.action !== null) {
    expect(s.order[f.rank][f.index]).toEqual(f.action);
    expect(f.error).toContain(`order[${f.rank}][${f.index}]`);
    expect(f.error).toContain(formatAction(f.action));
  }
}

describe('validator: random mutations are rejected', () => {
  const scheduleAndPick = paramsArb(8, 12).chain(({ name, p, m, v }) => {
    const s = generateSchedule(name, p, m, v);
    return fc.record({
      s: fc.constant(s),
      rank: fc.integer({ min: 0, max: p - 1 }),
      i: fc.nat(),
      j: fc.nat(),
    });
  });

  it('an action dropped', () => {
    fc.assert(
      fc.property(scheduleAndPick, ({ s, rank, i }) => {
        const t = clone(s);
        const list = t.order[rank];
        const [dropped] = list.splice(i % list.length, 1);
        const f = failure(t);
        expectConsistent(t, f);
        // A drop is a missing action, or (dropping an I) a W without its I.
        if (dropped.op === 'I') expect(f.error).toMatch(/never its|missing/);
        else expect(f.error).toContain('missing');
      }),
      { numRuns: 150 },
    );
  });

  it('an action duplicated', () => {
    fc.assert(
      fc.property(scheduleAndPick, ({ s, rank, i, j }) => {
        const t = clone(s);
        const list = t.order[rank];
        const a = list[i % list.length];
        list.splice(j % (list.length + 1), 0, { ...a });
        const f = failure(t);
        expectConsistent(t, f);
        expect(f.error).toContain('a second time');
        expect(f.rank).toBe(rank);
      }),
      { numRuns: 150 },
    );
  });

  it('two actions swapped across a dependency', () => {
    fc.assert(
      fc.property(scheduleAndPick, ({ s, rank, i, j }) => {
        const t = clone(s);
        const list = t.order[rank];
        // From a random start, the first pair (x before y) on this rank where y depends on x.
        const present = presentActions(t);
        const n = list.length;
        let pair: [number, number] | null = null;
        for (let d = 0; d < n && !pair; d++) {
          const x = (i + d) % n;
          for (let e = 0; e < n - x - 1 && !pair; e++) {
            const y = x + 1 + ((j + e) % (n - x - 1));
            if (dependsOn(t, list[y], list[x], present)) pair = [x, y];
          }
        }
        // Every rank runs some F before the backward that needs it.
        if (!pair) throw new Error('no dependent pair');
        const [x, y] = pair;
        [list[x], list[y]] = [list[y], list[x]];
        const f = failure(t);
        expectConsistent(t, f);
        expect(f.error).toMatch(/which it needs|deadlocks/);
      }),
      { numRuns: 150 },
    );
  });
});

describe('validator: messages name the first offending action and rank', () => {
  const base = () => generateSchedule('1f1b', 3, 4);

  it('a backward before its own forward', () => {
    const f = failure(fromRows(['0B0 0F0 0F1 0B1', '1F0 1B0 1F1 1B1'], [0, 1], 2));
    expect(f).toMatchObject({ rank: 0, index: 0, action: A('0B0') });
    expect(f.error).toBe('order[0][0] = "0B0": rank 0 runs 0B0 before 0F0 (order[0][1]), which it needs');
  });

  it('a W before its I', () => {
    const f = failure(fromRows(['0F0 0W0 0I0'], [0], 1));
    expect(f).toMatchObject({ rank: 0, index: 1, action: A('0W0') });
    expect(f.error).toContain('before 0I0');
  });

  it('a forward before the previous stage’s forward on the same rank', () => {
    const f = failure(fromRows(['1F0 0F0 1B0 0B0'], [0, 0], 1));
    expect(f).toMatchObject({ rank: 0, index: 0, action: A('1F0') });
    expect(f.error).toContain('before 0F0');
  });

  it('a cross-rank deadlock, reported as its cycle', () => {
    // Rank 0 waits for 1B0's gradient before sending 0F1; rank 1 needs 0F1 before it runs 1B0.
    const s = fromRows(['0F0 0B0 0F1 0B1', '1F0 1F1 1B0 1B1'], [0, 1], 2);
    const f = failure(s);
    expect(f).toMatchObject({ rank: 0, index: 1, action: A('0B0') });
    expect(f.error).toContain('deadlocks when receives block');
    expect(f.error).toContain('rank 0 at 0B0 (order[0][1]) waits for 1B0, which rank 1 runs later (order[1][2])');
    expect(f.error).toContain('rank 1 at 1F1 (order[1][1]) waits for 0F1, which rank 0 runs later (order[0][2])');
  });

  it('a stage run on a rank that does not hold it', () => {
    const s = base();
    s.order[1][0] = A('2F0');
    expect(failure(s)).toMatchObject({ rank: 1, index: 0, error: expect.stringContaining('stageToRank places on rank 2') });
  });

  it('a full backward mixed with a split one', () => {
    const f = failure(fromRows(['0F0 0B0 0I0 0W0'], [0], 1));
    expect(f).toMatchObject({ rank: 0, index: 2, action: A('0I0') });
    expect(f.error).toContain('already has a full backward');
  });

  it('completeness: a missing forward, backward, or W', () => {
    expect(failure(fromRows(['0F0 0B0'], [0], 2)).error).toBe(
      'order[0] = "0F1": is missing: stage 0 never runs the forward of micro-batch 1',
    );
    expect(failure(fromRows(['0F0 0F1 0B1'], [0], 2)).action).toEqual(A('0B0'));
    expect(failure(fromRows(['0F0 0I0'], [0], 1)).action).toEqual(A('0W0'));
    expect(failure(fromRows(['0F0 0W0'], [0], 1)).error).toContain('never its 0I0');
  });

  it('shape: counts, stageToRank, order, fields of actions', () => {
    const s = base();
    expect(failure({ ...s, ranks: 0 }).field).toBe('ranks');
    expect(failure({ ...s, stageToRank: [0, 1] }).field).toBe('stageToRank.length');
    expect(failure({ ...s, stageToRank: [0, 1, 7] }).field).toBe('stageToRank[2]');
    expect(failure({ ...s, order: s.order.slice(1) }).field).toBe('order.length');
    const t = clone(s);
    (t.order[2][3] as { op: string }).op = 'X';
    expect(failure(t)).toMatchObject({ field: 'order[2][3].op', rank: 2, index: 3 });
    const u = clone(s);
    u.order[0][1].mb = 9;
    expect(failure(u).field).toBe('order[0][1].mb');
  });

  it('accepts valid orders that no generator makes', () => {
    // 1F1B with rank 0 doing GPipe: still complete and deadlock-free.
    const s = base();
    s.order[0] = [A('0F0'), A('0F1'), A('0F2'), A('0F3'), A('0B0'), A('0B1'), A('0B2'), A('0B3')];
    expect(validateSchedule(s)).toEqual({ ok: true });
    // Mixed: stage 0 split into I/W, stage 1 with full B.
    expect(validateSchedule(fromRows(['0F0 0I0 0W0', '1F0 1B0'], [0, 1], 1))).toEqual({ ok: true });
  });

  it('assertValidSchedule throws a ConfigError with the same message', () => {
    const s = fromRows(['0B0 0F0'], [0], 1);
    expect(() => assertValidSchedule(s)).toThrow(ConfigError);
    expect(() => assertValidSchedule(s)).toThrow(failure(s).error);
    expect(() => assertValidSchedule(base())).not.toThrow();
  });
});
