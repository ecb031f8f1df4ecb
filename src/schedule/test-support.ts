/** Shared by the schedule tests: random valid parameters and dependency helpers. Not used by the app. */
import fc from 'fast-check';
import { formatAction } from './action-text.ts';
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
      if (!kind.acceptsVirtual) v = 1;
      if (kind.placement === 'v') v = 2;
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
    if (stage > 0) out.push({ stage: stage - 1, op: 'F', mb });
  } else if (a.op === 'W') {
    out.push({ stage, op: 'I', mb });
  } else {
    out.push({ stage, op: 'F', mb });
    if (stage < s.stages - 1) {
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
