/** Seeded batches (a pure function of seed and step) and micro-batch splitting. */
import { describe, expect, it } from 'vitest';
import { BatchSampler, splitMicrobatches } from './batches.ts';
import { makeTwoD } from './two-d.ts';

const ex = makeTwoD('spiral', 60, 0.2, 1);

describe('BatchSampler', () => {
  it('batch(step) depends only on seed and step, in any call order', () => {
    const a = new BatchSampler(ex, 16, 7);
    const b = new BatchSampler(ex, 16, 7);
    const forward = [0, 1, 2, 3, 4, 5, 6, 7].map((s) => a.rows(s));
    const backward = [7, 6, 5, 4, 3, 2, 1, 0].map((s) => b.rows(s)).reverse();
    expect(backward).toEqual(forward);
    expect(new BatchSampler(ex, 16, 8).rows(0)).not.toEqual(forward[0]);
    const batch = a.batch(3);
    const rows = a.rows(3);
    expect(batch.n).toBe(16);
    for (let i = 0; i < 16; i++) {
      expect(batch.labels[i]).toBe(ex.labels[rows[i]]);
      expect(batch.inputs[2 * i]).toBe(ex.inputs[2 * rows[i]]);
    }
  });

  it('draws without replacement: each epoch visits every row once', () => {
    const s = new BatchSampler(ex, 20, 3); // 60 rows: 3 batches per epoch
    for (const epoch of [0, 1]) {
      const seen = [0, 1, 2].flatMap((i) => Array.from(s.rows(epoch * 3 + i)));
      expect(seen.sort((x, y) => x - y)).toEqual([...Array(60).keys()]);
    }
  });

  it('a batch larger than the data set straddles epochs', () => {
    const rows = new BatchSampler(ex, 150, 1).rows(0);
    const counts = new Array<number>(60).fill(0);
    for (const r of rows) counts[r]++;
    expect(Math.min(...counts)).toBeGreaterThanOrEqual(2);
  });

  it('rejects bad sizes with the field, the value and the rule', () => {
    expect(() => new BatchSampler(ex, 0, 1)).toThrow('batchSize = 0: must be an integer at least 1');
    expect(() => new BatchSampler(ex, 8, 1).rows(-1)).toThrow('step = -1: must be an integer at least 0');
  });
});

describe('splitMicrobatches', () => {
  it('splits B rows into m consecutive micro-batches of B/m', () => {
    const batch = new BatchSampler(ex, 24, 1).batch(0);
    const mbs = splitMicrobatches(batch, 4);
    expect(mbs.map((m) => m.n)).toEqual([6, 6, 6, 6]);
    expect(mbs.flatMap((m) => Array.from(m.labels))).toEqual(Array.from(batch.labels));
    expect(mbs.flatMap((m) => Array.from(m.inputs))).toEqual(Array.from(batch.inputs));
  });

  it('B % m != 0 is rejected naming microbatches', () => {
    const batch = new BatchSampler(ex, 10, 1).batch(0);
    expect(() => splitMicrobatches(batch, 4)).toThrow('microbatches = 4: must divide the batch size 10 evenly');
    expect(() => splitMicrobatches(batch, 0)).toThrow('microbatches = 0: must be an integer at least 1');
  });
});
