/**
 * The exported program's mixture-of-experts MLP (src/export/torch/moe.py) against the page's float64 reference
 * (src/nn/moe/moe-reference.ts through layers/moe-mlp.ts on the CPU backend), both in float64, on the same inputs and
 * weights (testing/moe_probe.py runs the Python side in one process):
 *
 * - the route: each token's k experts (ties to the lower index, the second choice the best of the others), the
 *   slots (every first choice of the group in token order, then the second choices behind them; past the capacity
 *   dropped) and the dropped choices per expert, equal to routeRef's, on probabilities with exact ties and on
 *   random ones;
 * - the MLP: its output and the gradients of Σ out·R + w·aux with respect to u, router, c_fc and c_proj, the weighted
 *   aux and the dropped count, within 1e-12 of the reference: Switch top-1 (not renormalised) and GShard top-2
 *   (g1/(g1+g2)) with drops and dropless, and a router of zeros (every probability tied: every token's first choice
 *   expert 0, its second expert 1, the capacity dropping most).
 *
 * Whole runs under torchrun (losses, aux, drops, weights against the page's and the float64 loop's):
 * ./torch-export.test.ts and ./torch-export-dp.test.ts. Needs Debian's python3-torch.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { Rng } from '../util/rng.ts';
import type { Tensor } from '../nn/backend.ts';
import { MoeMlp } from '../nn/layers/moe-mlp.ts';
import { LOAD_COLS, LOAD_DROPPED, routeRef } from '../nn/moe/moe-reference.ts';
import { cpuData, randomArray } from '../nn/testing/gradcheck.ts';
import { be, randomTensor } from '../nn/testing/layer-check.ts';
import { PYTHON } from './testing/torchrun.ts';

const PROGRAM_DIR = fileURLToPath(new URL('./torch/', import.meta.url));
const PROBE = fileURLToPath(new URL('./testing/moe_probe.py', import.meta.url));

type Rows = number[][];
const rows = (a: ArrayLike<number>, cols: number): Rows => Array.from({ length: a.length / cols }, (_, r) => Array.from(a).slice(r * cols, (r + 1) * cols));
const softmax = (x: number[]) => {
  const m = Math.max(...x);
  const e = x.map((v) => Math.exp(v - m));
  const s = e.reduce((a, b) => a + b, 0);
  return e.map((v) => v / s);
};

interface RouteCase { case: string; route: Rows; k: number; cap: number }
const ROUTES: RouteCase[] = [
  {
    case: 'exact ties: the lower expert first, and among the others for the second choice',
    route: [[0.25, 0.25, 0.25, 0.25], [0.1, 0.4, 0.4, 0.1], [0.4, 0.1, 0.1, 0.4], [0.3, 0.2, 0.3, 0.2], [0.1, 0.2, 0.3, 0.4]],
    k: 2, cap: 5,
  },
  // Token-major positions would drop token 2's first choice; GShard's queue drops token 1's and token 2's second choices.
  { case: 'second choices queue behind the group’s first choices', route: [[0.6, 0.4], [0.3, 0.7], [0.8, 0.2]], k: 2, cap: 2 },
  { case: 'top-1 over capacity, in token order', route: [[0.9, 0.1], [0.2, 0.8], [0.7, 0.3], [0.6, 0.4], [0.5, 0.5]], k: 1, cap: 2 },
  ...[[1, 5], [2, 9], [2, 3]].map(([k, cap], i) => {
    const rng = new Rng(70 + i);
    return { case: `random probabilities, 24 tokens, 4 experts, top-${k}, capacity ${cap}`, route: Array.from({ length: 24 }, () => softmax(randomArray(rng, 4, 2))), k, cap };
  }),
];

interface MlpCase { case: string; k: number; capacityFactor: number; auxScale: number; zeroRouter?: boolean }
const MLPS: MlpCase[] = [
  { case: 'Switch top-1, capacity factor 1 (drops)', k: 1, capacityFactor: 1, auxScale: 0.7 },
  { case: 'Switch top-1, dropless', k: 1, capacityFactor: 0, auxScale: 0.3 },
  { case: 'GShard top-2, capacity factor 1 (first and second choices dropped)', k: 2, capacityFactor: 1, auxScale: 0.7 },
  { case: 'GShard top-2, dropless', k: 2, capacityFactor: 0, auxScale: 0.5 },
  { case: 'GShard top-2, a router of zeros (every probability tied), capacity factor 1.25', k: 2, capacityFactor: 1.25, auxScale: 0.2, zeroRouter: true },
];
const S = 12, C = 3, E = 4;

/** The reference's side of an MLP case, and the inputs the probe gets. */
async function referenceMlp(c: MlpCase, i: number) {
  const rng = new Rng(90 + i);
  const moe = new MoeMlp(be, { prefix: 'h.mlp', dim: C, experts: E, topK: c.k, capacityFactor: c.capacityFactor, init: { kind: 'normal', std: 0.5 }, projInit: { kind: 'normal', std: 0.5 } }, 11 + i);
  if (c.zeroRouter) be.fill(moe.router.value, 0);
  const u = randomTensor(rng, [S, C], 1.5);
  const R = be.tensor(randomArray(rng, S * C), [S, C]);
  const input = { case: c.case, k: c.k, capacityFactor: c.capacityFactor, auxScale: c.auxScale, u: rows(cpuData(u), C), dOut: rows(cpuData(R), C), router: rows(cpuData(moe.router.value), C), fc: rows(cpuData(moe.fc.value), C), proj: rows(cpuData(moe.proj.value), 4 * C) };
  const f = await moe.forward(u, true, true);
  const out = Array.from(cpuData(f.out));
  const load = cpuData(f.load!.counts);
  const dropped = Array.from({ length: E }, (_, e) => load[e * LOAD_COLS + LOAD_DROPPED]).reduce((a, b) => a + b, 0);
  const aux = f.aux as { loss: Tensor; dProbs: Tensor };
  const auxValue = c.auxScale * cpuData(aux.loss)[0];
  const du = Array.from(cpuData(await moe.backwardInput(f.saved, R, { dProbs: aux.dProbs, scale: c.auxScale })));
  for (const p of moe.params) be.fill(p.grad, 0);
  moe.backwardWeight(f.saved);
  const [router, fc, proj] = moe.params.map((p) => Array.from(cpuData(p.grad)));
  return { input, expected: { out, du, router, fc, proj, aux: auxValue, dropped } };
}

/** max |a − b| / max |b| (b not all zero). */
function relDiff(a: readonly number[], b: readonly number[]): number {
  if (a.length !== b.length) return Infinity;
  const scale = Math.max(...b.map(Math.abs));
  return Math.max(...a.map((x, i) => Math.abs(x - b[i]))) / (scale > 0 ? scale : 1);
}

const MLP_REFS = await Promise.all(MLPS.map(referenceMlp));

describe('moe.py equals the float64 reference of the page’s mixture of experts', () => {
  const mlps = MLP_REFS;
  const file = join(mkdtempSync(join(tmpdir(), 'pipelab-moe-')), 'cases.json');
  writeFileSync(file, JSON.stringify([...ROUTES, ...mlps.map((m) => m.input)]));
  const r = spawnSync(PYTHON, [PROBE, file], { env: { ...process.env, PYTHONPATH: PROGRAM_DIR }, encoding: 'utf8', timeout: 60_000 });
  const got = (r.stdout ?? '').split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Record<string, unknown>);

  it('runs every case', () => {
    expect(r.status, `${r.stdout}${r.stderr}`).toBe(0);
    expect(got.map((g) => g.case)).toEqual([...ROUTES.map((c) => c.case), ...MLPS.map((c) => c.case)]);
  });

  ROUTES.forEach((c, i) => {
    it(`route: ${c.case}`, () => {
      const ref = routeRef(c.route.flat(), c.route.length, c.route[0].length, c.k, c.cap);
      const g = got[i] as { sel: number[]; slot: number[]; dropped: number[] };
      expect(g.sel).toEqual(Array.from(ref.sel));
      expect(g.slot).toEqual(Array.from(ref.slot));
      expect(g.dropped).toEqual(Array.from({ length: c.route[0].length }, (_, e) => ref.load[e * LOAD_COLS + LOAD_DROPPED]));
    });
  });

  it('route: the cases hold ties, drops of first and of second choices, and none', () => {
    const refs = ROUTES.map((c) => routeRef(c.route.flat(), c.route.length, c.route[0].length, c.k, c.cap));
    expect(Array.from(refs[0].sel.slice(0, 4))).toEqual([0, 1, 1, 2]); // [0.25 × 4] → 0 then 1; [.1 .4 .4 .1] → 1 then 2
    expect(Array.from(refs[1].slot)).toEqual([0, 3, 2, -1, 1, -1]); // token 1's second choice (expert 0) and token 2's (expert 1) dropped
    expect(refs.some((r) => r.slot.every((v) => v >= 0))).toBe(true);
  });

  MLPS.forEach((c, i) => {
    it(`MLP: ${c.case}`, () => {
      const { expected } = mlps[i];
      const g = got[ROUTES.length + i] as typeof expected;
      for (const key of ['out', 'du', 'router', 'fc', 'proj'] as const) expect(relDiff(g[key], expected[key]), key).toBeLessThan(1e-12);
      expect(Math.abs(g.aux - expected.aux) / expected.aux).toBeLessThan(1e-12);
      expect(g.dropped).toBe(expected.dropped);
      if (c.capacityFactor > 0) expect(expected.dropped).toBeGreaterThan(0);
      else expect(expected.dropped).toBe(0);
      // The router's gradient is no zero vector: the gates' and the aux's gradients reached it.
      expect(Math.max(...expected.router.map(Math.abs))).toBeGreaterThan(1e-3);
    });
  });
});
