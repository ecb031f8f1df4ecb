/**
 * The mixture-of-experts kernels (shaders/moe.wgsl) against the float64 reference on the same float32 inputs:
 * the routing decisions and the load counts exactly (top-1 and top-2, ties, over capacity and dropless), every value op within the
 * float32 tolerance, the grouped matmul in all four forms and accumulating.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { CpuBackend } from '../nn/cpu-backend.ts';
import type { MoeRoute, Tensor } from '../nn/backend.ts';
import type { GpuBackend } from './gpu-backend.ts';
import { createTestBackend } from './testing/node-gpu.ts';
import { assertClose, makeRng, randomArray, testSeed } from './testing/compare.ts';

let gpu: GpuBackend;
const cpu = new CpuBackend();
const seed = testSeed();

beforeAll(async () => {
  gpu = await createTestBackend();
});
afterAll(() => gpu?.destroy());

function pair(data: number[], shape: number[]): [Tensor, Tensor] {
  return [gpu.tensor(data, shape), cpu.tensor(Array.from(Float32Array.from(data)), shape)];
}

async function check(g: Tensor, c: Tensor, what: string): Promise<void> {
  expect(g.shape, what).toEqual(c.shape);
  assertClose(await gpu.read(g), await cpu.read(c), what, seed);
}

async function same(g: MoeRoute, c: MoeRoute, what: string): Promise<void> {
  for (const key of ['sel', 'slot', 'rowToken', 'load'] as const) {
    expect(Array.from(await gpu.read(g[key])), `${what} ${key}`).toEqual(Array.from(await cpu.read(c[key])));
  }
}

// S tokens, E experts, k, capacity (S: dropless)
const CASES: [number, number, number, number][] = [
  [1, 1, 1, 1],
  [9, 4, 1, 2],
  [9, 4, 2, 3],
  [33, 5, 2, 33],
  [64, 8, 1, 10],
  [70, 3, 2, 20],
];

describe('MoE kernels equal the float64 reference', () => {
  test.each(CASES)('S=%i E=%i top-%i capacity %i: route, gates, aux, dispatch, combine and their backward', async (S, E, k, cap) => {
    const rng = makeRng(seed, `moe:${S}:${E}:${k}:${cap}`);
    const C = 5;
    const [gl, cl] = pair(randomArray(rng, S * E, 2), [S, E]);
    const gp = gpu.softmaxRows(gl), cp = cpu.softmaxRows(cl);
    await check(gp, cp, 'softmaxRows');
    const [gdp, cdp] = pair(randomArray(rng, S * E), [S, E]);
    await check(gpu.softmaxRowsBackward(gp, gdp), cpu.softmaxRowsBackward(cp, cdp), 'softmaxRowsBackward');
    // The decisions from the same float32 probabilities: some rows with ties (levels of 1/8), some without.
    const probs = Array.from({ length: S * E }, (_, i) => (Math.floor(i / E) % 2 === 0 ? (1 + Math.floor(rng.uniform(0, 1) * 4)) / 8 : rng.uniform(0, 1)));
    const [gP, cP] = pair(probs, [S, E]);
    const gr = gpu.moeRoute(gP, k, cap), cr = cpu.moeRoute(cP, k, cap);
    await same(gr, cr, 'route');
    await check(gpu.moeGates(gP, gr.sel), cpu.moeGates(cP, cr.sel), 'gates');
    const [gdg, cdg] = pair(randomArray(rng, S * k), [S, k]);
    await check(gpu.moeGatesBackward(gP, gr.sel, gdg), cpu.moeGatesBackward(cP, cr.sel, cdg), 'gatesBackward');
    const ga = gpu.moeAuxLoss(gP, gr.sel), ca = cpu.moeAuxLoss(cP, cr.sel);
    await check(ga.loss, ca.loss, 'aux loss');
    await check(ga.dProbs, ca.dProbs, 'aux dProbs');
    const [gx, cx] = pair(randomArray(rng, S * C), [S, C]);
    await check(gpu.moeDispatch(gx, gr.rowToken, k), cpu.moeDispatch(cx, cr.rowToken, k), 'dispatch');
    const [gdxe, cdxe] = pair(randomArray(rng, E * cap * C), [E * cap, C]);
    await check(gpu.moeDispatchBackward(gdxe, gr.slot), cpu.moeDispatchBackward(cdxe, cr.slot), 'dispatchBackward');
    const [gye, cye] = pair(randomArray(rng, E * cap * C), [E * cap, C]);
    const gg = gpu.moeGates(gP, gr.sel), cg = cpu.moeGates(cP, cr.sel);
    await check(gpu.moeCombine(gye, gr.slot, gg), cpu.moeCombine(cye, cr.slot, cg), 'combine');
    const [gdy, cdy] = pair(randomArray(rng, S * C), [S, C]);
    const gb = gpu.moeCombineBackward(gdy, gye, gr.slot, gg, gr.rowToken), cb = cpu.moeCombineBackward(cdy, cye, cr.slot, cg, cr.rowToken);
    await check(gb.dye, cb.dye, 'combineBackward dye');
    await check(gb.dGates, cb.dGates, 'combineBackward dGates');
  });

  test('routing with drops and ties: tokens past capacity get −1, the same on both', async () => {
    const S = 12, E = 3;
    const probs = Array.from({ length: S * E }, () => 1 / 3); // every row a three-way tie: all pick expert 0, then 1
    const [gP, cP] = pair(probs, [S, E]);
    const gr = gpu.moeRoute(gP, 2, 4), cr = cpu.moeRoute(cP, 2, 4);
    await same(gr, cr, 'all ties');
    const sel = Array.from(await gpu.read(gr.sel));
    expect(sel.filter((_, i) => i % 2 === 0).every((e) => e === 0)).toBe(true);
    expect(Array.from(await gpu.read(gr.slot)).filter((v) => v < 0).length).toBe(16);
    // Expert 0: 12 firsts, 8 dropped; expert 1: 12 seconds, 8 dropped; expert 2 nothing.
    expect(Array.from(await gpu.read(gr.load))).toEqual([12, 0, 8, 0, 12, 8, 0, 0, 0]);
  });

  test.each([
    [false, false],
    [false, true],
    [true, false],
    [true, true],
  ])('groupedMatmul transA=%s transB=%s, and accumulating', async (transA, transB) => {
    const rng = makeRng(seed, `grouped:${transA}:${transB}`);
    const G = 3, M = 7, K = 9, N = 5;
    const [ga, ca] = pair(randomArray(rng, G * M * K), transA ? [G * K, M] : [G * M, K]);
    const [gb, cb] = pair(randomArray(rng, G * K * N), transB ? [G * N, K] : [G * K, N]);
    const go = gpu.groupedMatmul(ga, gb, G, { transA, transB }), co = cpu.groupedMatmul(ca, cb, G, { transA, transB });
    await check(go, co, 'groupedMatmul');
    gpu.groupedMatmulAcc(go, ga, gb, G, { transA, transB });
    cpu.groupedMatmulAcc(co, ca, cb, G, { transA, transB });
    await check(go, co, 'groupedMatmulAcc');
  });
});
