/**
 * The sums over rows (reduce-ops.ts) against the float64 CPU reference, at
 * every kind of cut of the rows: one part (one dispatch), the cut a GPU gets
 * (√rows rows a part), the software adapter's, parts of 7 rows (the last one
 * short) and of 1 row, on fresh random inputs of ragged shapes.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { CpuBackend } from '../nn/cpu-backend.ts';
import type { GpuBackend } from './gpu-backend.ts';
import { colSumAcc, layerNormWeightAcc, rowChunk } from './reduce-ops.ts';
import { createTestBackend } from './testing/node-gpu.ts';
import { assertClose, makeRng, randomArray, testSeed } from './testing/compare.ts';

let gpu: GpuBackend;
const cpu = new CpuBackend();
const seed = testSeed();

beforeAll(async () => {
  gpu = await createTestBackend();
});
afterAll(() => gpu?.destroy());

const SHAPES: [number, number][] = [
  [1, 1],
  [3, 17],
  [17, 3],
  [33, 65],
  [65, 33],
  [1000, 7],
];

/** The cuts tried at `rows`: name and rows per part. */
function cuts(rows: number): [string, number][] {
  return [
    ['one part', rows],
    ['GPU cut', rowChunk(rows, false)],
    ['software cut', rowChunk(rows, true)],
    ['parts of 7', 7],
    ['parts of 1', 1],
  ];
}

describe('rowChunk', () => {
  test('a GPU gets about √rows rows a part (at least 8), a software adapter one part up to 2048 rows, then parts of ≥ 1024 rows, at most 8; never more than 65535 parts', () => {
    expect(rowChunk(1, false)).toBe(8);
    expect(rowChunk(1024, false)).toBe(32);
    expect(rowChunk(1000, false)).toBe(32);
    expect(rowChunk(512, true)).toBe(512);
    expect(rowChunk(2048, true)).toBe(2048);
    expect(rowChunk(2049, true)).toBe(1024);
    expect(rowChunk(4096, true)).toBe(1024);
    expect(Math.ceil(5000 / rowChunk(5000, true))).toBe(5);
    expect(Math.ceil(1e6 / rowChunk(1e6, true))).toBe(8);
    for (const rows of [1, 7, 65_535, 65_536, 1e7, 5e9]) {
      for (const sw of [false, true]) {
        const c = rowChunk(rows, sw);
        expect(Number.isInteger(c) && c >= 1, `rows ${rows}`).toBe(true);
        expect(Math.ceil(rows / c), `parts of ${rows} rows`).toBeLessThanOrEqual(65_535);
      }
    }
  });
});

describe('sums over rows, every cut', () => {
  test('colSumAcc: out += column sums, twice onto a random start', async () => {
    for (const [n, d] of SHAPES) {
      const rng = makeRng(seed, `colsum:${n}x${d}`);
      const dy = randomArray(rng, n * d);
      const start = randomArray(rng, d);
      const cdy = cpu.tensor(dy, [n, d]);
      const cout = cpu.tensor(start, [d]);
      cpu.colSumAcc(cout, cdy);
      cpu.colSumAcc(cout, cdy);
      const ref = await cpu.read(cout);
      const gdy = gpu.tensor(dy, [n, d]);
      for (const [name, chunk] of cuts(n)) {
        const gout = gpu.tensor(start, [d]);
        const before = gpu.stats().dispatches;
        colSumAcc(gpu, gout, gdy, n, d, chunk);
        const parts = Math.ceil(n / Math.min(chunk, n));
        expect(gpu.stats().dispatches - before, `${name}: dispatches for ${parts} part(s)`).toBe(parts === 1 ? 1 : 2);
        colSumAcc(gpu, gout, gdy, n, d, chunk);
        assertClose(await gpu.read(gout), ref, `colSumAcc [${n}, ${d}], ${name} (${chunk} rows a part)`, seed);
        gpu.dispose(gout);
      }
      gpu.dispose(gdy);
    }
  });

  test('layerNormWeightAcc: dgamma += Σ dy·x̂, dbeta += Σ dy, twice onto a random start', async () => {
    for (const [n, d] of SHAPES) {
      const rng = makeRng(seed, `lnw:${n}x${d}`);
      const x = randomArray(rng, n * d, 3).map((v, i) => v + (i % 3));
      const dy = randomArray(rng, n * d);
      const mean = randomArray(rng, n);
      const rstd = randomArray(rng, n).map((v) => 1.5 + v);
      const start = randomArray(rng, 2 * d);
      const c = [cpu.tensor(x, [n, d]), cpu.tensor(mean, [n]), cpu.tensor(rstd, [n]), cpu.tensor(dy, [n, d])] as const;
      const cg = cpu.tensor(start.slice(0, d), [d]);
      const cb = cpu.tensor(start.slice(d), [d]);
      cpu.layerNormBackwardWeightAcc(cg, cb, ...c);
      cpu.layerNormBackwardWeightAcc(cg, cb, ...c);
      const refG = await cpu.read(cg);
      const refB = await cpu.read(cb);
      const g = [gpu.tensor(x, [n, d]), gpu.tensor(mean, [n]), gpu.tensor(rstd, [n]), gpu.tensor(dy, [n, d])] as const;
      for (const [name, chunk] of cuts(n)) {
        const gg = gpu.tensor(start.slice(0, d), [d]);
        const gb = gpu.tensor(start.slice(d), [d]);
        layerNormWeightAcc(gpu, gg, gb, ...g, n, d, chunk);
        layerNormWeightAcc(gpu, gg, gb, ...g, n, d, chunk);
        assertClose(await gpu.read(gg), refG, `dgamma [${n}, ${d}], ${name} (${chunk} rows a part)`, seed);
        assertClose(await gpu.read(gb), refB, `dbeta [${n}, ${d}], ${name} (${chunk} rows a part)`, seed);
        gpu.dispose(gg);
        gpu.dispose(gb);
      }
      for (const t of g) gpu.dispose(t);
    }
  });
});
