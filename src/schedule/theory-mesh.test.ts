/**
 * The dp × pp closed form (theory.ts meshClosedForm) against the simulator on
 * balanced costs: exact in the pipeline part (integers), to float rounding in
 * the all-reduce part, over grids of p, m, v and dp ∈ {1, 2, 3, 4}, and on
 * random schedules and α–β costs.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { generateSchedule, generateWindow } from './registry.ts';
import { simulate } from './simulate.ts';
import { paramsArb } from './test-support.ts';
import { closedForm, meshClosedForm, streamMeshClosedForm, type MeshCosts } from './theory.ts';

function check(name: string, p: number, m: number, v: number, mc: MeshCosts): void {
  const cf = meshClosedForm(name, p, m, v, mc);
  if (!cf) throw new Error(`no closed form for ${name} p=${p} m=${m} v=${v} overlap=${mc.overlap}`);
  const r = simulate(generateSchedule(name, p, m, v), { dp: mc.dp, gradBytes: mc.gradBytes, allReduce: { latency: mc.latency, bandwidth: mc.bandwidth, overlap: mc.overlap } });
  const where = `${name} p=${p} m=${m} v=${v} dp=${mc.dp} overlap=${mc.overlap}`;
  expect(r.dp?.computeMakespan, where).toBe(cf.pipeline.makespan);
  expect(r.makespan, where).toBeCloseTo(cf.step, 9);
  expect(r.dp?.exposedAllReduce ?? NaN, where).toBeCloseTo(cf.exposed, 9);
  expect(r.dp?.allReduceShare ?? NaN, where).toBeCloseTo(cf.allReduceShare, 12);
  expect(r.bubble, where).toBeCloseTo(cf.pipeline.bubble, 12);
}

const costsAt = (dp: number, overlap: boolean): MeshCosts => ({ dp, gradBytes: 64, latency: 0.5, bandwidth: 16, overlap });

describe('dp × pp step = closed form (m micro-batches per replica)', () => {
  it('gpipe, 1f1b, zb-h1: T + A with or without overlap, p = 1..8, m = 1..16, dp = 1..4', () => {
    for (const name of ['gpipe', '1f1b', 'zb-h1']) {
      for (let p = 1; p <= 8; p++) for (let m = 1; m <= 16; m++) for (let dp = 1; dp <= 4; dp++) for (const overlap of [true, false]) check(name, p, m, 1, costsAt(dp, overlap));
    }
  });

  it('interleaved-1f1b, v = 2..4: rank 0’s link with overlap, T + v·A without (and T + A when A ≤ 2p)', () => {
    for (let p = 1; p <= 6; p++) {
      for (let m = p; m <= 4 * p; m += p) {
        for (let v = 2; v <= 4; v++) for (let dp = 1; dp <= 4; dp++) for (const overlap of [true, false]) check('interleaved-1f1b', p, m, v, costsAt(dp, overlap));
      }
    }
    // A small all-reduce hides behind the cool-down; a big one does not.
    expect(meshClosedForm('interleaved-1f1b', 4, 8, 2, { dp: 2, gradBytes: 2, latency: 1, bandwidth: 1, overlap: true })?.exposed).toBe(4);
    const big = meshClosedForm('interleaved-1f1b', 4, 8, 2, { dp: 2, gradBytes: 20, latency: 1, bandwidth: 1, overlap: true });
    // A = 2·(1 + 10) = 22 > 2p = 8: chunk 1 ready at T − 8, ends at T + 14; chunk 0 then ends at T + 36.
    expect(big?.exposed).toBe(36);
  });

  it('zb-v, dualpipe-v, looped-bfs, hanayo without overlap: T + v·A; with overlap no closed form (the simulator lies between T + A and T + v·A)', () => {
    for (const [name, v] of [
      ['zb-v', 2],
      ['dualpipe-v', 2],
      ['looped-bfs', 2],
      ['looped-bfs', 3],
      ['hanayo', 2],
      ['hanayo', 4],
    ] as const) {
      for (let p = 1; p <= 6; p++) {
        for (let m = 1; m <= 12; m++) {
          if (name === 'looped-bfs' && m < p) continue;
          for (const dp of [2, 4]) {
            check(name, p, m, v, costsAt(dp, false));
            expect(meshClosedForm(name, p, m, v, costsAt(dp, true))).toBeNull();
            const T = closedForm(name, p, m, v)?.makespan ?? NaN;
            const A = (meshClosedForm(name, p, m, v, costsAt(dp, false))?.allReduce ?? NaN) as number;
            const r = simulate(generateSchedule(name, p, m, v), { dp, gradBytes: 64, allReduce: { latency: 0.5, bandwidth: 16 } });
            expect(r.makespan).toBeGreaterThanOrEqual(T + A - 1e-9);
            expect(r.makespan).toBeLessThanOrEqual(T + v * A + 1e-9);
          }
        }
      }
    }
  });

  it('random schedules, dp ∈ {1, 2, 3, 4}, random α and β: the simulator equals the closed form wherever one exists', () => {
    fc.assert(
      fc.property(
        paramsArb(8, 24),
        fc.integer({ min: 1, max: 4 }),
        fc.integer({ min: 0, max: 4096 }),
        fc.integer({ min: 0, max: 16 }).map((k) => k / 8),
        fc.integer({ min: 1, max: 64 }),
        fc.boolean(),
        ({ name, p, m, v }, dp, gradBytes, latency, bandwidth, overlap) => {
          const mc = { dp, gradBytes, latency, bandwidth, overlap };
          if (meshClosedForm(name, p, m, v, mc)) check(name, p, m, v, mc);
        },
      ),
      { numRuns: 300, seed: 19 },
    );
  });
});

describe('PipeDream-2BW\'s stream on replicas (theory.ts streamMeshClosedForm): 3(S·m + p − 1) + S·A', () => {
  it('worked by hand: one rank, m 2, 2 steps, A = 4 (20 = 12 + 8); four ranks, m 4, 3 steps, A = 8 (69 = 45 + 24)', () => {
    const one = streamMeshClosedForm(1, 2, 2, { dp: 2, gradBytes: 4, latency: 0, bandwidth: 1, overlap: true });
    expect(one).toMatchObject({ allReduce: 4, blocks: 2, step: 20, exposed: 4 });
    expect(one.pipeline.makespan).toBe(16);
    expect(one.pipeline.bubble).toBeCloseTo(1 - 12 / 16, 12);
    expect(streamMeshClosedForm(4, 4, 3, { dp: 2, gradBytes: 8, latency: 0, bandwidth: 1, overlap: true }).step).toBe(69);
  });

  it('equals the simulator over p, m ≥ p, steps, dp, α and β: the stream, its compute, the exposed all-reduce, the bubble and each stage\'s all-reduces', () => {
    for (const p of [1, 2, 3, 4, 6]) for (const m of [p, p + 1, 2 * p + 3]) for (const S of [1, 2, 5]) for (const dp of [2, 3, 4]) for (const [latency, bandwidth, gradBytes] of [[0, 1, 6], [0.3, 2, 12], [2, 10, 0.5], [0, Infinity, 100]]) {
      const mc: MeshCosts = { dp, gradBytes, latency, bandwidth, overlap: true };
      const cf = streamMeshClosedForm(p, m, S, mc);
      const r = simulate(generateWindow('pipedream-2bw', p, m, S, 1), { dp, gradBytes, allReduce: { latency, bandwidth, every: m } });
      const where = `p=${p} m=${m} S=${S} dp=${dp} α=${latency} β=${bandwidth} bytes=${gradBytes}`;
      expect(r.makespan, where).toBeCloseTo(cf.step, 9);
      expect(r.dp?.computeMakespan ?? NaN, where).toBeCloseTo(cf.pipeline.makespan, 9);
      expect(r.dp?.exposedAllReduce ?? NaN, where).toBeCloseTo(cf.exposed, 9);
      expect(r.bubble, where).toBeCloseTo(cf.pipeline.bubble, 9);
      for (const t of r.dp?.allReduceTime ?? [NaN]) expect(t, where).toBeCloseTo(cf.blocks * cf.allReduce, 9);
    }
  });
});
