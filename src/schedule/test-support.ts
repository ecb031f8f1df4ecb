/** Shared by the schedule tests: random valid parameters and dependency helpers. Not used by the app. */
import fc from 'fast-check';
import { formatAction } from './action-text.ts';
import { hasNextStage, hasPrevStage } from './copies.ts';
import { SCHEDULES, SCHEDULE_NAMES, type ScheduleName } from './registry.ts';
import type { Action, Schedule } from './types.ts';

export interface Params {
  name: ScheduleName;
  p: number;
  m: number;
  v: number;
}

/** Valid (name, p, m, v) for every schedule, p ≤ maxP, m ≤ maxM. */
export function paramsArb(maxP = 10, maxM = 24): fc.Arbitrary<Params> {
  return fc
    .record({
      name: fc.constantFrom(...SCHEDULE_NAMES),
      p: fc.integer({ min: 1, max: maxP }),
      m: fc.integer({ min: 1, max: maxM }),
      v: fc.integer({ min: 1, max: 4 }),
    })
    .map(({ name, p, m, v }) => {
      const kind = SCHEDULES[name];
      if (name === 'interleaved-1f1b') m = p * Math.max(1, Math.round(m / p));
      // DualPipe: p even, m even and at least 2p.
      if (name === 'dualpipe') {
        p = 2 * Math.ceil(p / 2);
        m = Math.max(2 * p, 2 * Math.ceil(m / 2));
      }
      v = kind.virtualFor(v);
      return { name, p, m, v };
    });
}

export function clone(s: Schedule): Schedule {
  return { ...s, stageToRank: [...s.stageToRank], order: s.order.map((l) => l.map((a) => ({ ...a }))) };
}

const key = (a: Action) => formatAction(a);

/** Direct dependencies of `a` that exist in `s` (see engine.ts). */
export function directDeps(s: Schedule, a: Action, present: Set<string>): Action[] {
  const out: Action[] = [];
  const { stage, mb } = a;
  if (a.op === 'F') {
    if (hasPrevStage(s, stage)) out.push({ stage: stage - 1, op: 'F', mb });
  } else if (a.op === 'W') {
    out.push({ stage, op: 'I', mb });
  } else {
    out.push({ stage, op: 'F', mb });
    if (hasNextStage(s, stage)) {
      const b: Action = { stage: stage + 1, op: 'B', mb };
      out.push(present.has(key(b)) ? b : { stage: stage + 1, op: 'I', mb });
    }
  }
  return out;
}

export function presentActions(s: Schedule): Set<string> {
  return new Set(s.order.flat().map(key));
}

/** True when `later` depends, directly or through others, on `earlier`. */
export function dependsOn(s: Schedule, later: Action, earlier: Action, present = presentActions(s)): boolean {
  const target = key(earlier);
  const seen = new Set<string>();
  const stack = [later];
  while (stack.length > 0) {
    const a = stack.pop() as Action;
    for (const d of directDeps(s, a, present)) {
      const k = key(d);
      if (k === target) return true;
      if (!seen.has(k)) {
        seen.add(k);
        stack.push(d);
      }
    }
  }
  return false;
}

/**
 * In a PyTorch CSV, every action whose input comes from another rank (F of
 * stage s > 0 needs (s-1)F of its micro-batch; B or I of stage s < last needs
 * (s+1)B or (s+1)I) must sit in an earlier column than its use, or a lock-step
 * executor computes on an unfilled buffer. Returns each violation as text.
 * With `copies` model copies (the CSV does not say), a copy's first stage
 * reads data and its last the loss (copies.ts).
 */
export function crossRankColumnViolations(csvText: string, copies = 1): string[] {
  const rows = csvText.split(/\r?\n/).filter((r, i, all) => r !== '' || i < all.length - 1).map((r) => r.split(','));
  const where = new Map<string, { rank: number; col: number }>();
  let stages = 0;
  rows.forEach((row, rank) =>
    row.forEach((cell, col) => {
      const m = /^(\d+)([FBIW])(\d+)$/.exec(cell.trim());
      if (!m) return;
      where.set(cell.trim(), { rank, col });
      stages = Math.max(stages, Number(m[1]) + 1);
    }),
  );
  const out: string[] = [];
  for (const [a, at] of where) {
    const m = /^(\d+)([FBIW])(\d+)$/.exec(a) as RegExpExecArray;
    const [st, op, mb] = [Number(m[1]), m[2], m[3]];
    const perCopy = stages / copies;
    const inputs = op === 'F' && st % perCopy !== 0 ? [`${st - 1}F${mb}`] : (op === 'B' || op === 'I') && (st + 1) % perCopy !== 0 ? [`${st + 1}B${mb}`, `${st + 1}I${mb}`] : [];
    for (const dep of inputs) {
      const d = where.get(dep);
      if (d && d.rank !== at.rank && d.col >= at.col) out.push(`${a} (row ${at.rank + 1}, column ${at.col + 1}) uses ${dep} from row ${d.rank + 1}, column ${d.col + 1}`);
    }
  }
  return out;
}
