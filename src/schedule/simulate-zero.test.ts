/**
 * ZeRO-2/3 played with the pipeline (simulate-zero.ts), worked by hand on one rank, dp = 2, GPipe with two
 * micro-batches (F0 F1 B0 B1; F = 1, B = 2), a stage of 4 bytes on a link of 1 byte a time unit and no latency:
 * a reduce-scatter or an all-gather is one exchange of 2 bytes, 2 time units.
 */
import { describe, expect, it } from 'vitest';
import { generateSchedule } from './registry.ts';
import { simulate } from './simulate.ts';
import type { CostModel } from './cost-model.ts';

const s = generateSchedule('gpipe', 1, 2);
const costs = (allReduce: CostModel['allReduce']): CostModel => ({ F: 1, B: 2, dp: 2, gradBytes: 4, allReduce });
const run = (z: Partial<NonNullable<CostModel['allReduce']>>) => simulate(s, costs({ latency: 0, bandwidth: 1, ...z }));
const ops = (r: ReturnType<typeof simulate>) => r.timeline.intervals.filter((iv) => iv.op !== 'collective' && !iv.replica).map((iv) => `${iv.op}${iv.mb}@${iv.start}`);
const colls = (r: ReturnType<typeof simulate>) => r.timeline.intervals.filter((iv) => iv.op === 'collective' && !iv.replica).map((iv) => `${iv.coll === 'all-gather' ? 'AG' : 'RS'}@${iv.start}`);

describe('ZeRO-2 and ZeRO-3 played with the pipeline', () => {
  it('ZeRO-2 with overlap: a reduce-scatter after each backward, behind the compute; the weights gathered at the end', () => {
    const r = run({ zero: 2 });
    expect(ops(r)).toEqual(['F0@0', 'F1@1', 'B0@2', 'B1@4']);
    expect(colls(r)).toEqual(['RS@4', 'RS@6', 'AG@8']);
    expect(r.makespan).toBe(10);
    expect(r.dp?.computeMakespan).toBe(6);
    expect(r.dp?.exposedAllReduce).toBe(4);
  });

  it('ZeRO-2 without overlap: each backward waits for its reduce-scatter', () => {
    const r = run({ zero: 2, overlap: false });
    expect(ops(r)).toEqual(['F0@0', 'F1@1', 'B0@2', 'B1@6']);
    expect(r.makespan).toBe(12);
  });

  it('ZeRO-3 kept for the step: one gather before the first forward, nothing at the end', () => {
    const r = run({ zero: 3, reshard: 'step' });
    expect(colls(r)).toEqual(['AG@0', 'RS@6', 'RS@8']);
    expect(ops(r)).toEqual(['F0@2', 'F1@3', 'B0@4', 'B1@6']);
    expect(r.makespan).toBe(10);
  });

  it('ZeRO-3 per action: prefetch hides each gather behind the action before it; without it every action waits', () => {
    const on = run({ zero: 3, reshard: 'microbatch', prefetch: true });
    expect(ops(on)).toEqual(['F0@2', 'F1@4', 'B0@6', 'B1@8']);
    expect(on.makespan).toBe(12);
    const off = run({ zero: 3, reshard: 'microbatch', prefetch: false });
    expect(ops(off)).toEqual(['F0@2', 'F1@5', 'B0@8', 'B1@14']);
    expect(off.makespan).toBe(18);
    // Every replica's worker draws its collectives (n − 1 = 1 exchange each).
    expect(off.timeline.intervals.filter((iv) => iv.op === 'collective').length).toBe(2 * 6);
  });

  it('ZeRO 0 and 1 keep the flush\'s all-reduce; a bad stage or reshard is named', () => {
    expect(run({ zero: 1 }).makespan).toBe(run({ zero: true }).makespan);
    expect(() => run({ zero: 4 as never })).toThrow(/costs\.allReduce\.zero = 4/);
    expect(() => run({ zero: 3, reshard: 'layer' as never })).toThrow(/costs\.allReduce\.reshard = "layer": must be one of step, microbatch/);
  });
});
