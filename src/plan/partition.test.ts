/** planPartition against brute force over every contiguous cut, with communication and a memory cap. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { BlockRange } from '../nn/partition.ts';
import { inFlight1F1B, planPartition, stageTimeOf } from './partition.ts';
import { parseProfile, type Profile } from './profile.ts';

function allCuts(n: number, s: number, start = 0): BlockRange[][] {
  if (s === 1) return [[[start, n]]];
  const out: BlockRange[][] = [];
  for (let end = start + 1; end <= n - (s - 1); end++) for (const rest of allCuts(n, s - 1, end)) out.push([[start, end], ...rest]);
  return out;
}

const profileArb = fc.integer({ min: 1, max: 8 }).chain((n) =>
  fc.record({
    blocks: fc.array(
      fc.record({ F: fc.integer({ min: 0, max: 20 }), I: fc.integer({ min: 0, max: 20 }), W: fc.integer({ min: 0, max: 20 }), heldBytes: fc.integer({ min: 0, max: 100 }) }),
      { minLength: n, maxLength: n },
    ),
    comm: fc.array(fc.integer({ min: 0, max: 15 }), { minLength: n - 1, maxLength: n - 1 }),
  }),
);

/** Independent: every cut's slowest stage and its worst rank's bytes, computed directly. */
function bruteForce(p: Profile, ranks: number, m: number, cap: number): { best: number; smallestCap: number } {
  let best = Infinity;
  let smallestCap = Infinity;
  for (const cut of allCuts(p.blocks.length, ranks)) {
    let slow = 0;
    let bytes = 0;
    cut.forEach(([a, b], s) => {
      let t = 0;
      let h = 0;
      for (let i = a; i < b; i++) {
        t += p.blocks[i].F + p.blocks[i].I + p.blocks[i].W;
        h += p.blocks[i].heldBytes;
      }
      if (a > 0) t += p.comm[a - 1];
      if (b < p.blocks.length) t += p.comm[b - 1];
      slow = Math.max(slow, t);
      bytes = Math.max(bytes, h * Math.min(ranks - s, m));
    });
    smallestCap = Math.min(smallestCap, bytes);
    if (bytes <= cap) best = Math.min(best, slow);
  }
  return { best, smallestCap };
}

describe('planPartition', () => {
  it('is optimal: equals brute force over all contiguous cuts (compute + comm, with and without a cap)', () => {
    fc.assert(
      fc.property(profileArb, fc.integer({ min: 1, max: 8 }), fc.integer({ min: 1, max: 6 }), fc.integer({ min: 1, max: 600 }), (raw, r, m, cap) => {
        const p = parseProfile({ unit: 'unit', ...raw });
        const ranks = Math.min(r, p.blocks.length);
        const free = planPartition(p, ranks, { microbatches: m });
        expect(free.bottleneck).toBe(bruteForce(p, ranks, m, Infinity).best);
        expect(Math.max(...free.ranges.map((x) => stageTimeOf(p, x)))).toBe(free.bottleneck);
        expect(free.stageTime).toEqual(free.ranges.map((x) => stageTimeOf(p, x)));
        const want = bruteForce(p, ranks, m, cap);
        if (Number.isFinite(want.best)) {
          const capped = planPartition(p, ranks, { microbatches: m, memCap: cap });
          expect(capped.bottleneck).toBe(want.best);
          for (const b of capped.stageBytes) expect(b).toBeLessThanOrEqual(cap);
        } else {
          expect(() => planPartition(p, ranks, { microbatches: m, memCap: cap })).toThrow(`the smallest cap that works is ${want.smallestCap} bytes`);
          // and that cap does work
          expect(planPartition(p, ranks, { microbatches: m, memCap: want.smallestCap }).bottleneck).toBe(bruteForce(p, ranks, m, want.smallestCap).best);
        }
      }),
      { numRuns: 400, seed: 7 },
    );
  });

  it('moves a cut off an expensive link, and a heavy head gets its own stage', () => {
    const p = parseProfile({ unit: 'unit', blocks: [1, 1, 1, 1].map(() => ({ F: 1, I: 1, W: 1 })), comm: [0, 10, 0] });
    expect(planPartition(p, 2).ranges).toEqual([[0, 1], [1, 4]]);
    const head = parseProfile({ unit: 'unit', blocks: [1, 1, 1, 6].map((f) => ({ F: f, I: f, W: f })) });
    expect(planPartition(head, 2).ranges).toEqual([[0, 3], [3, 4]]);
  });

  it('counts 1F1B in-flight micro-batches for memory: stage s holds min(p − s, m)', () => {
    expect([0, 1, 2, 3].map((s) => inFlight1F1B(s, 4, 8))).toEqual([4, 3, 2, 1]);
    expect([0, 1, 2, 3].map((s) => inFlight1F1B(s, 4, 2))).toEqual([2, 2, 2, 1]);
    const p = parseProfile({ unit: 'unit', blocks: [1, 1, 1, 1].map(() => ({ F: 1, I: 1, W: 1, heldBytes: 10, heldBytesRecompute: 1 })) });
    // Balanced 2+2 keeps 2 blocks × 2 micro-batches = 40 bytes on rank 0; a cap of 30 forces 1+3 (10·2 and 30·1).
    expect(planPartition(p, 2).stageBytes).toEqual([40, 20]);
    expect(planPartition(p, 2, { memCap: 30 }).ranges).toEqual([[0, 1], [1, 4]]);
    expect(planPartition(p, 2, { memCap: 4, recompute: true }).ranges).toEqual([[0, 2], [2, 4]]);
  });

  it('refuses more ranks than blocks and a cap nothing meets, naming the field, the value and the rule', () => {
    const p = parseProfile({ unit: 'unit', blocks: [1, 1, 1].map(() => ({ F: 1, I: 1, W: 1, heldBytes: 10 })) });
    expect(() => planPartition(p, 4)).toThrow('ranks = 4: must be at most the number of blocks, 3 (a stage holds at least one block)');
    expect(() => planPartition(p, 3, { memCap: 5 })).toThrow("memCap = 5: no split into 3 stages keeps every rank's activations within it; the smallest cap that works is 30 bytes");
    expect(() => planPartition(p, 2, { memCap: 0 })).toThrow('memCap = 0: must be a number greater than 0');
  });
});
