/**
 * dp × pp on the float64 CPU reference, in-process over real MessageChannels:
 * replicas of the pipeline, each on its slice of the batch, their gradients
 * summed by a ring all-reduce (or ZeRO-1's reduce-scatter, sharded update and
 * all-gather), must compute exactly what one device computes on the whole batch
 * (≤ 1e-12 relative), with every replica holding the same weights.
 */
import { describe, expect, it } from 'vitest';
import { CpuBackend } from '../../nn/cpu-backend.ts';
import { trainSingleDevice } from '../../nn/train.ts';
import { SCHEDULE_NAMES, SCHEDULES, type ScheduleName } from '../../schedule/registry.ts';
import { isCompute, laneOf } from '../../schedule/timeline.ts';
import { runPipeline } from '../coordinator.ts';
import { InProcessRankHost } from '../executor/in-process-host.ts';
import { defaultRunConfig, toTrainConfig, validateRunConfig, type RunConfig } from '../../config/run-config.ts';
import { relErrByName } from '../../util/rel-err.ts';

function meshConfig(over: Partial<RunConfig>): RunConfig {
  const base = defaultRunConfig();
  const ranks = over.ranks ?? 2;
  const virtual = over.virtual ?? 1;
  return { ...base, layers: Math.max(3, ranks * virtual - 1), hidden: 6, batchSize: 16, microbatches: 2, steps: 2, optimizer: 'adamw', lr: 0.01, evalEvery: 0, ...over };
}


const cpuHosts = () => (w: number) => new InProcessRankHost(w, new CpuBackend());

async function expectEqualsOneDevice(cfg: RunConfig) {
  const report = await runPipeline(cfg, { hostFactory: cpuHosts(), readWeights: true, recvTimeoutMs: 5000 });
  const ref = await trainSingleDevice(new CpuBackend(), toTrainConfig(cfg));
  expect(report.losses).toHaveLength(cfg.steps);
  for (let i = 0; i < cfg.steps; i++) expect(Math.abs(report.losses[i] - ref.losses[i])).toBeLessThan(1e-12 * Math.abs(ref.losses[i]));
  for (const [n, e] of Object.entries(relErrByName(report.weights, ref.params))) expect(e, n).toBeLessThan(1e-12);
  expect(report.replicaMismatch).toBe(0);
  return report;
}

// The synchronous schedules but DualPipe, whose two model copies take replicas without ZeRO (dualpipe-cpu.test.ts).
const SYNCHRONOUS = SCHEDULE_NAMES.filter((n) => SCHEDULES[n].update === 'flush' && SCHEDULES[n].copies === 1);

describe('dp × pp on the CPU reference equals one device on the whole batch', () => {
  const variants = [
    { zero: 0 as const, overlap: true },
    { zero: 0 as const, overlap: false },
    { zero: 1 as const, overlap: true },
    { zero: 1 as const, overlap: false },
  ];
  for (const name of SYNCHRONOUS) {
    const kind = SCHEDULES[name];
    const virtual = kind.virtualFor(1);
    for (const v of variants) {
      it(`${name} dp=2 p=2 v=${virtual} zero=${v.zero} overlap=${v.overlap}`, async () => {
        const cfg = meshConfig({ schedule: name, dp: 2, ranks: 2, virtual, ...v });
        kind.validateParams(2, cfg.microbatches, virtual);
        await expectEqualsOneDevice(cfg);
      });
    }
  }

  it('interleaved 1F1B dp=2 p=2 v=2 (a worker holds two stages; their collectives share its ring link)', async () => {
    for (const zero of [0, 1] as const) await expectEqualsOneDevice(meshConfig({ schedule: 'interleaved-1f1b', dp: 2, ranks: 2, virtual: 2, zero }));
  });

  it('dp=4 p=1 (pure data parallelism), with and without ZeRO-1', async () => {
    for (const zero of [0, 1] as const) await expectEqualsOneDevice(meshConfig({ schedule: '1f1b', dp: 4, ranks: 1, zero }));
  });

  it('dp=3 p=2 (a ring of three; vectors not divisible by 3), SGD with momentum and ZeRO-1', async () => {
    await expectEqualsOneDevice(meshConfig({ schedule: 'gpipe', dp: 3, ranks: 2, batchSize: 24, optimizer: 'sgd', momentum: 0.9, lr: 0.05, zero: 1 }));
  });

  it('the GPT on names, dp=2 p=2, ZB-H1 with ZeRO-1 (padded sequences: the loss scale counts the whole step\'s targets)', async () => {
    const base = defaultRunConfig();
    const cfg: RunConfig = {
      ...base,
      dataset: 'names',
      model: 'gpt',
      layers: 2,
      heads: 2,
      width: 8,
      blockSize: 16,
      schedule: 'zb-h1',
      dp: 2,
      ranks: 2,
      zero: 1,
      batchSize: 8,
      microbatches: 2,
      steps: 2,
      optimizer: 'adamw',
      lr: 0.01,
      evalEvery: 0,
    };
    validateRunConfig(cfg);
    await expectEqualsOneDevice(cfg);
  });
});

describe('the collective in the timeline and the report', () => {
  it('every worker of a stage group draws its collective: gather, 2(dp − 1) ring exchanges with their bytes, write-back', async () => {
    const cfg = meshConfig({ schedule: '1f1b', dp: 2, ranks: 2, microbatches: 4 });
    const report = await runPipeline(cfg, { hostFactory: cpuHosts(), recvTimeoutMs: 5000 });
    const t = report.timeline;
    expect(t.dp).toBe(2);
    const lanes = new Set(t.intervals.map((iv) => laneOf(t, iv)));
    expect([...lanes].sort()).toEqual([0, 1, 2, 3]);
    for (let lane = 0; lane < 4; lane++) {
      const coll = t.intervals.filter((iv) => iv.op === 'collective' && laneOf(t, iv) === lane);
      const exchanges = coll.filter((iv) => iv.coll === 'reduce-scatter' || iv.coll === 'all-gather');
      expect(exchanges.map((iv) => iv.coll)).toEqual(['reduce-scatter', 'all-gather']);
      expect(coll.map((iv) => iv.coll)).toContain('gather-grads');
      expect(coll.map((iv) => iv.coll)).toContain('scatter-back');
      for (const iv of exchanges) expect(iv.bytes).toBeGreaterThan(0);
    }
    // The report: per stage, the all-reduce's bytes (the stage's gradients) and time.
    for (const s of [0, 1]) {
      const ar = report.allReduce?.perStage[s];
      expect(ar?.bytes).toBeGreaterThan(0);
      expect(ar?.ms).toBeGreaterThan(0);
      // The ring's own part lies inside the whole collective (readback, ring, write-back).
      expect(ar?.ringMs).toBeGreaterThan(0);
      expect(ar?.ringMs).toBeLessThanOrEqual(ar!.ownMs);
      expect(ar?.ownMs).toBeLessThanOrEqual(ar!.ms);
    }
    // The simulator beside it plays the mesh: dp × ranks lanes, each stage's collective on both replicas' workers,
    // and its step ends no earlier than its compute (the pipeline's simulated makespan) plus nothing negative.
    const sim = report.simulatedTimeline;
    expect(sim.dp).toBe(2);
    expect(new Set(sim.intervals.map((iv) => laneOf(sim, iv))).size).toBe(4);
    for (const s of [0, 1]) expect(sim.intervals.filter((iv) => iv.op === 'collective' && iv.stage === s).length).toBeGreaterThan(0);
    expect(report.allReduce?.simulated?.stepMs).toBeGreaterThanOrEqual(report.makespanMs.simulated);
    expect(report.allReduce?.simulated?.share).toBeGreaterThanOrEqual(0);
  });

  it('overlap starts the last stage\'s all-reduce while rank 0 still computes; without it, no collective starts before every worker is done', async () => {
    const common = { schedule: 'gpipe' as const, dp: 2, ranks: 2, microbatches: 4, layers: 7, hidden: 24, steps: 3 };
    const starts = async (overlap: boolean) => {
      const report = await runPipeline(meshConfig({ ...common, overlap }), { hostFactory: cpuHosts(), recvTimeoutMs: 5000 });
      const t = report.timeline;
      const lastCompute = Math.max(...t.intervals.filter(isCompute).map((iv) => iv.end));
      const firstLastStage = Math.min(...t.intervals.filter((iv) => iv.op === 'collective' && iv.stage === 1 && iv.coll === 'reduce-scatter').map((iv) => iv.start));
      return { lastCompute, firstLastStage };
    };
    const on = await starts(true);
    expect(on.firstLastStage).toBeLessThan(on.lastCompute);
    const off = await starts(false);
    expect(off.firstLastStage).toBeGreaterThanOrEqual(off.lastCompute);
  });

  it('ZeRO-1 holds 1/dp of the optimizer state per worker', async () => {
    const bytes = async (zero: 0 | 1) => {
      const report = await runPipeline(meshConfig({ schedule: '1f1b', dp: 4, ranks: 1, zero, steps: 1 }), { hostFactory: cpuHosts(), recvTimeoutMs: 5000 });
      return report.optimizerBytesPerWorker ?? [];
    };
    const full = await bytes(0);
    const sharded = await bytes(1);
    expect(full).toHaveLength(4);
    const total = full[0];
    expect(total).toBeGreaterThan(0);
    for (const b of full) expect(b).toBe(total);
    // Shards differ by at most one weight's two AdamW slots (4 bytes each).
    for (const b of sharded) expect(Math.abs(b - total / 4)).toBeLessThanOrEqual(8);
    expect(sharded.reduce((a, b) => a + b, 0)).toBe(total);
  });
});

describe('failures inside a collective end the run, naming the replica, the stage and the collective', () => {
  it('a throw in the middle of stage 1\'s all-reduce on replica 1', async () => {
    const cfg = meshConfig({ schedule: '1f1b', dp: 2, ranks: 2, fault: { kind: 'throw', action: 'AR1', step: 1, replica: 1 } });
    await expect(runPipeline(cfg, { hostFactory: cpuHosts(), recvTimeoutMs: 2000 })).rejects.toThrow(/replica 1, rank 1, .*step 1: injected fault: the all-reduce of stage 1 threw/);
  });

  it('a dropped ring chunk: its receiver waits, then names the chunk, the collective and the worker it waited for', async () => {
    const cfg = meshConfig({ schedule: '1f1b', dp: 3, ranks: 1, batchSize: 12, zero: 1, fault: { kind: 'drop-message', action: 'AR0', replica: 2 } });
    await expect(runPipeline(cfg, { hostFactory: cpuHosts(), recvTimeoutMs: 300 })).rejects.toThrow(/replica 0, rank 0 waited 0\.3 s for chunk 2 of 4 of the ZeRO-1 update of stage 0 \(step 0\) from worker 2/);
  });
});
