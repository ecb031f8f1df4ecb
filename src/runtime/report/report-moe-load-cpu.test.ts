/**
 * The run report's MoE load (report-moe-load.ts) on the float64 CPU host: the tokens each expert got from each
 * micro-batch, and those dropped, as the pipeline's workers counted them, equal a recount from one device's routing
 * decisions (its router's choices, sel, walked in GShard's order against the capacity by this test) of the same
 * micro-batches; with dp = 2 × 2 ranks, top-2, a capacity that drops, and recomputation (each micro-batch counted
 * once). onStep carries each step's counts, the same as the report's.
 */
import { describe, expect, it } from 'vitest';
import type { MoeRoute, Tensor } from '../../nn/backend.ts';
import { CpuBackend } from '../../nn/cpu-backend.ts';
import { ints } from '../../nn/cpu-tensor.ts';
import { trainSingleDevice } from '../../nn/train.ts';
import { defaultRunConfig, toTrainConfig, type RunConfig } from '../../config/run-config.ts';
import { runPipeline } from '../coordinator.ts';
import { InProcessRankHost } from '../executor/in-process-host.ts';
import { summarizeLayerLoad, type MoeLayerLoad, type MoeLoadStep } from './report-moe-load.ts';

/** One device's backend, keeping every routing decision it makes: the router's choices and the capacity. */
class RoutesKept extends CpuBackend {
  readonly routes: { sel: number[]; S: number; k: number; E: number; cap: number }[] = [];
  override moeRoute(probs: Tensor, k: number, capacity: number): MoeRoute {
    const r = super.moeRoute(probs, k, capacity);
    this.routes.push({ sel: Array.from(ints(r.sel)), S: probs.shape[0], k, E: probs.shape[1], cap: capacity });
    return r;
  }
}

/** Per expert [first, second, dropped] from the choices: first choices in token order, then second choices, each expert's rows up to cap. */
function recount(r: RoutesKept['routes'][number]): { first: number[]; second: number[]; dropped: number[] } {
  const first = new Array<number>(r.E).fill(0), second = new Array<number>(r.E).fill(0), dropped = new Array<number>(r.E).fill(0), used = new Array<number>(r.E).fill(0);
  for (let j = 0; j < r.k; j++) {
    for (let s = 0; s < r.S; s++) {
      const e = r.sel[s * r.k + j];
      (j === 0 ? first : second)[e]++;
      if (used[e]++ >= r.cap) dropped[e]++;
    }
  }
  return { first, second, dropped };
}

const cfg: RunConfig = {
  ...defaultRunConfig(),
  dataset: 'names', model: 'gpt', layers: 3, heads: 2, width: 6, blockSize: 16, batchSize: 8, microbatches: 2, steps: 2,
  optimizer: 'adamw', lr: 0.01, evalEvery: 0, ranks: 2, dp: 2, experts: 3, topK: 2, capacityFactor: 1, auxLossWeight: 0.1,
  schedule: '1f1b', recompute: true,
};

describe('the MoE load in the run report (CPU host)', () => {
  it('dp = 2 × 2 ranks, top-2, capacity 1, recompute: every layer × expert × micro-batch count equals a recount of one device’s routing', async () => {
    const live: MoeLoadStep[] = [];
    const report = await runPipeline(cfg, { hostFactory: (r) => new InProcessRankHost(r, new CpuBackend()), recvTimeoutMs: 10000, onStep: (p) => p.moeLoad && live.push(p.moeLoad) });
    // One device with dp × m = 4 micro-batches: replica d's micro-batch j is its micro-batch 2d + j (pipeline-moe-cpu.test.ts).
    const be = new RoutesKept();
    await trainSingleDevice(be, toTrainConfig({ ...cfg, dp: 1, microbatches: 4, recompute: false }));
    const M = 4, L = 3, S = 2 * 16;
    expect(be.routes.length).toBeGreaterThanOrEqual(cfg.steps * M * L); // then the final evaluation's
    const loads = report.moeLoad ?? [];
    expect(loads.map((s) => s.step)).toEqual([0, 1]);
    expect(live).toEqual(loads);
    let dropped = 0;
    for (const st of loads) {
      // One MoE layer per transformer block, in order, on the stage whose blocks hold it.
      const blocks = st.layers.map((l) => Number(/^block(\d+)\./.exec(l.layer)?.[1]));
      expect(blocks).toEqual([...blocks].sort((a, b) => a - b));
      expect(new Set(blocks).size).toBe(L);
      st.layers.forEach((l, i) => expect(l.stage).toBe(report.stageBlocks.findIndex(([a, b]) => a <= blocks[i] && blocks[i] < b)));
      expect(st.layers.every((l) => l.experts === 3)).toBe(true);
      st.layers.forEach((l, li) => {
        expect(l.columns.map((c) => [c.replica, c.mb])).toEqual([[0, 0], [0, 1], [1, 0], [1, 1]]);
        // Workers in mesh order: replica d's rank r is worker 2d + r.
        expect(l.columns.map((c) => c.worker)).toEqual(l.stage === 0 ? [0, 0, 2, 2] : [1, 1, 3, 3]);
        l.columns.forEach((c, ci) => {
          const r = be.routes[(st.step * M + c.replica * 2 + c.mb) * L + li];
          expect(r.S).toBe(S);
          expect(c.capacity).toBe(r.cap);
          const want = recount(r);
          expect([l.first[ci], l.second[ci], l.dropped[ci]]).toEqual([want.first, want.second, want.dropped]);
          dropped += want.dropped.reduce((a, b) => a + b, 0);
        });
      });
    }
    expect(dropped).toBeGreaterThan(0); // the capacity dropped some: the drops are tested, not only zeros
  });

  it('a stream (PipeDream, one window of every step): each step’s micro-batches are its own columns', async () => {
    const report = await runPipeline({ ...cfg, schedule: 'pipedream', dp: 1, recompute: false, steps: 3 }, { hostFactory: (r) => new InProcessRankHost(r, new CpuBackend()), recvTimeoutMs: 10000 });
    const loads = report.moeLoad ?? [];
    expect(loads.map((s) => s.step)).toEqual([0, 1, 2]);
    for (const st of loads) {
      expect(st.layers).toHaveLength(3);
      for (const l of st.layers) {
        expect(l.columns.map((c) => [c.replica, c.mb])).toEqual([[0, 0], [0, 1]]);
        // Every token of a micro-batch (4 names × 16 tokens) chose two experts: 128 choices.
        expect(l.first.map((col, c) => col.reduce((a, f, e) => a + f + l.second[c][e], 0))).toEqual([128, 128]);
      }
    }
  });

  it('a layer’s summary: tokens per expert over the micro-batches, max / min, the busiest and idlest, the drops', () => {
    const l: MoeLayerLoad = {
      layer: 'block1.moe', stage: 0, experts: 3,
      columns: [{ replica: 0, mb: 0, worker: 0, capacity: 4 }, { replica: 0, mb: 1, worker: 0, capacity: 4 }],
      first: [[5, 2, 1], [3, 3, 2]], second: [[1, 3, 4], [2, 2, 4]], dropped: [[2, 1, 1], [1, 1, 2]],
    };
    const s = summarizeLayerLoad(l);
    expect(s.routed).toEqual([11, 10, 11]);
    expect(s.dropped).toEqual([3, 2, 3]);
    expect(s.maxMinRatio).toBeCloseTo(1.1, 12);
    expect([s.busiest, s.idlest, s.totalRouted, s.totalDropped]).toEqual([0, 1, 32, 8]);
    expect(summarizeLayerLoad({ ...l, first: [[4, 0, 0], [4, 0, 0]], second: [[0, 0, 0], [0, 0, 0]] }).maxMinRatio).toBe(Infinity);
  });
});
