/** The profiling pass on the in-process CPU runtime: one block per rank, F/I/W timed apart, bytes and comm per boundary. */
import { describe, expect, it } from 'vitest';
import { CpuBackend } from '../nn/cpu-backend.ts';
import { runPipeline } from './coordinator.ts';
import { InProcessRankHost } from './executor/in-process-host.ts';
import { planRun } from './executor/run-plan.ts';
import { defaultRunConfig, type RunConfig } from '../config/run-config.ts';
import { blockInCols } from '../nn/model-spec.ts';
import { lanesFromReport, lanesProbeConfig, measureProfile, profileFromReport, profilingConfig } from './measure-profile.ts';
import { generateSchedule, simulate } from '../schedule/index.ts';
import { meanOpTimesOf } from '../plan/calibrate.ts';
import type { RunReport } from './report/report-types.ts';
import { parseProfile } from '../plan/profile.ts';
import { planPartition } from '../plan/partition.ts';

const cfg: RunConfig = { ...defaultRunConfig(), layers: 3, hidden: 8, batchSize: 16, microbatches: 4, ranks: 2, steps: 2, evalEvery: 0 };
const runCpu = (c: RunConfig) => runPipeline(c, { hostFactory: (r) => new InProcessRankHost(r, new CpuBackend()), recvTimeoutMs: 5000 });

describe('profiling pass', () => {
  it('runs ZB-H1 with one block per rank and one micro-batch of the configured size', () => {
    const p = profilingConfig(cfg);
    const blocks = planRun({ ...cfg, ranks: 1 }).spec.blocks.length;
    expect(p).toMatchObject({ schedule: 'zb-h1', ranks: blocks, virtual: 1, microbatches: 1, batchSize: 4 });
    expect(() => profilingConfig({ ...cfg, layers: 40 })).toThrow(/^layers = 40: gives \d+ blocks; the profiling pass runs one block per rank, at most 16/);
  });

  it('times whole blocks on one device per stage whatever mesh the run has: the rows of one replica\'s micro-batch, no dp, tp or ZeRO', async () => {
    // dp 2 × 4 micro-batches of a 16-row batch: 2 rows per micro-batch on each replica; tp and sequence parallelism
    // split a block, which the planner adds from a cluster profile's tp part, not from these whole blocks.
    const gpt: RunConfig = { ...defaultRunConfig(), dataset: 'names', model: 'gpt', layers: 2, heads: 2, width: 8, blockSize: 16, batchSize: 16, microbatches: 4, ranks: 2, steps: 2, evalEvery: 0 };
    const mesh: RunConfig = { ...gpt, dp: 2, tp: 2, sequenceParallel: true, zero: 1 };
    const p = profilingConfig(mesh);
    expect(p).toMatchObject({ dp: 1, tp: 1, zero: 0, batchSize: 2, microbatches: 1 });
    expect(p.sequenceParallel).toBeUndefined();
    expect(lanesProbeConfig(mesh)).toMatchObject({ dp: 1, tp: 1, zero: 0, ranks: 2, microbatches: 2, batchSize: 4 });
    // The bytes a block holds do not depend on the clock: the mesh's profile holds what the one pipeline's does.
    const measured = await measureProfile(mesh, runCpu);
    const onePipeline = await measureProfile({ ...gpt, batchSize: 8 }, runCpu);
    expect(measured.blocks.map((b) => [b.heldBytes, b.heldBytesRecompute])).toEqual(onePipeline.blocks.map((b) => [b.heldBytes, b.heldBytesRecompute]));
    expect(measured.source).toContain('2 rows per micro-batch');
  });

  it('measures a valid profile: every block timed, one micro-batch of activations held, comm per boundary', async () => {
    const profile = await measureProfile(cfg, runCpu);
    const spec = planRun({ ...cfg, ranks: 1 }).spec;
    expect(parseProfile(JSON.parse(JSON.stringify(profile)))).toEqual(profile);
    expect(profile.blocks.map((b) => b.name)).toEqual(spec.blocks.map((b) => b.name));
    expect(profile.comm).toHaveLength(spec.blocks.length - 1);
    for (const [i, b] of profile.blocks.entries()) {
      for (const t of [b.F, b.I, b.W]) expect(t).toBeGreaterThanOrEqual(0);
      expect(b.B).toBe(b.I + b.W);
      expect(b.heldBytes).toBeGreaterThan(0);
      expect(b.heldBytesRecompute).toBe(Math.min(b.heldBytes, blockInCols(spec.blocks[i]) * 4 * 4));
    }
    for (const c of profile.comm) expect(c).toBeGreaterThanOrEqual(0);
    expect(profile.source).toContain('wall time');
    // The lanes probe's k, within the candidates (1 to max(4, ranks)).
    expect(profile.lanes).toBeGreaterThanOrEqual(1);
    expect(profile.lanes).toBeLessThanOrEqual(4);
    expect(profile.source).toContain('effective lanes with 2 ranks at once');
    // One rank: nothing shared, no lanes.
    expect((await measureProfile({ ...cfg, ranks: 1 }, runCpu)).lanes).toBeUndefined();
    // and it plans
    expect(planPartition(profile, 2).ranges).toHaveLength(2);
  });

  it('probes the lanes with GPipe on the configured ranks, as many micro-batches as ranks, and reads k back from a shared play', () => {
    expect(lanesProbeConfig(cfg)).toMatchObject({ schedule: 'gpipe', ranks: 2, microbatches: 2, batchSize: 8, virtual: 1 });
    expect(lanesProbeConfig({ ...cfg, ranks: 3, virtual: 2, schedule: 'interleaved-1f1b', layers: 7 })).toMatchObject({ schedule: 'gpipe', ranks: 3, microbatches: 3, batchSize: 12, virtual: 1 });
    // A run "measured" on a device with k lanes (random solo times played by the simulator) gives k back.
    for (const k of [1.3, 2, 2.7]) {
      const ranks = 5;
      const s = generateSchedule('gpipe', ranks, ranks, 1);
      const solo = () => Array.from({ length: ranks }, () => 1 + Math.random());
      const played = simulate(s, { F: solo(), B: solo(), latency: 0.1, lanes: k });
      const report = { config: { ...cfg, schedule: 'gpipe', ranks, microbatches: ranks, virtual: 1 }, makespanMs: { measured: played.makespan }, commMsPerCrossing: 0.1, meanOpMs: meanOpTimesOf(played) } as unknown as RunReport;
      expect(lanesFromReport(report)).toBeCloseTo(k, 6);
    }
  });

  it('refuses a report that is not one block per stage', async () => {
    const report = await runCpu({ ...cfg, schedule: 'zb-h1', ranks: 2, microbatches: 1 });
    expect(() => profileFromReport(report)).toThrow('report.stageBlocks');
  });
});
