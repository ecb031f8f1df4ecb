/** Test helper: two run reports with the same losses and every weight equal, bit for bit. */
import { expect } from 'vitest';
import type { RunReport } from '../../runtime/report/index.ts';

export function expectSameRun(a: Pick<RunReport, 'losses' | 'weights'>, b: Pick<RunReport, 'losses' | 'weights'>): void {
  expect(a.losses).toEqual(b.losses);
  const names = Object.keys(b.weights ?? {}).sort();
  expect(names.length).toBeGreaterThan(0);
  expect(Object.keys(a.weights ?? {}).sort()).toEqual(names);
  for (const n of names) expect(Array.from((a.weights ?? {})[n])).toEqual(Array.from((b.weights ?? {})[n]));
}
