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

  it('the worker\'s own time: a read-back after each backward before it goes on, a write before a gathered stage runs, the update at the end', () => {
    const times = { readback: 0.5, update: 1, write: 0.25 };
    const kinds = (r: ReturnType<typeof simulate>) =>
      r.timeline.intervals.filter((iv) => iv.op === 'collective' && !iv.replica).map((iv) => `${iv.coll}@${iv.start}`);
    // ZeRO-2: B0 2–4, read 4–4.5, RS 4.5–6.5 behind B1 4.5–6.5; read 6.5–7, RS 7–9; the link idle at 9: update 9–10,
    // the all-gather 10–12, the write 12–12.25.
    const z2 = run({ zero: 2, ...times });
    expect(ops(z2)).toEqual(['F0@0', 'F1@1', 'B0@2', 'B1@4.5']);
    expect(kinds(z2)).toEqual(['gather-grads@4', 'reduce-scatter@4.5', 'gather-grads@6.5', 'reduce-scatter@7', 'shard-update@9', 'all-gather@10', 'scatter-back@12']);
    expect(z2.makespan).toBe(12.25);
    // The ring's collectives alone count as the stage's collective time: 2 reduce-scatters and the all-gather.
    expect(z2.dp?.allReduceTime).toEqual([6]);
    // ZeRO-3 for the step: gathered 0–2 and written 2–2.25 before F0; reads after B0 (6.25) and B1 (8.75); update after the link's last RS (11.25).
    const z3 = run({ zero: 3, reshard: 'step', ...times });
    expect(ops(z3)).toEqual(['F0@2.25', 'F1@3.25', 'B0@4.25', 'B1@6.75']);
    expect(kinds(z3)).toEqual(['all-gather@0', 'scatter-back@2', 'gather-grads@6.25', 'reduce-scatter@6.75', 'gather-grads@8.75', 'reduce-scatter@9.25', 'shard-update@11.25']);
    expect(z3.makespan).toBe(12.25);
    // Every replica draws them too; none without the times (the ZeRO-2 case above: 3 exchanges only).
    expect(z2.timeline.intervals.filter((iv) => iv.coll === 'gather-grads').length).toBe(2 * 2);
    expect(run({ zero: 2 }).timeline.intervals.some((iv) => iv.coll === 'gather-grads' || iv.coll === 'shard-update')).toBe(false);
    expect(() => run({ zero: 2, readback: -1 })).toThrow(/costs\.allReduce\.readback = -1: must be a time ≥ 0/);
    expect(() => run({ zero: 2, update: [1, 2] })).toThrow(/costs\.allReduce\.update = \[1, 2\]: must be a number or a list of 1 numbers/);
  });
});
