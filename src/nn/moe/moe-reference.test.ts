/**
 * The MoE ops of the float64 reference: routing against hand-worked cases (ties, capacity in token order, the
 * second choices behind the first, dropless), every differentiable op against central finite differences.
 */
import { describe, expect, it } from 'vitest';
import { Rng } from '../../util/rng.ts';
import { CpuBackend } from '../cpu-backend.ts';
import { compareGrads, cpuData, dot, numericGrad, randomArray } from '../testing/gradcheck.ts';
import type { Tensor } from '../backend.ts';
import { expertCapacity } from './moe-shapes.ts';

const be = new CpuBackend();
const ints = async (t: Tensor) => Array.from(await be.read(t));

/**
 * The load counted from a route's decisions by hand: each token's choices from sel, a drop wherever slot is −1
 * (independent of the capacity pass that wrote load).
 */
async function recount(sel: Tensor, slot: Tensor, E: number): Promise<number[]> {
  const [S, k] = sel.shape;
  const s = await ints(sel), sl = await ints(slot);
  const load = new Array<number>(E * 3).fill(0);
  for (let t = 0; t < S; t++) {
    for (let j = 0; j < k; j++) {
      const e = s[t * k + j];
      load[e * 3 + j]++;
      if (sl[t * k + j] < 0) load[e * 3 + 2]++;
    }
  }
  return load;
}

describe('routing (hand-worked)', () => {
  // 5 tokens, 3 experts. Token 1 ties experts 0 and 2 (to 0); token 3 ties all three (to 0, then 1).
  const P = [
    0.2, 0.5, 0.3,
    0.4, 0.2, 0.4,
    0.1, 0.3, 0.6,
    1 / 3, 1 / 3, 1 / 3,
    0.5, 0.1, 0.4,
  ];
  it('top-1, capacity 2: expert 0 takes tokens 1 and 3, token 4 is dropped', async () => {
    const r = be.moeRoute(be.tensor(P, [5, 3]), 1, 2);
    expect(await ints(r.sel)).toEqual([1, 0, 2, 0, 0]);
    expect(await ints(r.slot)).toEqual([2, 0, 4, 1, -1]);
    expect(await ints(r.rowToken)).toEqual([1, 3, 0, -1, 2, -1]);
    // load [E, 3] (first, second, dropped): expert 0 chosen by tokens 1, 3, 4 (4 dropped), expert 1 by 0, expert 2 by 2.
    expect(await ints(r.load)).toEqual([3, 0, 1, 1, 0, 0, 1, 0, 0]);
  });
  it('top-2, capacity 3: every first choice before any second choice', async () => {
    const r = be.moeRoute(be.tensor(P, [5, 3]), 2, 3);
    // first choices 1,0,2,0,0; second choices 2,2,1,1,2
    expect(await ints(r.sel)).toEqual([1, 2, 0, 2, 2, 1, 0, 1, 0, 2]);
    // expert 0: t1 (row 0), t3 (1), t4 (2). expert 1: t0 (3), then seconds t2 (4), t3 (5).
    // expert 2: t2 first (6), then seconds t0 (7), t1 (8), t4 dropped.
    expect(await ints(r.slot)).toEqual([3, 7, 0, 8, 6, 4, 1, 5, 2, -1]);
    expect(await ints(r.rowToken)).toEqual([2, 6, 8, 0, 5, 7, 4, 1, 3]);
    // expert 0: three firsts; expert 1: one first, two seconds; expert 2: one first, three seconds, one (t4's) dropped.
    expect(await ints(r.load)).toEqual([3, 0, 0, 1, 2, 0, 1, 3, 1]);
  });
  it('dropless: capacity S keeps every choice', async () => {
    expect(expertCapacity(0, 2, 5, 3)).toBe(5);
    const r = be.moeRoute(be.tensor(P, [5, 3]), 2, 5);
    expect((await ints(r.slot)).every((v) => v >= 0)).toBe(true);
    expect(await ints(r.load)).toEqual([3, 0, 0, 1, 2, 0, 1, 3, 0]);
  });
  it.each([[1, 3], [2, 4], [2, 40]])('load equals a recount from sel and slot (top-%i, capacity %i, 40 random tokens, 6 experts)', async (k, cap) => {
    const rng = new Rng(7 + k + cap);
    const probs = be.softmaxRows(be.tensor(randomArray(rng, 40 * 6, 2), [40, 6]));
    const r = be.moeRoute(probs, k, cap);
    const load = await ints(r.load);
    expect(load).toEqual(await recount(r.sel, r.slot, 6));
    // Every token chose k experts; the kept rows are the capacity's (min(chosen, cap) per expert).
    expect(load.filter((_, i) => i % 3 !== 2).reduce((a, b) => a + b, 0)).toBe(40 * k);
    for (let e = 0; e < 6; e++) expect(load[e * 3] + load[e * 3 + 1] - load[e * 3 + 2]).toBe(Math.min(cap, load[e * 3] + load[e * 3 + 1]));
  });
  it('capacity is ⌈factor·k·S/E⌉ within [1, S]', () => {
    expect(expertCapacity(1, 1, 16, 4)).toBe(4);
    expect(expertCapacity(1.25, 2, 16, 4)).toBe(10);
    expect(expertCapacity(1.1, 1, 10, 4)).toBe(3);
    expect(expertCapacity(0.01, 1, 10, 4)).toBe(1);
    expect(expertCapacity(100, 2, 10, 4)).toBe(10);
  });
  it('gates: top-1 the probability, top-2 normalised over the pair', async () => {
    const probs = be.tensor(P, [5, 3]);
    expect(Array.from(await be.read(be.moeGates(probs, be.moeRoute(probs, 1, 5).sel)))).toEqual([0.5, 0.4, 0.6, 1 / 3, 0.5]);
    const g2 = Array.from(await be.read(be.moeGates(probs, be.moeRoute(probs, 2, 5).sel)));
    expect(g2[0]).toBeCloseTo(0.5 / 0.8, 14);
    expect(g2[1]).toBeCloseTo(0.3 / 0.8, 14);
    expect(g2[6]).toBeCloseTo(0.5, 14);
  });
  it('aux loss: E·Σ f·P̄ by hand', async () => {
    const probs = be.tensor(P, [5, 3]);
    const { loss, dProbs } = be.moeAuxLoss(probs, be.moeRoute(probs, 1, 5).sel);
    const f = [3 / 5, 1 / 5, 1 / 5];
    const Pbar = [0, 1, 2].map((e) => [0, 1, 2, 3, 4].reduce((s, t) => s + P[t * 3 + e], 0) / 5);
    expect((await be.read(loss))[0]).toBeCloseTo(3 * (f[0] * Pbar[0] + f[1] * Pbar[1] + f[2] * Pbar[2]), 14);
    expect((await be.read(dProbs))[4 * 3 + 0]).toBeCloseTo((3 * f[0]) / 5, 14);
  });
});

/** Checks ∂(Σ out·R)/∂x of op(x) against finite differences. */
async function fd(op: (x: Tensor) => Tensor, x: Tensor, analytic: (R: Tensor) => Tensor, seed: number): Promise<void> {
  const rng = new Rng(seed);
  const y = op(x);
  const R = be.tensor(randomArray(rng, y.size), y.shape);
  const num = await numericGrad(() => dot(cpuData(op(x)), cpuData(R)), cpuData(x));
  const c = compareGrads(cpuData(analytic(R)), num);
  expect(c.relErr).toBeLessThan(1e-7);
  expect(c.norm).toBeGreaterThan(1e-3);
}

describe('MoE ops match finite differences', () => {
  const rng = new Rng(3);
  const S = 6, E = 4, C = 5;
  const logits = be.tensor(randomArray(rng, S * E), [S, E]);
  const probs = be.softmaxRows(logits);

  it('softmaxRows', async () => {
    await fd((x) => be.softmaxRows(x), logits, (R) => be.softmaxRowsBackward(be.softmaxRows(logits), R), 1);
  });
  it.each([1, 2])('gates top-%i', async (k) => {
    const sel = be.moeRoute(probs, k, S).sel;
    await fd((p) => be.moeGates(p, sel), probs, (R) => be.moeGatesBackward(probs, sel, R), 2);
  });
  it('aux loss: its gradient with respect to the probabilities (routing fixed)', async () => {
    const sel = be.moeRoute(probs, 1, S).sel;
    await fd((p) => be.moeAuxLoss(p, sel).loss, probs, (R) => {
      const d = be.moeAuxLoss(probs, sel).dProbs;
      be.scale(d, cpuData(R)[0]);
      return d;
    }, 3);
  });
  it.each([1, 2])('dispatch and combine, top-%i with drops', async (k) => {
    const cap = k; // under capacity: some choices dropped
    const r = be.moeRoute(probs, k, cap);
    expect((await ints(r.slot)).some((v) => v < 0)).toBe(true);
    const x = be.tensor(randomArray(rng, S * C), [S, C]);
    await fd((t) => be.moeDispatch(t, r.rowToken, k), x, (R) => be.moeDispatchBackward(R, r.slot), 4);
    const ye = be.tensor(randomArray(rng, E * cap * C), [E * cap, C]);
    const gates = be.moeGates(probs, r.sel);
    await fd((t) => be.moeCombine(t, r.slot, gates), ye, (R) => be.moeCombineBackward(R, ye, r.slot, gates, r.rowToken).dye, 5);
    await fd((t) => be.moeCombine(ye, r.slot, t), gates, (R) => be.moeCombineBackward(R, ye, r.slot, gates, r.rowToken).dGates, 6);
  });
  it('groupedMatmul equals one matmul per group, every form', async () => {
    const G = 3;
    for (const [transA, transB] of [[false, false], [false, true], [true, false], [true, true]]) {
      const a = be.tensor(randomArray(rng, G * 4 * 5), [G * (transA ? 5 : 4), transA ? 4 : 5]);
      const b = be.tensor(randomArray(rng, G * 5 * 2), [G * (transB ? 2 : 5), transB ? 5 : 2]);
      const out = await be.read(be.groupedMatmul(a, b, G, { transA, transB }));
      for (let g = 0; g < G; g++) {
        const part = (t: Tensor) => be.tensor(cpuData(t).slice((g * t.size) / G, ((g + 1) * t.size) / G), [t.shape[0] / G, t.shape[1]]);
        const want = await be.read(be.matmul(part(a), part(b), { transA, transB }));
        expect(Array.from(out.slice(g * 8, (g + 1) * 8))).toEqual(Array.from(want));
      }
    }
  });
});
