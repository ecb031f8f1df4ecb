/**
 * Every matmul variant, every form (A·B, A·Bᵀ, Aᵀ·B, Aᵀ·Bᵀ), plain and
 * accumulating, at awkward sizes, against the float64 CPU reference.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { CpuBackend } from '../nn/cpu-backend.ts';
import type { MatmulOptions } from '../nn/backend.ts';
import { MATMUL_FORMS, type GpuBackend, type MatmulForm } from './gpu-backend.ts';
import { MATMUL_VARIANTS } from './kernels.ts';
import { autotuneDefaults, defaultCandidates } from './autotune.ts';
import { createTestBackend } from './testing/node-gpu.ts';
import { assertClose, makeRng, randomArray, seedNote, testSeed } from './testing/compare.ts';

let gpu: GpuBackend;
const cpu = new CpuBackend();
const seed = testSeed();

beforeAll(async () => {
  gpu = await createTestBackend();
});
afterAll(() => gpu?.destroy());

function optsOf(form: MatmulForm): MatmulOptions {
  return { transA: form[0] === 'T', transB: form[1] === 'T' };
}

/** Checks variant `variant` (null: the backend's current choice) on one problem, plain and accumulating. */
async function checkMatmul(variant: string | null, form: MatmulForm, M: number, N: number, K: number, acc: boolean): Promise<void> {
  const rng = makeRng(seed, `${variant}:${form}:${M}x${N}x${K}:${acc}`);
  const o = optsOf(form);
  const aShape = o.transA ? [K, M] : [M, K];
  const bShape = o.transB ? [N, K] : [K, N];
  const a = randomArray(rng, M * K);
  const b = randomArray(rng, K * N);
  const what = `matmul ${variant ?? 'default'} ${form} M=${M} N=${N} K=${K}${acc ? ' acc' : ''}`;
  const ga = gpu.tensor(a, aShape);
  const gb = gpu.tensor(b, bShape);
  const ca = cpu.tensor(a, aShape);
  const cb = cpu.tensor(b, bShape);
  let got: ArrayLike<number>;
  let ref: ArrayLike<number>;
  if (acc) {
    const c0 = randomArray(rng, M * N);
    const gc = gpu.tensor(c0, [M, N]);
    const cc = cpu.tensor(c0, [M, N]);
    gpu.matmulAccWith(variant, gc, ga, gb, o);
    gpu.matmulAccWith(variant, gc, ga, gb, o); // twice: accumulation really accumulates
    cpu.matmulAcc(cc, ca, cb, o);
    cpu.matmulAcc(cc, ca, cb, o);
    got = await gpu.read(gc);
    ref = await cpu.read(cc);
    gpu.dispose(gc);
  } else {
    const gc = gpu.matmulWith(variant, ga, gb, o);
    expect(gc.shape).toEqual([M, N]);
    got = await gpu.read(gc);
    ref = await cpu.read(cpu.matmul(ca, cb, o));
    gpu.dispose(gc);
  }
  gpu.dispose(ga);
  gpu.dispose(gb);
  assertClose(got, ref, what, seed);
}

const SMALL: [number, number, number][] = [
  [1, 1, 1],
  [7, 33, 129],
  [33, 7, 5],
  [129, 65, 33],
  [2, 3, 1],
  // Rows of a multiple of 4 with K odd (TN: A [17, 8] is ragged by its rows only).
  [8, 12, 17],
];

/** Bigger than two blocks of every tiled and subgroup variant along M and N, K not a multiple of any k-tile. */
const RAGGED_BLOCKS: [number, number, number] = [150, 270, 45];
/**
 * Every dimension a multiple of 4: the vec4 kinds' aligned loads (in the shapes above both
 * operands are ragged: checked loads). An operand's loads depend only on its own layout
 * (TRANS_A, TRANS_B), so A·B and Aᵀ·Bᵀ cover both layouts of both (each such pipeline
 * takes seconds to compile on SwiftShader).
 */
const ALIGNED: [number, number, number] = [12, 20, 8];
const ALIGNED_BLOCKS: [number, number, number] = [148, 268, 44];
const ALIGNED_FORMS: readonly MatmulForm[] = ['NN', 'TT'];

describe('every matmul variant, every form', () => {
  for (const v of MATMUL_VARIANTS) {
    test(`${v.name}: ${v.description}`, async () => {
      // This machine's SwiftShader has subgroups of one size (ENVIRONMENT.md), so every variant runs here.
      expect(gpu.subgroupSize, 'the subgroup variants need a device with subgroups').toBeGreaterThanOrEqual(4);
      for (const form of MATMUL_FORMS) {
        for (const [M, N, K] of SMALL) await checkMatmul(v.name, form, M, N, K, false);
        await checkMatmul(v.name, form, 17, 9, 31, true);
        const blocks = v.kind === 'tiled' || v.kind === 'subgroup';
        if (blocks) await checkMatmul(v.name, form, ...RAGGED_BLOCKS, form === 'TN');
        if (ALIGNED_FORMS.includes(form)) {
          await checkMatmul(v.name, form, ...ALIGNED, form === 'TT');
          if (blocks) await checkMatmul(v.name, form, ...ALIGNED_BLOCKS, form === 'NN');
        }
      }
    });
  }
});

describe('subgroup variants when the workgroup is not one full subgroup', () => {
  test('laid out for twice the device subgroup size, they take their unshared path and still compute A·B', async () => {
    // The kernels share the A block only when the workgroup is exactly one full subgroup of SG lanes;
    // with SG twice the real size each workgroup holds two subgroups, so every lane loads A itself.
    const other = await createTestBackend({ subgroupSize: 2 * gpu.subgroupSize });
    const saved = gpu;
    gpu = other;
    try {
      for (const name of ['sg8x4', 'sg8x8']) {
        for (const form of MATMUL_FORMS) {
          await checkMatmul(name, form, 33, 7, 5, false);
          await checkMatmul(name, form, ...RAGGED_BLOCKS, form === 'NT');
        }
      }
    } finally {
      gpu = saved;
      other.destroy();
    }
  });
});

describe('ragged operands are read in place', () => {
  test('one dispatch for any shape, with every vec4 kind; ragged K (1, 3, 17, 33, 65) by ragged M and N', async () => {
    const vec4 = MATMUL_VARIANTS.filter((v) => v.kind === 'reg' || v.kind === 'tiled' || v.kind === 'subgroup');
    for (const v of vec4) {
      const rng = makeRng(seed, `dispatch:${v.name}`);
      for (const form of MATMUL_FORMS) {
        const o = optsOf(form);
        const [M, N, K] = [3, 17, 33];
        const a = gpu.tensor(randomArray(rng, M * K), o.transA ? [K, M] : [M, K]);
        const b = gpu.tensor(randomArray(rng, K * N), o.transB ? [N, K] : [K, N]);
        const before = gpu.stats().dispatches;
        const c = gpu.matmulWith(v.name, a, b, o);
        expect(gpu.stats().dispatches - before, `${v.name} ${form} ${M}x${N}x${K}: dispatches`).toBe(1);
        for (const t of [a, b, c]) gpu.dispose(t);
      }
    }
    for (const form of MATMUL_FORMS) {
      for (const K of [1, 3, 17, 33, 65]) await checkMatmul(null, form, 66 - K, 1 + ((K * 7) % 66), K, K === 17);
    }
  });
});

describe('bigger problems', () => {
  test('64x256x256 and 129x257x191, all forms, default variant and shared64, plain and acc', async () => {
    for (const form of MATMUL_FORMS) {
      await checkMatmul(null, form, 64, 256, 256, form === 'NN');
      await checkMatmul(null, form, 129, 257, 191, form !== 'NN');
    }
    await checkMatmul('shared64', 'NN', 64, 256, 256, false);
    await checkMatmul('shared64', 'TN', 129, 257, 191, true);
  });
});

describe('autotune', () => {
  test('default candidates: the workgroup-memory kinds only on hardware, the subgroup kinds only with subgroups of one size', () => {
    const names = (isSoftware: boolean, subgroupSize: number) => defaultCandidates({ isSoftware, subgroupSize }).map((v) => v.name);
    const reg = ['reg4x4', 'reg8x4', 'reg4x8', 'reg8x8'];
    const tiled = ['tile64', 'tile128x64', 'tile128'];
    const sg = ['sg8x4', 'sg8x8'];
    const shared = ['shared64', 'shared32'];
    expect(names(true, 4)).toEqual([...reg, ...sg]);
    expect(names(true, 0)).toEqual(reg);
    expect(names(false, 32)).toEqual([...reg, ...tiled, ...sg, ...shared]);
    expect(names(false, 0)).toEqual([...reg, ...tiled, ...shared]);
    // Sizes and forms: hardware also times a big size (where workgroup memory pays) and tunes the forms apart.
    expect(autotuneDefaults({ isSoftware: true })).toEqual({ sizes: [[256, 256, 256]], forms: ['NN'] });
    expect(autotuneDefaults({ isSoftware: false })).toEqual({ sizes: [[256, 256, 256], [1024, 1024, 1024]], forms: ['NN', 'NT', 'TN'] });
  });

  test('times the variants, keeps one per form, and results stay correct', async () => {
    const report = await gpu.autotune({ sizes: [[64, 64, 64]], repeats: 1, candidates: ['reg4x4', 'reg4x8', 'shared32'], forms: ['NN', 'NT', 'TN'] });
    expect(report.forms.map((f) => f.form)).toEqual(['NN', 'NT', 'TN']);
    expect(report.totalMs).toBeGreaterThanOrEqual(report.compileMs);
    for (const f of report.forms) {
      expect(['reg4x4', 'reg4x8', 'shared32']).toContain(f.winner);
      expect(f.timings).toHaveLength(3);
      for (const t of f.timings) expect(t.ms[0], seedNote(seed)).toBeGreaterThanOrEqual(0);
      expect(gpu.matmulChoice()[f.form]).toBe(f.winner);
    }
    expect(gpu.matmulChoice().TT).toBe(gpu.matmulChoice().NN);
    for (const form of MATMUL_FORMS) await checkMatmul(null, form, 33, 65, 17, form === 'TN');
    // Default: NN is tuned and every form takes its winner.
    const r2 = await gpu.autotune({ sizes: [[32, 48, 40]], repeats: 1, candidates: ['reg4x4', 'reg8x8'] });
    expect(r2.forms.map((f) => f.form)).toEqual(['NN']);
    const ch = gpu.matmulChoice();
    expect(new Set(Object.values(ch))).toEqual(new Set([r2.forms[0].winner]));
    gpu.setMatmulVariant('reg4x4');
    expect(gpu.matmulChoice()).toEqual({ NN: 'reg4x4', NT: 'reg4x4', TN: 'reg4x4', TT: 'reg4x4' });
  });
});

describe('aliasing', () => {
  test('matmulAcc with out also an operand reads the operand as it was', async () => {
    const rng = makeRng(seed, 'alias');
    const n = 9;
    const c0 = randomArray(rng, n * n);
    const b = randomArray(rng, n * n);
    const gc = gpu.tensor(c0, [n, n]);
    const gb = gpu.tensor(b, [n, n]);
    gpu.matmulAcc(gc, gc, gb);
    const cc = cpu.tensor(c0, [n, n]);
    cpu.matmulAcc(cc, cpu.clone(cc), cpu.tensor(b, [n, n]));
    assertClose(await gpu.read(gc), await cpu.read(cc), 'matmulAcc(out, out, b)', seed);
    gpu.dispose(gc);
    gpu.dispose(gb);
  });
});
