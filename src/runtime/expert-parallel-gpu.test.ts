/**
 * Expert parallelism on WebGPU (Dawn in Node on SwiftShader, one device per worker, in-process workers over real
 * MessageChannels): the MoE GPT at ep = 2 (pp = 2 and the rest: the CPU host's expert-parallel-cpu.test.ts), top-2 with capacity drops, trains to the float64 CPU reference of
 * one device (the same micro-batches) within float32's rounding, and its timeline draws the all-to-alls (counts, then
 * rows, each way) and the dense gradients' ep all-reduce on every worker's lane.
 * Needs VK_ICD_FILENAMES=/usr/lib/chromium/vk_swiftshader_icd.json here (testing/node-gpu.ts sets it).
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { GpuBackend } from '../gpu/gpu-backend.ts';
import { createTestBackend } from '../gpu/testing/node-gpu.ts';
import { CpuBackend } from '../nn/cpu-backend.ts';
import { trainSingleDevice } from '../nn/train.ts';
import { defaultRunConfig, toTrainConfig, type RunConfig } from '../config/run-config.ts';
import { runPipeline } from './coordinator.ts';
import { InProcessRankHost } from './executor/in-process-host.ts';

const backends: GpuBackend[] = [];
afterAll(() => {
  for (const b of backends) b.destroy();
});

const cfg: RunConfig = {
  ...defaultRunConfig(), dataset: 'names', model: 'gpt', layers: 2, heads: 2, width: 8, blockSize: 16, batchSize: 8, microbatches: 2, steps: 2,
  optimizer: 'adamw', lr: 0.01, evalEvery: 0, ranks: 1, schedule: '1f1b', experts: 4, topK: 2, capacityFactor: 0.75, auxLossWeight: 0.1, ep: 2,
};

describe('expert parallelism on WebGPU equals one device', () => {
  it('ep 2, top-2 with drops: losses, aux losses and weights within float32 rounding of the float64 one-device run', async () => {
    for (let w = 0; w < 2; w++) backends.push(await createTestBackend());
    const aux: number[] = [];
    let drops = 0;
    const report = await runPipeline(cfg, {
      hostFactory: (w) => new InProcessRankHost(w, backends[w]), readWeights: true,
      onStep: (p) => {
        aux.push(p.auxLoss ?? NaN);
        for (const l of p.moeLoad?.layers ?? []) drops += l.dropped.flat().reduce((a, b) => a + b, 0);
      },
    });
    const { ep: _ep, ...one } = cfg;
    const ref = await trainSingleDevice(new CpuBackend(), toTrainConfig(one));
    expect(drops).toBeGreaterThan(0);
    for (let i = 0; i < cfg.steps; i++) {
      expect(Math.abs(report.losses[i] - ref.losses[i]) / ref.losses[i], `loss ${i}`).toBeLessThan(1e-5);
      expect(Math.abs(aux[i] - ref.auxLosses[i]) / ref.auxLosses[i], `aux ${i}`).toBeLessThan(1e-5);
    }
    for (const [n, v] of Object.entries(ref.params)) {
      const got = (report.weights ?? {})[n];
      let worst = 0;
      for (let i = 0; i < v.length; i++) worst = Math.max(worst, Math.abs(got[i] - v[i]));
      expect(worst, n).toBeLessThan(1e-5);
    }
    // Per worker, micro-batch and MoE block (two on the one stage): the counts and the rows out and back forward, the rows out and back backward.
    const lanes = new Map<string, number>();
    for (const iv of report.timeline.intervals) if (iv.coll === 'ep-all-to-all') lanes.set(`${iv.rank}.${iv.epRank ?? 0}`, (lanes.get(`${iv.rank}.${iv.epRank ?? 0}`) ?? 0) + 1);
    expect([...lanes.keys()].sort()).toEqual(['0.0', '0.1']);
    for (const n of lanes.values()) expect(n).toBe(cfg.microbatches * 5 * 2);
    expect(report.timeline.intervals.filter((iv) => iv.coll === 'ep-all-reduce')).toHaveLength(2);
  }, 120_000);
});
