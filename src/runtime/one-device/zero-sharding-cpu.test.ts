/**
 * ZeRO-2 and ZeRO-3 (FSDP) beside the pipeline on the float64 CPU reference,
 * in-process over real MessageChannels: with gradients (and weights) sharded
 * over the dp group, every synchronous schedule computes what one device
 * computes on the whole batch (≤ 1e-12 relative), the run's weights joined from
 * the workers' shards; checkpoints hold whole tensors by name.
 */
import { describe, expect, it } from 'vitest';
import { CpuBackend } from '../../nn/cpu-backend.ts';
import { trainSingleDevice } from '../../nn/train.ts';
import { SCHEDULE_NAMES, SCHEDULES } from '../../schedule/registry.ts';
import { runPipeline } from '../coordinator.ts';
import { InProcessRankHost } from '../executor/in-process-host.ts';
import { defaultRunConfig, toTrainConfig, validateRunConfig, type RunConfig } from '../../config/run-config.ts';
import { maxRelErr } from '../../util/rel-err.ts';

function meshConfig(over: Partial<RunConfig>): RunConfig {
  const base = defaultRunConfig();
  const ranks = over.ranks ?? 2;
  const virtual = over.virtual ?? 1;
  const cfg = { ...base, layers: Math.max(3, ranks * virtual - 1), hidden: 6, batchSize: 16, microbatches: 2, steps: 2, optimizer: 'adamw' as const, lr: 0.01, evalEvery: 0, ...over };
  validateRunConfig(cfg);
  return cfg;
}

const cpuHosts = () => (w: number) => new InProcessRankHost(w, new CpuBackend());

async function expectEqualsOneDevice(cfg: RunConfig) {
  const report = await runPipeline(cfg, { hostFactory: cpuHosts(), readWeights: true, recvTimeoutMs: 5000 });
  const ref = await trainSingleDevice(new CpuBackend(), toTrainConfig(cfg));
  expect(report.losses).toHaveLength(cfg.steps);
  let worst = 0;
  for (let i = 0; i < cfg.steps; i++) worst = Math.max(worst, Math.abs(report.losses[i] - ref.losses[i]) / Math.abs(ref.losses[i]));
  // Throws unless the run gave every parameter, whole (a gather that returned a first piece, or nothing, fails).
  worst = Math.max(worst, maxRelErr(report.weights, ref.params));
  expect(worst).toBeLessThan(1e-12);
  return { report, worst };
}

// The synchronous schedules but DualPipe, whose two model copies take replicas without ZeRO (dualpipe-cpu.test.ts).
const SYNCHRONOUS = SCHEDULE_NAMES.filter((n) => SCHEDULES[n].update === 'flush' && SCHEDULES[n].copies === 1);

describe('ZeRO-2 and ZeRO-3 with the pipeline equal one device on the whole batch', () => {
  for (const name of SYNCHRONOUS) {
    const virtual = SCHEDULES[name].virtualFor(1);
    it(`${name} dp=2 p=2 v=${virtual}: ZeRO-2, and ZeRO-3 kept for the step and re-gathered per micro-batch`, async () => {
      for (const v of [
        { zero: 2 as const },
        { zero: 3 as const, reshard: 'step' as const },
        { zero: 3 as const, reshard: 'microbatch' as const },
      ]) {
        await expectEqualsOneDevice(meshConfig({ schedule: name, dp: 2, ranks: 2, virtual, ...v }));
      }
    });
  }

  it('a ring of three (vectors not divisible by 3), SGD with momentum, without prefetch or overlap', async () => {
    for (const zero of [2, 3] as const) {
      await expectEqualsOneDevice(meshConfig({ schedule: 'gpipe', dp: 3, ranks: 2, batchSize: 24, optimizer: 'sgd', momentum: 0.9, lr: 0.05, zero, prefetch: false, overlap: false }));
    }
  });

  it('interleaved 1F1B dp=2 p=2 v=2: two stages per worker, their gathers prefetched across stages', async () => {
    for (const reshard of ['step', 'microbatch'] as const) await expectEqualsOneDevice(meshConfig({ schedule: 'interleaved-1f1b', dp: 2, ranks: 2, virtual: 2, microbatches: 4, zero: 3, reshard }));
  });

  it('the GPT on names, dp=2 p=2, ZB-H1 with ZeRO-3 per micro-batch (W runs on freed weights: it needs none)', async () => {
    const cfg: RunConfig = { ...defaultRunConfig(), dataset: 'names', model: 'gpt', layers: 2, heads: 2, width: 8, blockSize: 16, schedule: 'zb-h1', dp: 2, ranks: 2, zero: 3, reshard: 'microbatch', batchSize: 8, microbatches: 2, steps: 2, optimizer: 'adamw', lr: 0.01, evalEvery: 0 };
    validateRunConfig(cfg);
    await expectEqualsOneDevice(cfg);
  });
});

describe('memory per worker falls with the sharding, as the ZeRO paper counts it', () => {
  it('dp=4 p=1, AdamW: at rest 4Ψ + 4Ψ + 8Ψ bytes, then the optimizer state, the gradients and the weights divided by dp', async () => {
    const dp = 4;
    const held = async (zero: 0 | 1 | 2 | 3) => {
      const report = await runPipeline(meshConfig({ schedule: '1f1b', dp, ranks: 1, zero, steps: 1 }), { hostFactory: cpuHosts(), recvTimeoutMs: 5000 });
      return report.heldBytesPerWorker;
    };
    const rows = { 0: await held(0), 1: await held(1), 2: await held(2), 3: await held(3) };
    const psi = rows[0][0].weights / 4;
    expect(psi).toBeGreaterThan(0);
    // Shards of a vector of Ψ values cut in dp chunks differ by at most one value.
    const shard = (bytesPerValue: number) => (b: number) => Math.abs(b - (bytesPerValue * psi) / dp) <= bytesPerValue;
    for (const zero of [0, 1, 2, 3] as const) {
      expect(rows[zero]).toHaveLength(dp);
      for (const w of rows[zero]) {
        expect(zero >= 3 ? shard(4)(w.weights) : w.weights === 4 * psi).toBe(true);
        expect(zero >= 2 ? shard(4)(w.grads) : w.grads === 4 * psi).toBe(true);
        expect(zero >= 1 ? shard(8)(w.optimizer) : w.optimizer === 8 * psi).toBe(true);
        // ZeRO-2/3 hold a micro-batch's whole gradient before its reduce-scatter; ZeRO-3 the gathered weights beside it.
        expect(w.transient).toBe(zero <= 1 ? 0 : zero === 2 ? 4 * psi : 8 * psi);
        expect(w.stash).toBeGreaterThan(0);
        // The report's formula (the ZeRO paper's, in float32) beside the measure: equal up to a chunk's rounding.
        expect(Math.abs(w.weights - w.formula.weights)).toBeLessThanOrEqual(4);
        expect(Math.abs(w.grads - w.formula.grads)).toBeLessThanOrEqual(4);
        expect(Math.abs(w.optimizer - w.formula.optimizer)).toBeLessThanOrEqual(8);
      }
      const total = (k: 'weights' | 'grads' | 'optimizer') => rows[zero].reduce((a, w) => a + w[k], 0);
      if (zero >= 1) expect(total('optimizer')).toBe(8 * psi);
      if (zero >= 2) expect(total('grads')).toBe(4 * psi);
      if (zero >= 3) expect(total('weights')).toBe(4 * psi);
    }
  });

  it('dp=2 × p=2 interleaved (two stages a worker), SGD: each worker\'s measure equals the formula over its own stages', async () => {
    for (const zero of [0, 1, 2, 3] as const) {
      const report = await runPipeline(meshConfig({ schedule: 'interleaved-1f1b', dp: 2, ranks: 2, virtual: 2, zero, optimizer: 'sgd', momentum: 0.9, steps: 1 }), { hostFactory: cpuHosts(), recvTimeoutMs: 5000 });
      expect(report.heldBytesPerWorker).toHaveLength(4);
      for (const w of report.heldBytesPerWorker) {
        expect(Math.abs(w.weights - w.formula.weights)).toBeLessThanOrEqual(2 * 4);
        expect(Math.abs(w.grads - w.formula.grads)).toBeLessThanOrEqual(2 * 4);
        expect(Math.abs(w.optimizer - w.formula.optimizer)).toBeLessThanOrEqual(2 * 4);
      }
    }
  });
});

describe('the ZeRO-3 collectives in the timeline', () => {
  const run = (reshard: 'step' | 'microbatch', prefetch: boolean) =>
    runPipeline(meshConfig({ schedule: '1f1b', dp: 2, ranks: 2, microbatches: 4, batchSize: 16, zero: 3, reshard, prefetch, steps: 1 }), { hostFactory: cpuHosts(), recvTimeoutMs: 5000 });

  it('per step: one all-gather per stage kept for the step; 2m (a forward and a backward per micro-batch) re-gathered per micro-batch; m reduce-scatters', async () => {
    for (const reshard of ['step', 'microbatch'] as const) {
      const t = (await run(reshard, true)).timeline;
      for (const replica of [0, 1]) {
        for (const stage of [0, 1]) {
          const coll = t.intervals.filter((iv) => iv.op === 'collective' && iv.stage === stage && (iv.replica ?? 0) === replica);
          // dp = 2: one exchange per all-gather and per reduce-scatter.
          expect(coll.filter((iv) => iv.coll === 'all-gather')).toHaveLength(reshard === 'step' ? 1 : 2 * 4);
          expect(coll.filter((iv) => iv.coll === 'reduce-scatter')).toHaveLength(4);
          expect(coll.filter((iv) => iv.coll === 'shard-update')).toHaveLength(1);
        }
      }
    }
  });

  it('with prefetch, a gather runs while the worker computes; without, none does', async () => {
    const overlapped = (t: Awaited<ReturnType<typeof run>>['timeline']) => {
      const computes = t.intervals.filter((iv) => iv.op !== 'collective' && iv.op !== 'comm');
      return t.intervals.some(
        (g) => g.op === 'collective' && g.coll === 'all-gather' && computes.some((c) => c.rank === g.rank && (c.replica ?? 0) === (g.replica ?? 0) && c.start < g.end && g.start < c.end),
      );
    };
    expect(overlapped((await run('microbatch', true)).timeline)).toBe(true);
    expect(overlapped((await run('microbatch', false)).timeline)).toBe(false);
  });
});

describe('a failure inside a ZeRO-2/3 collective ends the run with its name', () => {
  it('a throw in stage 1\'s ZeRO-3 collectives on replica 1', async () => {
    const cfg = meshConfig({ schedule: '1f1b', dp: 2, ranks: 2, zero: 3, fault: { kind: 'throw', action: 'AR1', step: 1, replica: 1 } });
    await expect(runPipeline(cfg, { hostFactory: cpuHosts(), recvTimeoutMs: 2000 })).rejects.toThrow(/replica 1, rank 1, .*step 1: injected fault: the ZeRO-3 collectives of stage 1 threw/);
  });

  it('a dropped chunk of a ZeRO-2 reduce-scatter: its receiver names the chunk and the worker it waited for', async () => {
    const cfg = meshConfig({ schedule: '1f1b', dp: 3, ranks: 1, batchSize: 12, zero: 2, fault: { kind: 'drop-message', action: 'AR0', replica: 2 } });
    await expect(runPipeline(cfg, { hostFactory: cpuHosts(), recvTimeoutMs: 300 })).rejects.toThrow(/waited 0\.3 s for chunk 2 of 4 of the ZeRO-2 collectives of stage 0 \(step 0\) from worker 2/);
  });
});

describe('the bytes a worker\'s ring sends in a step, measured beside the formula', () => {
  it('ZeRO 0–3 (and ZeRO-3 per action), 1F1B and ZB-H1 at dp = 3 × p = 2: equal up to the chunks\' rounding (float64 here: 8 bytes a value)', async () => {
    for (const schedule of ['1f1b', 'zb-h1'] as const) {
      for (const v of [{ zero: 0 }, { zero: 1 }, { zero: 2 }, { zero: 3, reshard: 'step' }, { zero: 3, reshard: 'microbatch' }] as const) {
        const cfg = meshConfig({ schedule, dp: 3, ranks: 2, batchSize: 24, microbatches: 4, steps: 1, ...v });
        const report = await runPipeline(cfg, { hostFactory: cpuHosts(), recvTimeoutMs: 5000 });
        const ar = report.allReduce!;
        const formula = 2 * (ar.ringBytesFormula ?? 0);
        const collectives = report.timeline.intervals.filter((iv) => iv.op === 'collective' && (iv.coll === 'reduce-scatter' || iv.coll === 'all-gather') && iv.rank === 0 && (iv.replica ?? 0) === 0).length / 2;
        expect(formula, `${schedule} ${JSON.stringify(v)}`).toBeGreaterThan(0);
        // Each collective's chunks differ by at most one value from (N_d − 1)/N_d of the vector.
        expect(Math.abs(ar.ringBytesPerWorker - formula), `${schedule} ${JSON.stringify(v)}`).toBeLessThanOrEqual(8 * 2 * collectives);
        // A stage's collective time: with ZeRO-2/3, spread between the actions, the time of its ring collectives (each
        // replica's summed over the step, averaged), as the simulator counts it, not first-to-last over the step.
        if (v.zero >= 2) {
          for (let s = 0; s < 2; s++) {
            const ring = (r: number) => report.timeline.intervals.filter((iv) => iv.op === 'collective' && (iv.coll === 'reduce-scatter' || iv.coll === 'all-gather') && iv.stage === s && (iv.replica ?? 0) === r).reduce((a, iv) => a + iv.end - iv.start, 0);
            expect(ar.perStage[s].ms, `stage ${s}`).toBeCloseTo((ring(0) + ring(1) + ring(2)) / 3, 9);
          }
        }
      }
    }
  });
});

describe('the simulator plays ZeRO-2/3 as the runtime runs it', () => {
  it('the same collectives, read-backs, updates and writes on every worker, measured and simulated, for each setting; the simulated step no shorter than its compute', async () => {
    const count = (t: { intervals: readonly { op: string; coll?: string; rank: number; replica?: number; stage: number }[] }) => {
      const out: Record<string, number> = {};
      // The ring's exchanges and the worker's own read-back, update and write around them (the simulator plays their measured means).
      for (const iv of t.intervals) if (iv.op === 'collective' && iv.coll !== undefined && ['reduce-scatter', 'all-gather', 'gather-grads', 'shard-update', 'scatter-back'].includes(iv.coll)) out[`${iv.replica ?? 0}:${iv.rank}:${iv.stage}:${iv.coll}`] = (out[`${iv.replica ?? 0}:${iv.rank}:${iv.stage}:${iv.coll}`] ?? 0) + 1;
      return out;
    };
    const settings = [
      { schedule: '1f1b', zero: 2 },
      { schedule: 'zb-h1', zero: 3, reshard: 'step' },
      { schedule: '1f1b', zero: 3, reshard: 'microbatch', prefetch: false },
      { schedule: 'interleaved-1f1b', virtual: 2, zero: 3, reshard: 'microbatch' },
    ] as const;
    for (const v of settings) {
      const report = await runPipeline(meshConfig({ dp: 2, ranks: 2, microbatches: 4, steps: 2, ...v }), { hostFactory: cpuHosts(), recvTimeoutMs: 5000 });
      expect(count(report.simulatedTimeline), JSON.stringify(v)).toEqual(count(report.timeline));
      const sim = report.allReduce?.simulated;
      expect(sim, JSON.stringify(v)).toBeDefined();
      expect(sim!.stepMs).toBeGreaterThanOrEqual(report.makespanMs.simulated);
    }
  });
});
