/**
 * recovery = 'fewer' on the float64 CPU host (in-process workers), checkpoints
 * in memory: a run that fails at step k+1 after its checkpoint at k restarts on
 * a smaller mesh (the model re-cut onto fewer ranks, or a replica dropped) and
 * ends with the losses and weights of the uninterrupted run on the original
 * mesh, to 1e-12 relative (pipeline training equals one device; the re-cut
 * changes only the order of sums across replicas and micro-batches).
 */
import { describe, expect, it } from 'vitest';
import { CpuBackend } from '../nn/cpu-backend.ts';
import { runPipeline } from '../runtime/coordinator.ts';
import { InProcessRankHost } from '../runtime/executor/in-process-host.ts';
import type { RunReport } from '../runtime/report/report-types.ts';
import { defaultRunConfig, validateRunConfig, type RunConfig } from '../config/run-config.ts';
import { CheckpointStore } from './checkpoint-store.ts';
import { runDurably, type DurableRunner } from './durable-run.ts';
import { MemoryShelf } from './memory-shelf.ts';
import { fewerWorkers } from './recut.ts';
import { compareGrads } from '../nn/testing/gradcheck.ts';

/** The runner, counting the workers each attempt starts. */
function countingRunner(workers: number[]): DurableRunner {
  return (config, opts) => {
    workers.push(config.dp * (config.ep ?? 1) * (config.tp ?? 1) * config.ranks);
    return runPipeline(config, { ...opts, recvTimeoutMs: 5000, hostFactory: (w) => new InProcessRankHost(w, new CpuBackend()) });
  };
}

function config(over: Partial<RunConfig>): RunConfig {
  const cfg: RunConfig = { ...defaultRunConfig(), layers: 3, hidden: 6, batchSize: 16, microbatches: 2, ranks: 3, steps: 6, optimizer: 'adamw', lr: 0.01, lrSchedule: 'cosine', evalEvery: 0, checkpointEvery: 2, recovery: 'fewer', ...over };
  validateRunConfig(cfg);
  return cfg;
}

const REL = 1e-12;

/** |a − b| ≤ 1e-12 · max(|a|, |b|, 1e-300) for every loss and every weight value; both runs name the same weights. */
function expectSameRunRel(a: RunReport, b: RunReport): number {
  let worst = 0;
  const rel = (x: number, y: number) => (x === y ? 0 : Math.abs(x - y) / Math.max(Math.abs(x), Math.abs(y)));
  expect(a.losses).toHaveLength(b.losses.length);
  a.losses.forEach((l, i) => (worst = Math.max(worst, rel(l, b.losses[i]))));
  const names = Object.keys(b.weights ?? {}).sort();
  expect(names.length).toBeGreaterThan(0);
  expect(Object.keys(a.weights ?? {}).sort()).toEqual(names);
  for (const n of names) {
    const x = (a.weights ?? {})[n], y = (b.weights ?? {})[n];
    expect(x.length).toBe(y.length);
    for (let i = 0; i < x.length; i++) worst = Math.max(worst, rel(x[i], y[i]));
  }
  expect(worst).toBeLessThanOrEqual(REL);
  return worst;
}

/** The run with a fault at step 3 (after the checkpoint of step 2), recovered on fewer workers, beside the uninterrupted run of the same configuration. */
async function crashAndRecover(cfg: RunConfig, action: string) {
  const store = new CheckpointStore(new MemoryShelf());
  const full = await countingRunner([])(cfg, { readWeights: true });
  const workers: number[] = [];
  const report = await runDurably({ ...cfg, fault: { kind: 'throw', action, step: 3 } }, { readWeights: true }, { store }, countingRunner(workers));
  return { full, report, workers, store };
}

describe("recovery = 'fewer' on the CPU host", () => {
  for (const schedule of ['1f1b', 'zb-h1'] as const) {
    it(`${schedule}: p = 3 crashes at step 3, restarts from the checkpoint of step 2 re-cut onto p = 2: the losses and weights of the uninterrupted p = 3 run`, async () => {
      const cfg = config({ schedule });
      const { full, report, workers, store } = await crashAndRecover(cfg, '2F1');
      expect(workers).toEqual([3, 2]);
      expect(report.recovery).toMatchObject({ mode: 'fewer', failedAtStep: 3, fromStep: 2, stepsRedone: 1, meshBefore: { dp: 1, ranks: 3, workers: 3, schedule }, meshAfter: { dp: 1, ranks: 2, workers: 2, schedule } });
      expect(report.recovery?.recut).toMatch(/^re-cut onto 2 ranks: the model's 4 blocks on 2 stages$/);
      expect(report.config).toMatchObject({ ranks: 2, dp: 1, schedule, recovery: 'fewer' });
      expect(report.timeline).toMatchObject({ ranks: 2, stages: 2 });
      expectSameRunRel(report, full);
      // The saves after the recovery are stored under the run's own configuration (a resume continues it).
      expect((await store.list(cfg)).map((c) => c.step)).toEqual([2, 4, 6]);
    });
  }

  it('pipedream-2bw: p = 3 crashes inside its stream, restarts from its checkpoint inside it re-cut onto p = 2, the older weight version loaded by name: the losses and weights of the uninterrupted p = 3 stream', async () => {
    const cfg = config({ schedule: 'pipedream-2bw', microbatches: 4 });
    const store = new CheckpointStore(new MemoryShelf());
    const full = await countingRunner([])(cfg, { readWeights: true });
    const workers: number[] = [];
    // Micro-batch 13 of the stream's 6 × 4: in its fourth step, after the save of step 2.
    const report = await runDurably({ ...cfg, fault: { kind: 'throw', action: '2B13', step: 0 } }, { readWeights: true }, { store }, countingRunner(workers));
    expect(workers).toEqual([3, 2]);
    expect(report.recovery).toMatchObject({ mode: 'fewer', fromStep: 2, meshBefore: { ranks: 3, schedule: 'pipedream-2bw' }, meshAfter: { ranks: 2, schedule: 'pipedream-2bw' } });
    expectSameRunRel(report, full);
  });

  it('a crash before the first checkpoint (checkpointEvery 50) restarts from step 0 on p = 2: the losses and weights of the uninterrupted p = 3 run', async () => {
    const cfg = config({ checkpointEvery: 50 });
    const { full, report, workers } = await crashAndRecover(cfg, '2F1');
    expect(workers).toEqual([3, 2]);
    expect(report.recovery).toMatchObject({ mode: 'fewer', failedAtStep: 3, fromStep: 0, stepsRedone: 3, meshAfter: { dp: 1, ranks: 2 } });
    expectSameRunRel(report, full);
  });

  it('interleaved-1f1b, p = 3, v = 2, 3 micro-batches, re-cut onto 2 ranks: interleaving stays (any m has an order), v = 2 on 4 stages; the losses and weights of the uninterrupted run', async () => {
    const cfg = config({ schedule: 'interleaved-1f1b', virtual: 2, layers: 5, microbatches: 3, batchSize: 12 });
    const { full, report, workers } = await crashAndRecover(cfg, '4F1');
    expect(workers).toEqual([3, 2]);
    expect(report.recovery).toMatchObject({ meshBefore: { ranks: 3, virtual: 2, schedule: 'interleaved-1f1b' }, meshAfter: { ranks: 2, virtual: 2, schedule: 'interleaved-1f1b' } });
    expect(report.recovery?.recut).toMatch(/^re-cut onto 2 ranks: the model's 6 blocks on 4 stages$/);
    expectSameRunRel(report, full);
  });

  it('dp 2 × p 2 with ZeRO-1 crashes at step 3: the dead worker\'s replica is dropped (dp 1 × p 2, ZeRO-1 off): the losses and weights of the uninterrupted dp 2 run', async () => {
    const cfg = config({ ranks: 2, dp: 2, zero: 1 });
    const { full, report, workers } = await crashAndRecover(cfg, '1B1');
    expect(workers).toEqual([4, 2]);
    expect(report.recovery).toMatchObject({ mode: 'fewer', meshBefore: { dp: 2, ranks: 2, workers: 4 }, meshAfter: { dp: 1, ranks: 2, workers: 2 } });
    expect(report.recovery?.recut).toMatch(/replica dropped: 2 → 1 replica of the same 2-rank pipeline.*ZeRO-1 off/);
    expect(report.config).toMatchObject({ dp: 1, zero: 0, ranks: 2 });
    expectSameRunRel(report, full);
  });

  it('dp 3 × p 2 with ZeRO-1 → dp 2 × p 2 with ZeRO-1: the joined optimizer state re-sharded over two replicas by name; the losses and weights of the uninterrupted dp 3 run', async () => {
    const cfg = config({ ranks: 2, dp: 3, zero: 1, batchSize: 12 });
    const { full, report, workers } = await crashAndRecover(cfg, '0B0');
    expect(workers).toEqual([6, 4]);
    expect(report.recovery).toMatchObject({ meshBefore: { dp: 3, ranks: 2 }, meshAfter: { dp: 2, ranks: 2, workers: 4 } });
    expect(report.config).toMatchObject({ dp: 2, zero: 1 });
    expect(report.recovery?.recut).not.toMatch(/ZeRO-1 off/);
    expectSameRunRel(report, full);
  });

  it('dp 3 × p 2 where dropping a replica leaves the batch indivisible: ranks − 1 in every replica (dp 3 × p 1), saying why', async () => {
    // 18 rows: dp 3 × 2 micro-batches divides them, dp 2 × 2 does not.
    const cfg = config({ ranks: 2, dp: 3, batchSize: 18 });
    const { full, report, workers } = await crashAndRecover(cfg, '1F0');
    expect(workers).toEqual([6, 3]);
    expect(report.recovery).toMatchObject({ meshBefore: { dp: 3, ranks: 2 }, meshAfter: { dp: 3, ranks: 1, workers: 3 } });
    expect(report.recovery?.recut).toMatch(/re-cut onto 1 rank in each of the 3 replicas \(dropping a replica would leave batchSize 18 not divisible by dp × microbatches = 2 × 2\)/);
    expectSameRunRel(report, full);
  });

  it('tp 2 × p 2 crashes at step 3: the tp group halves (tp 1 × p 2), the whole-tensor checkpoint cut onto the new split; the losses and weights of the uninterrupted tp 2 run', async () => {
    const cfg = config({ ranks: 2, tp: 2 });
    const { full, report, workers } = await crashAndRecover(cfg, '1F1');
    expect(workers).toEqual([4, 2]);
    expect(report.recovery).toMatchObject({ mode: 'fewer', meshBefore: { dp: 1, tp: 2, ranks: 2, workers: 4 }, meshAfter: { dp: 1, ranks: 2, workers: 2 } });
    expect(report.recovery?.recut).toMatch(/^each stage's layers re-split over 1 tensor-parallel worker instead of 2: the same 2-rank pipeline$/);
    expect(report.config).toMatchObject({ tp: 1, ranks: 2 });
    expectSameRunRel(report, full);
  });

  it('MoE GPT ep 2 × p 2 crashes at step 3: the ep group halves (ep 1 × p 2), the checkpoint’s whole experts cut onto the new sharing; the losses and weights of the uninterrupted ep 2 run', async () => {
    const cfg = config({ dataset: 'names', model: 'gpt', layers: 2, heads: 2, width: 6, blockSize: 16, ranks: 2, batchSize: 8, microbatches: 2, experts: 4, topK: 2, capacityFactor: 1, ep: 2 });
    const { full, report, workers } = await crashAndRecover(cfg, '1F1');
    expect(workers).toEqual([4, 2]);
    expect(report.recovery).toMatchObject({ mode: 'fewer', meshBefore: { dp: 1, ep: 2, ranks: 2, workers: 4 }, meshAfter: { dp: 1, ranks: 2, workers: 2 } });
    expect(report.recovery?.recut).toMatch(/^each stage's experts re-shared over 1 expert-parallel worker instead of 2: the same 2-rank pipeline$/);
    expect(report.config.ep).toBeUndefined();
    expect(fewerWorkers({ ...cfg, ep: 4, experts: 4, batchSize: 16 }).config.ep).toBe(2);
    // The ep workers sum the dense gradients in another order than one worker computes them: the keys' biases, whose
    // gradient is zero but for rounding (attention is blind to them), differ entry by entry at 1e-15; each tensor's
    // relative error (the one-device equality tests' measure) is what stays at 1e-12.
    report.losses.forEach((l, i) => expect(Math.abs(l - full.losses[i])).toBeLessThan(1e-12 * l));
    for (const [n, v] of Object.entries(full.weights ?? {})) expect(compareGrads((report.weights ?? {})[n], v).relErr, n).toBeLessThan(1e-12);
  });

  it('sequence parallelism survives a tp group halved to 2 and is turned off, saying so, when it halves to one worker', () => {
    const gpt: RunConfig = { ...defaultRunConfig(), dataset: 'names', model: 'gpt', layers: 3, heads: 4, width: 16, blockSize: 16, ranks: 2, batchSize: 8, microbatches: 2, sequenceParallel: true };
    const four = fewerWorkers({ ...gpt, tp: 4 });
    expect(four.config).toMatchObject({ tp: 2, sequenceParallel: true });
    const two = fewerWorkers({ ...gpt, tp: 2 });
    expect(two.config.tp).toBe(1);
    expect(two.config.sequenceParallel).toBeUndefined();
    expect(two.how).toMatch(/instead of 2, sequence parallelism off: the same 2-rank pipeline/);
  });

  it('GPT dp 2 × tp 2 × p 1 with ZeRO-1 and recovery = fresh: the same mesh restarts from the checkpoint (tp pieces and ZeRO shards joined by name, cut again)', async () => {
    const base = config({});
    const cfg: RunConfig = { ...base, dataset: 'names', model: 'gpt', layers: 2, heads: 2, width: 8, blockSize: 16, ranks: 1, dp: 2, tp: 2, zero: 1, batchSize: 8, recovery: 'fresh' };
    validateRunConfig(cfg);
    const { full, report, workers } = await crashAndRecover(cfg, '0B1');
    expect(workers).toEqual([4, 4]);
    expect(report.recovery).toMatchObject({ mode: 'fresh', fromStep: 2 });
    expectSameRunRel(report, full);
  });

  it('one worker (ranks = 1, dp = 1): no smaller mesh, the run ends naming the failure and why', async () => {
    const store = new CheckpointStore(new MemoryShelf());
    const cfg = config({ ranks: 1, fault: { kind: 'throw', action: '0B1', step: 3 } });
    await expect(runDurably(cfg, {}, { store }, countingRunner([]))).rejects.toThrow(
      /^the run failed at step 3 \(.*injected fault.*\); recovery = 'fewer' cannot restart it: no smaller mesh to recover on: the run has ranks = 1 and dp = 1, one worker$/,
    );
  });

  it("two failures with recovery = 'fewer': 3 ranks → 2 → 1, each recovery one mesh smaller; the uninterrupted run's losses and weights", async () => {
    const store = new CheckpointStore(new MemoryShelf());
    const cfg = config({ steps: 8 });
    const full = await countingRunner([])({ ...cfg }, { readWeights: true });
    const workers: number[] = [];
    const counting = countingRunner(workers);
    let calls = 0;
    // The first attempt fails in step 3 (checkpoint 2), the second in step 5 (checkpoint 4), on its last rank's stage.
    const twice: DurableRunner = (c, o) => {
      calls++;
      const last = c.ranks - 1;
      return counting(calls <= 2 ? { ...c, fault: { kind: 'throw', action: `${last}B1`, step: calls === 1 ? 3 : 5 } } : c, o);
    };
    const report = await runDurably(cfg, { readWeights: true }, { store }, twice);
    expect(workers).toEqual([3, 2, 1]);
    expect(report.recoveries?.map((r) => [r.meshBefore.ranks, r.meshAfter.ranks, r.fromStep])).toEqual([
      [3, 2, 2],
      [2, 1, 4],
    ]);
    expect(report.config.ranks).toBe(1);
    expectSameRunRel(report, full);
  });

  it("recovery = 'fresh' (the default) keeps the mesh on fresh workers", async () => {
    const { recovery: _r, ...cfg } = config({});
    const { full, report, workers } = await crashAndRecover(cfg, '2F1');
    expect(workers).toEqual([3, 3]);
    expect(report.recovery).toMatchObject({ mode: 'fresh', meshBefore: { ranks: 3 }, meshAfter: { ranks: 3 } });
    expect(report.recovery?.recut).toBeUndefined();
    expectSameRunRel(report, full);
  });
});
