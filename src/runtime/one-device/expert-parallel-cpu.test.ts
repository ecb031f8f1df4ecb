/**
 * Expert parallelism through the pipeline runtime on the float64 CPU reference: ep workers per stage, each holding
 * experts / ep of every MoE layer and its slice of each micro-batch's sequences, the router's probabilities gathered so
 * each routes the whole micro-batch, the token rows sent to their experts' owners and back, the dense gradients summed
 * over the ep group. The losses, the aux losses and the weights equal one device's (the same micro-batches: the routing
 * group is a micro-batch on both sides) to 1e-12, top-1 and top-2, with capacity drops and dropless, ep 2 and 4, with
 * pp 2, with a dp replica, under 1F1B, GPipe (with recomputation), ZB-H1 and DualPipe; a checkpoint resumes to the uninterrupted run.
 */
import { describe, expect, it } from 'vitest';
import { CpuBackend } from '../../nn/cpu-backend.ts';
import { compareGrads } from '../../nn/testing/gradcheck.ts';
import { trainSingleDevice, type TrainProgress } from '../../nn/train.ts';
import { runPipeline } from '../coordinator.ts';
import { InProcessRankHost } from '../executor/in-process-host.ts';
import { defaultRunConfig, toTrainConfig, type RunConfig } from '../../config/run-config.ts';
import { decodeRunState, encodeRunState } from '../../run-state/codec.ts';
import { runStateOf } from '../../run-state/run-state.ts';
import { expectSameRun } from '../../run-state/testing/same-run.ts';

const hosts = (r: number) => new InProcessRankHost(r, new CpuBackend());

function moeConfig(over: Partial<RunConfig>): RunConfig {
  return {
    ...defaultRunConfig(),
    dataset: 'names',
    model: 'gpt',
    layers: 2,
    heads: 2,
    width: 6,
    blockSize: 16,
    batchSize: 8,
    microbatches: 2,
    steps: 2,
    optimizer: 'adamw',
    lr: 0.01,
    evalEvery: 0,
    ranks: 2,
    experts: 4,
    auxLossWeight: 0.1,
    ...over,
  };
}

/** The run at ep and one device on the same micro-batches (dp × m of them), compared: losses, aux losses, weights. */
async function expectOneDevice(cfg: RunConfig): Promise<{ drops: number }> {
  const aux: number[] = [];
  let drops = 0;
  const report = await runPipeline(cfg, {
    hostFactory: hosts, readWeights: true, recvTimeoutMs: 10000,
    onStep: (p) => {
      aux.push(p.auxLoss ?? NaN);
      for (const l of p.moeLoad?.layers ?? []) drops += l.dropped.flat().reduce((a, b) => a + b, 0);
    },
  });
  const { ep: _ep, ...one } = cfg;
  const ref = await trainSingleDevice(new CpuBackend(), toTrainConfig({ ...one, dp: 1, microbatches: cfg.dp * cfg.microbatches }));
  expect(report.losses).toHaveLength(cfg.steps);
  for (let i = 0; i < cfg.steps; i++) {
    expect(Math.abs(report.losses[i] - ref.losses[i]), `loss ${i}`).toBeLessThan(1e-12 * Math.abs(ref.losses[i]));
    expect(Math.abs(aux[i] - ref.auxLosses[i]), `aux ${i}`).toBeLessThan(1e-12 * ref.auxLosses[i]);
  }
  const names = Object.keys(ref.params).sort();
  expect(Object.keys(report.weights ?? {}).sort()).toEqual(names);
  for (const n of names) expect(compareGrads((report.weights ?? {})[n], ref.params[n]).relErr, n).toBeLessThan(1e-12);
  // The timeline draws the all-to-alls on every worker's lane.
  const a2a = report.timeline.intervals.filter((iv) => iv.coll === 'ep-all-to-all');
  expect(new Set(a2a.map((iv) => `${iv.replica ?? 0}.${iv.rank}.${iv.epRank ?? 0}`)).size).toBe(cfg.dp * cfg.ranks * (cfg.ep ?? 1));
  return { drops };
}

describe('expert parallelism equals one device (CPU reference)', () => {
  it.each([
    ['1f1b', 2, 1, 0.5, false],
    ['1f1b', 2, 2, 0.5, false],
    ['1f1b', 2, 2, 0, false],
    ['zb-h1', 2, 1, 1.25, false],
    ['1f1b', 4, 2, 1, false],
    ['gpipe', 2, 2, 0.5, true],
  ] as const)('%s, ep %i, top-%i, capacity factor %s, pp 2, recompute %s', async (schedule, ep, topK, capacityFactor, recompute) => {
    const { drops } = await expectOneDevice(moeConfig({ schedule, ep, topK, capacityFactor, recompute }));
    // A capacity factor of 0.5 drops choices (so the drops are part of what is equal); dropless drops none.
    if (capacityFactor === 0.5) expect(drops).toBeGreaterThan(0);
    if (capacityFactor === 0) expect(drops).toBe(0);
  });

  it('with a dp replica: dense gradients over dp × ep, each expert’s over the replicas holding it', async () => {
    await expectOneDevice(moeConfig({ schedule: '1f1b', ep: 2, dp: 2, topK: 2, capacityFactor: 1, batchSize: 16 }));
  });

  it('DualPipe: each copy of a stage summed with its partner of the same ep rank', async () => {
    await expectOneDevice(moeConfig({ schedule: 'dualpipe', ep: 2, topK: 2, capacityFactor: 1, layers: 3, microbatches: 4, batchSize: 16 }));
  });

  it('a checkpoint after step 1 of 3, through the file, resumes to the uninterrupted run exactly', async () => {
    const cfg = moeConfig({ schedule: '1f1b', ep: 2, topK: 2, capacityFactor: 1, steps: 3 });
    const full = await runPipeline(cfg, { hostFactory: hosts, readWeights: true, recvTimeoutMs: 10000 });
    const stop = new AbortController();
    const saved: TrainProgress[] = [];
    await runPipeline(cfg, { hostFactory: hosts, recvTimeoutMs: 10000, signal: stop.signal, onStep: (p) => p.step + 1 === 1 && stop.abort(), onProgress: (p) => saved.push(p) });
    expect(saved.map((p) => p.stepsDone)).toEqual([1]);
    const state = decodeRunState(encodeRunState(runStateOf(cfg, saved[0])), { config: cfg });
    const resumed = await runPipeline(cfg, { hostFactory: hosts, readWeights: true, recvTimeoutMs: 10000, from: state });
    expectSameRun(resumed, full);
  });
});
