/**
 * PipeDream-2BW on replicas played with the pipeline (simulate-blocks.ts): an all-reduce of each stage's gradients
 * after its last backward of every block of m micro-batches, the worker waiting for it. Worked by hand on one rank
 * (dp = 2, a stream of 2 steps × 2 micro-batches, F = 1, B = 2; a stage of 4 bytes on a link of 1 byte a time unit,
 * no latency: the reduce-scatter and the all-gather are one exchange of 2 bytes each, 2 time units), then the
 * rules checked on a 4-rank stream.
 */
import { describe, expect, it } from 'vitest';
import { generateSchedule } from './registry.ts';
import { simulate, simulateStep } from './simulate.ts';
import type { CostModel } from './cost-model.ts';

const ops = (r: ReturnType<typeof simulate>) => r.timeline.intervals.filter((iv) => iv.op !== 'collective' && iv.op !== 'comm' && !iv.replica).map((iv) => `${iv.op}${iv.mb}@${iv.start}`);
const colls = (r: ReturnType<typeof simulate>) => r.timeline.intervals.filter((iv) => iv.op === 'collective' && !iv.replica).map((iv) => `${iv.coll === 'all-gather' ? 'AG' : iv.coll === 'reduce-scatter' ? 'RS' : iv.coll}@${iv.start}`);

describe('a stream’s all-reduce per block (PipeDream-2BW on replicas)', () => {
  it('one rank: each block of m backwards is followed by its all-reduce, and the next forward waits for it', () => {
    const s = generateSchedule('pipedream-2bw', 1, 4);
    const r = simulate(s, { F: 1, B: 2, dp: 2, gradBytes: 4, allReduce: { latency: 0, bandwidth: 1, every: 2, readback: 0.5, write: 0.25 } });
    expect(ops(r)).toEqual(['F0@0', 'B0@1', 'F1@3', 'B1@4', 'F2@10.75', 'B2@11.75', 'F3@13.75', 'B3@14.75']);
    expect(colls(r)).toEqual(['gather-grads@6', 'RS@6.5', 'AG@8.5', 'scatter-back@10.5', 'gather-grads@16.75', 'RS@17.25', 'AG@19.25', 'scatter-back@21.25']);
    expect(r.makespan).toBe(21.5);
    expect(r.dp?.computeMakespan).toBe(16.75);
    expect(r.dp?.allReduceTime).toEqual([8]); // two blocks' ring time, 4 each
  });

  it('four ranks: every stage’s all-reduce follows its block’s last backward, nothing on its rank overlaps it; free links change nothing', () => {
    const p = 4, m = 4, steps = 3;
    const s = generateSchedule('pipedream-2bw', p, m * steps);
    const base: CostModel = { F: 1, B: 2, dp: 2, gradBytes: 8 };
    const r = simulate(s, { ...base, allReduce: { latency: 0.3, bandwidth: 4, every: m } });
    const iv = r.timeline.intervals.filter((x) => !x.replica);
    for (let rank = 0; rank < p; rank++) {
      const compute = iv.filter((x) => x.rank === rank && (x.op === 'F' || x.op === 'B')).sort((a, b) => a.start - b.start);
      const rings = iv.filter((x) => x.rank === rank && x.op === 'collective');
      expect(rings.filter((x) => x.coll === 'reduce-scatter')).toHaveLength(steps); // dp − 1 = 1 exchange a block
      for (const rs of rings.filter((x) => x.coll === 'reduce-scatter')) {
        const before = compute.filter((c) => c.end <= rs.start + 1e-9);
        const last = before[before.length - 1];
        expect([last.op, last.mb % m]).toEqual(['B', m - 1]);
        const ag = rings.find((x) => x.coll === 'all-gather' && Math.abs(x.start - rs.end) < 1e-9);
        expect(ag).toBeDefined();
        const next = compute.find((c) => c.start >= last.end - 1e-9 && c !== last);
        if (next) expect(next.start).toBeGreaterThanOrEqual((ag?.end ?? Infinity) - 1e-9);
      }
    }
    // Replicas drawn: dp × ranks lanes of compute, every worker's exchanges.
    expect(r.timeline.intervals.filter((x) => x.op === 'collective').length).toBe(2 * p * steps * 2);
    // Free links (α = 0, β = ∞): the same play as one pipeline.
    const free = simulate(s, { ...base, allReduce: { latency: 0, bandwidth: Infinity, every: m } });
    const alone = simulate(s, { F: 1, B: 2 });
    expect(free.makespan).toBeCloseTo(alone.makespan, 9);
    expect(r.makespan).toBeGreaterThan(alone.makespan);
    // The planner's entry gives the same step.
    expect(simulateStep(s, { ...base, allReduce: { latency: 0.3, bandwidth: 4, every: m } }).makespan).toBeCloseTo(r.makespan, 9);
  });

  it('refuses every with ZeRO, or not a whole number ≥ 1, naming the field', () => {
    const s = generateSchedule('pipedream-2bw', 2, 4);
    expect(() => simulate(s, { dp: 2, allReduce: { latency: 0, bandwidth: 1, every: 2, zero: 1 } })).toThrow(/^costs\.allReduce\.every = 2: a stream's all-reduce per block is a plain one: it takes zero = 0/);
    expect(() => simulate(s, { dp: 2, allReduce: { latency: 0, bandwidth: 1, every: 0 } })).toThrow(/^costs\.allReduce\.every = 0: must be a whole number ≥ 1/);
  });
});
