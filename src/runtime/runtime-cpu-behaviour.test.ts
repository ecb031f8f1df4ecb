/**
 * The runtime's other promises, on the CPU reference in-process: bad
 * configurations are rejected before any rank starts; faults end the run with
 * a message naming rank, stage and action, and the next run works; PipeDream's
 * asynchronous 1F1B uses, for each backward, the weights its forward used.
 */
import { describe, expect, it } from 'vitest';
import { CpuBackend } from '../nn/cpu-backend.ts';
import { runPipeline } from './coordinator.ts';
import { InProcessRankHost } from './executor/in-process-host.ts';
import { configFromQuery, configToQuery, defaultRunConfig, type RunConfig } from '../config/run-config.ts';
import type { Fault } from '../config/fault-spec.ts';
import { CountingReads } from '../nn/testing/counting-reads.ts';

const cpuHosts = (log?: number[]) => (r: number) => {
  log?.push(r);
  return new InProcessRankHost(r, new CpuBackend());
};

function tiny(over: Partial<RunConfig> = {}): RunConfig {
  return { ...defaultRunConfig(), hidden: 6, batchSize: 16, microbatches: 4, steps: 2, evalEvery: 0, ...over };
}

describe('bad configurations are rejected before any rank starts', () => {
  const bad: [string, Partial<RunConfig>, RegExp][] = [
    ['more stages than blocks', { ranks: 8, layers: 3 }, /^ranks = 8: ranks × virtual = 8 stages, but the model has only 4 blocks/],
    ['micro-batches that do not divide the batch', { microbatches: 3, batchSize: 16 }, /^microbatches = 3: must divide batchSize = 16 evenly/],
    ['an unknown schedule', { schedule: 'zigzag' as RunConfig['schedule'] }, /^schedule = "zigzag": must be one of gpipe, 1f1b, /],
    ['a virtual count the schedule cannot take', { schedule: '1f1b', virtual: 2, layers: 7, ranks: 2 }, /^virtual = 2: 1f1b holds one stage per rank/],
    ['interleaving with more virtual stages than blocks', { schedule: 'interleaved-1f1b', virtual: 4, layers: 3, ranks: 2 }, /ranks × virtual = 8 stages, but the model has only 4 blocks/],
    ['a non-finite learning rate', { lr: Infinity }, /^lr = Infinity: must be a finite number/],
    ['zero ranks', { ranks: 0 }, /^ranks = 0: must be an integer between 1 and 16/],
  ];
  it.each(bad)('%s', async (_what, over, message) => {
    const started: number[] = [];
    await expect(runPipeline(tiny(over), { hostFactory: cpuHosts(started) })).rejects.toThrow(message);
    expect(started).toEqual([]);
  });
});

describe('faults end the run with a message naming rank, stage and action', () => {
  const faults: [Fault, RegExp][] = [
    [{ kind: 'throw', action: '2F1' }, /^rank 2, stage 2, action 2F1, step 0: injected fault: the stage kernel threw/],
    [{ kind: 'drop-message', action: '1F0' }, /^rank 2, stage 2, action 2F0, step 0: rank 2 waited 0\.5 s for the activation of micro-batch 0 from rank 1 \(stage 1\) for 2F0 and it never came/],
    [{ kind: 'malformed-message', action: '0F0' }, /rank 1 got a malformed message from rank 0: buffer.byteLength = \d+: must be 8 × \d+/],
    [{ kind: 'nan-loss', action: '3F0', step: 1 }, /^step 1: the loss is NaN, not a finite number; the run stopped/],
  ];
  it.each(faults)('%o', async (fault, message) => {
    const t0 = Date.now();
    await expect(runPipeline(tiny({ fault }), { hostFactory: cpuHosts(), recvTimeoutMs: 500 })).rejects.toThrow(message);
    expect(Date.now() - t0).toBeLessThan(5000);
    // The next run works.
    const ok = await runPipeline(tiny(), { hostFactory: cpuHosts() });
    expect(ok.losses.every(Number.isFinite)).toBe(true);
  });
});

describe('PipeDream asynchronous 1F1B with weight stashing', () => {
  it('runs each backward with the weight version its forward used, and trains', async () => {
    const cfg = tiny({ schedule: 'pipedream', ranks: 4, microbatches: 4, batchSize: 32, steps: 30, hidden: 16, lr: 0.01, lrSchedule: 'constant' });
    const report = await runPipeline(cfg, { hostFactory: cpuHosts() });
    expect(report.losses).toHaveLength(cfg.steps);
    const head = report.losses.slice(0, 5).reduce((a, b) => a + b) / 5;
    const tail = report.losses.slice(-5).reduce((a, b) => a + b) / 5;
    expect(tail).toBeLessThan(head * 0.9);
    // Stage 0 of 4 runs p − 1 = 3 forwards ahead: up to 4 versions in flight.
    expect(report.weightStash?.[0].versions).toBe(4);
    expect(report.weightStash?.[3].versions).toBe(1);
  });

  it('records the version ids: forward = backward, and the stash mattered', async () => {
    const { CpuBackend: Cpu } = await import('../nn/cpu-backend.ts');
    const { planRun } = await import('./executor/run-plan.ts');
    const { createRankRuntime } = await import('./executor/rank-runtime.ts');
    const cfg = tiny({ schedule: 'pipedream', ranks: 2, microbatches: 4, steps: 3 });
    const plan = planRun(cfg);
    const ch = new MessageChannel();
    const ports = [new Map([[1, ch.port1]]), new Map([[0, ch.port2]])];
    const rts = [0, 1].map((r) => createRankRuntime(new Cpu(), { config: cfg, spec: plan.spec, rank: r, worker: r, schedule: plan.schedule, stageBlocks: plan.stageBlocks, recvTimeoutMs: 2000 }, { peers: ports[r] }));
    const results = await Promise.all(rts.map((rt) => rt.step(0)));
    const records = results.flatMap((r) => r.versions ?? []);
    expect(records).toHaveLength(2 * cfg.steps * cfg.microbatches);
    for (const rec of records) expect(rec.backward).toBe(rec.forward);
    expect(records.some((rec) => rec.current > rec.forward)).toBe(true);
    for (const rt of rts) rt.dispose();
  });
});

describe('GPU time of actions', () => {
  it('without timestamp queries (the CPU reference has none) actions carry wall time only and the report no GPU times', async () => {
    const report = await runPipeline(tiny(), { hostFactory: cpuHosts() });
    const compute = report.timeline.intervals.filter((iv) => iv.op !== 'comm');
    expect(compute.length).toBeGreaterThan(0);
    for (const iv of compute) {
      expect(iv.gpuMs).toBeUndefined();
      expect(iv.end).toBeGreaterThanOrEqual(iv.start);
    }
    expect(report.meanGpuOpMs).toBeUndefined();
    expect(Object.keys(report.meanOpMs).length).toBe(report.schedule.stages);
  });
});

describe('weights read back during a run', () => {
  it('every weightsEvery steps, complete, and equal to the final ones at the last of them', async () => {
    const seen: { step: number; names: string[]; w: Record<string, Float32Array | Float64Array> }[] = [];
    const cfg = tiny({ steps: 5 });
    const report = await runPipeline(cfg, {
      hostFactory: cpuHosts(),
      readWeights: true,
      weightsEvery: 2,
      onWeights: (step, w) => seen.push({ step, names: Object.keys(w).sort(), w }),
    });
    expect(seen.map((s) => s.step)).toEqual([1, 3]);
    const all = Object.keys(report.weights ?? {}).sort();
    for (const s of seen) expect(s.names).toEqual(all);
    // Weights move between reads (training happens), and reads are copies, not live views.
    const k = all[0];
    expect(Array.from(seen[0].w[k])).not.toEqual(Array.from(seen[1].w[k]));
    expect(Array.from(seen[1].w[k])).not.toEqual(Array.from((report.weights ?? {})[k]));
  });
});

describe('run configuration in the URL', () => {
  it('round-trips', () => {
    const cfg = { ...defaultRunConfig(), dataset: 'moons' as const, ranks: 2, microbatches: 16, lr: 0.003, recompute: true, schedule: 'zb-h1' as const };
    const back = configFromQuery(configToQuery(cfg));
    expect(back.errors).toEqual([]);
    expect(back.config).toEqual(cfg);
  });
  it('names a bad value and keeps the rest', () => {
    const { config, errors } = configFromQuery('?ranks=2&lr=abc&microbatches=16');
    expect(errors.map((e) => e.message)).toEqual(['lr = "abc": must be a number in decimal notation, such as 12 or 0.01']);
    expect(config.ranks).toBe(2);
    expect(config.microbatches).toBe(16);
    expect(config.lr).toBe(defaultRunConfig().lr);
  });
});

describe('the end of a step, and the state a checkpoint reads', () => {
  it('reads the step’s losses all at once on the last stage’s rank (one wait for the queue, not m), and a failed read ends the run naming it', async () => {
    const backends: CountingReads[] = [];
    const report = await runPipeline(tiny({ ranks: 2, microbatches: 4 }), { hostFactory: (r) => new InProcessRankHost(r, backends[r] = new CountingReads()) });
    expect(report.losses.every(Number.isFinite)).toBe(true);
    // Rank 1 holds the last stage: its 4 losses a step are read together.
    expect(backends[1].scalarReads).toBe(4 * 2);
    expect(backends[1].most).toBeGreaterThanOrEqual(4);
    await expect(runPipeline(tiny({ ranks: 2, microbatches: 4 }), { hostFactory: (r) => new InProcessRankHost(r, new CountingReads(r === 1 ? 5 : -1)) })).rejects.toThrow('the GPU lost the loss read');
  });

  it('reads every stage’s weights and optimizer slots at once (1F1B, AdamW: 2 ranks)', async () => {
    const backends: CountingReads[] = [];
    const report = await runPipeline(tiny({ ranks: 2, optimizer: 'adamw' }), { hostFactory: (r) => new InProcessRankHost(r, backends[r] = new CountingReads()), progressEvery: 1, onProgress: () => {} });
    expect(report.losses.every(Number.isFinite)).toBe(true);
    // A rank's state: each parameter, and its 2 AdamW slots, all in flight together.
    for (const be of backends) expect(be.most).toBeGreaterThanOrEqual(6);
  });
});
