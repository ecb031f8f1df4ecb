import { describe, expect, it } from 'vitest';
import { mergeRefusal, mergeReports, type MergeableReport } from './merge-report.ts';

const base = (over: Partial<MergeableReport>): MergeableReport => ({
  date: '2026-11-26T00:00:00Z', seconds: 500, quick: false, machine: { cpus: 2, cpuModel: 'x' }, browser: '156', adapter: { vendor: 'google', architecture: 'swiftshader' }, results: {}, ...over,
});

describe('a bench run of some suites laid over the results already there', () => {
  it('replaces the suites it ran, keeps the others in their order, and lists both runs', () => {
    const prev = base({ results: { schedules: 'S', tp: 'old tp', checkpoint: 'C' }, failures: { tp: 'crashed' } });
    const next = base({ date: '2026-11-27T00:00:00Z', seconds: 130, results: { tp: 'new tp' } });
    const m = mergeReports(prev, next);
    expect(Object.entries(m.results)).toEqual([['schedules', 'S'], ['tp', 'new tp'], ['checkpoint', 'C']]);
    expect(m.failures).toEqual({});
    expect(m.runs).toEqual([
      { date: '2026-11-26T00:00:00Z', seconds: 500, suites: ['schedules', 'checkpoint'] },
      { date: '2026-11-27T00:00:00Z', seconds: 130, suites: ['tp'] },
    ]);
    expect(m.date).toBe(next.date);
  });

  it('refuses another machine, browser, adapter or grid, saying which', () => {
    const prev = base({});
    expect(mergeRefusal(prev, base({}))).toBeNull();
    expect(mergeRefusal(prev, base({ machine: { cpus: 16, cpuModel: 'x' } }))).toMatch(/^its machine differs/);
    expect(mergeRefusal(prev, base({ adapter: { vendor: 'nvidia', architecture: 'hopper' } }))).toMatch(/^its adapter differs/);
    expect(mergeRefusal(prev, base({ quick: true }))).toMatch(/^its grid \(--quick, --big\) differs/);
  });
});
