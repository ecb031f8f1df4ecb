/**
 * Durable runs on the float64 CPU host (in-process workers), with checkpoints
 * in memory: saves every N steps and at stop, resume from the last one, and
 * recovery after a failure, each compared EXACTLY with the uninterrupted run.
 */
import { describe, expect, it } from 'vitest';
import { CpuBackend } from '../nn/cpu-backend.ts';
import { runPipeline } from '../runtime/coordinator.ts';
import { InProcessRankHost } from '../runtime/executor/in-process-host.ts';
import { defaultRunConfig, validateRunConfig, type RunConfig } from '../config/run-config.ts';
import { CheckpointStore } from './checkpoint-store.ts';
import { MAX_RECOVERIES, runDurably, type DurableRunner } from './durable-run.ts';
import { MemoryShelf } from './memory-shelf.ts';
import { expectSameRun } from './testing/same-run.ts';

const cpuRunner: DurableRunner = (config, opts) => runPipeline(config, { ...opts, recvTimeoutMs: 5000, hostFactory: (w) => new InProcessRankHost(w, new CpuBackend()) });

function config(over: Partial<RunConfig>): RunConfig {
  const cfg: RunConfig = { ...defaultRunConfig(), layers: 3, hidden: 6, batchSize: 16, microbatches: 2, ranks: 2, steps: 6, optimizer: 'adamw', lr: 0.01, lrSchedule: 'cosine', evalEvery: 0, ...over };
  validateRunConfig(cfg);
  return cfg;
}

describe('durable runs on the CPU host', () => {
  it('saves every checkpointEvery steps and at the end, beside training; the report counts the saves and the state reads', async () => {
    const store = new CheckpointStore(new MemoryShelf());
    const cfg = config({ checkpointEvery: 2, steps: 5 });
    const report = await runDurably(cfg, {}, { store }, cpuRunner);
    expect(report.checkpointSaves?.steps).toEqual([2, 4, 5]);
    expect(report.checkpointSaves?.error).toBeUndefined();
    expect(report.checkpointSaves?.bytes).toBeGreaterThan(0);
    expect(report.stateReads?.count).toBe(3);
    expect((await store.list(cfg)).map((c) => c.step)).toEqual([2, 4, 5]);
    const last = await store.load(cfg);
    expect(last.losses).toEqual(report.losses);
  });

  it('checkpointEvery = 0 saves nothing and reads no state', async () => {
    const store = new CheckpointStore(new MemoryShelf());
    const report = await runDurably(config({ checkpointEvery: 0, steps: 2 }), {}, { store }, cpuRunner);
    expect(report.checkpointSaves).toBeUndefined();
    expect(report.stateReads).toBeUndefined();
    expect(await store.list()).toEqual([]);
  });

  it('stop after k steps, then resume from the stored checkpoint: the same losses and weights as 2k steps uninterrupted', async () => {
    const store = new CheckpointStore(new MemoryShelf());
    const cfg = config({ checkpointEvery: 50, schedule: 'zb-h1' });
    const full = await cpuRunner(cfg, { readWeights: true });
    const stop = new AbortController();
    const first = await runDurably(cfg, { signal: stop.signal, onStep: (p) => (p.step === 2 ? stop.abort() : undefined) }, { store }, cpuRunner);
    expect(first.losses).toHaveLength(3);
    expect(first.checkpointSaves?.steps).toEqual([3]);
    const resumed = await runDurably(cfg, { readWeights: true }, { store, resume: true }, cpuRunner);
    expect(resumed.resumedFrom).toBe(3);
    expectSameRun(resumed, full);
  });

  it('resume with no checkpoint stored, or with the last one at the run\'s end, is refused, saying so', async () => {
    const store = new CheckpointStore(new MemoryShelf());
    const cfg = config({ steps: 2 });
    await expect(runDurably(cfg, {}, { store, resume: true }, cpuRunner)).rejects.toThrow(/no checkpoint is stored for this configuration/);
    await runDurably(cfg, {}, { store }, cpuRunner);
    await expect(runDurably(cfg, {}, { store, resume: true }, cpuRunner)).rejects.toThrow(/^nothing to resume: the last checkpoint of this configuration is of step 2, its last \(steps = 2\)$/);
  });

  it('a failure at step k+1 recovers from the checkpoint at k: steps redone counted, final losses and weights equal the uninterrupted run', async () => {
    for (const mesh of [{ dp: 1, zero: 0 as const }, { dp: 2, zero: 1 as const }]) {
      const store = new CheckpointStore(new MemoryShelf());
      const cfg = config({ checkpointEvery: 2, ...mesh });
      const full = await cpuRunner(cfg, { readWeights: true });
      const recoveries: { failure: string; fromStep: number }[] = [];
      const report = await runDurably({ ...cfg, fault: { kind: 'throw', action: '1B1', step: 3 } }, { readWeights: true }, { store, onRecovery: (r) => recoveries.push(r) }, cpuRunner);
      expect(recoveries).toEqual([{ failure: expect.stringMatching(/injected fault/), fromStep: 2, mesh: expect.objectContaining({ dp: mesh.dp, ranks: 2 }) }]);
      expect(report.recovery).toMatchObject({ failedAtStep: 3, fromStep: 2, stepsRedone: 1, mode: 'fresh', meshBefore: { dp: mesh.dp, ranks: 2 }, meshAfter: { dp: mesh.dp, ranks: 2 } });
      expect(report.recovery?.recoveryMs).toBeGreaterThan(0);
      expectSameRun(report, full);
    }
  });

  it('a second failure inside the recovery ends the run with a message naming both', async () => {
    const store = new CheckpointStore(new MemoryShelf());
    const cfg = config({ checkpointEvery: 2, fault: { kind: 'throw', action: '1B1', step: 3 } });
    let calls = 0;
    const failingAgain: DurableRunner = (c, o) => (++calls === 1 ? cpuRunner(c, o) : cpuRunner({ ...c, fault: { kind: 'throw', action: '0F0', step: 2 } }, o));
    await expect(runDurably(cfg, {}, { store }, failingAgain)).rejects.toThrow(
      /^the run failed at step 3 \(.*injected fault: the stage kernel threw.*\); its recovery from step 2 failed too: .*injected fault: the stage kernel threw/,
    );
  });

  it('a recovered run that fails again after steps of its own recovers again: two recoveries, the uninterrupted run’s losses and weights', async () => {
    const store = new CheckpointStore(new MemoryShelf());
    const cfg = config({ checkpointEvery: 2, steps: 8 });
    const full = await cpuRunner(cfg, { readWeights: true });
    // Call 1 fails in step 3 (checkpoint 2), call 2 in step 5 (checkpoint 4), call 3 runs to the end.
    let calls = 0;
    const twice: DurableRunner = (c, o) => {
      calls++;
      return cpuRunner(calls <= 2 ? { ...c, fault: { kind: 'throw', action: '1B1', step: calls === 1 ? 3 : 5 } } : c, o);
    };
    const report = await runDurably(cfg, { readWeights: true }, { store }, twice);
    expect(calls).toBe(3);
    expect(report.recoveries?.map((r) => [r.failedAtStep, r.fromStep, r.stepsRedone])).toEqual([
      [3, 2, 1],
      [5, 4, 1],
    ]);
    expect(report.recovery).toBe(report.recoveries?.[1]);
    for (const r of report.recoveries ?? []) expect(r.recoveryMs).toBeGreaterThan(0);
    expectSameRun(report, full);
  });

  it(`a run that keeps failing after progress recovers ${MAX_RECOVERIES} times, then ends naming every failure`, async () => {
    const store = new CheckpointStore(new MemoryShelf());
    const cfg = config({ checkpointEvery: 1, steps: 8 });
    // Every call fails in the step after the one it starts from (step 2, 3, 4, 5): each recovery makes progress.
    let calls = 0;
    const always: DurableRunner = (c, o) => cpuRunner({ ...c, fault: { kind: 'throw', action: '1B1', step: 2 + calls++ } }, o);
    const err = await runDurably(cfg, {}, { store }, always).then(
      () => null,
      (e: unknown) => e as Error,
    );
    expect(calls).toBe(MAX_RECOVERIES + 1);
    expect(err?.message).toMatch(
      new RegExp(`^the run failed at step 2 \\(.*\\); the run failed at step 3 \\(.*\\); the run failed at step 4 \\(.*\\); its recovery 3 from step 4 failed too \\(${MAX_RECOVERIES} recoveries are the most a run makes\\): .*injected fault`),
    );
  });

  it('a failure before the first checkpoint recovers from step 0 (the start is a checkpoint for free): the uninterrupted run, exactly', async () => {
    // The case: a 6-step run, a crash in step 3, checkpointEvery at its default (50): no checkpoint yet.
    for (const over of [{}, { checkpointEvery: 0 }, { checkpointEvery: 50, dp: 2, zero: 1 as const }]) {
      const store = new CheckpointStore(new MemoryShelf());
      const cfg = config(over);
      const full = await cpuRunner(cfg, { readWeights: true });
      const recoveries: { fromStep: number }[] = [];
      const report = await runDurably({ ...cfg, fault: { kind: 'throw', action: '1B1', step: 3 } }, { readWeights: true }, { store, onRecovery: (r) => recoveries.push(r) }, cpuRunner);
      expect(recoveries).toEqual([expect.objectContaining({ fromStep: 0 })]);
      expect(report.recovery).toMatchObject({ failedAtStep: 3, fromStep: 0, stepsRedone: 3 });
      expect(report.losses).toHaveLength(6);
      expectSameRun(report, full);
    }
  });

  it('a PipeDream-2BW stream saves inside the stream: a failure in it recovers from its last checkpoint, and a stop resumes there; the uninterrupted run, exactly', async () => {
    const cfg = config({ schedule: 'pipedream-2bw', checkpointEvery: 2, steps: 8 });
    const full = await cpuRunner(cfg, { readWeights: true });
    let store = new CheckpointStore(new MemoryShelf());
    // Micro-batch 11 of the stream's 8 × 2: in its sixth step, after the saves of steps 2 and 4 (the last one perhaps not yet whole).
    const report = await runDurably({ ...cfg, fault: { kind: 'throw', action: '1B11', step: 0 } }, { readWeights: true }, { store }, cpuRunner);
    expect([2, 4]).toContain(report.recovery?.fromStep);
    expect(report.recovery?.failedAtStep).toBeGreaterThanOrEqual(4);
    expect(report.recovery?.stepsRedone).toBe((report.recovery?.failedAtStep ?? 0) - (report.recovery?.fromStep ?? 0));
    expect(report.losses).toHaveLength(8);
    expectSameRun(report, full);

    // Stopped during the stream (at a step boundary), then resumed from the state saved at the stop.
    store = new CheckpointStore(new MemoryShelf());
    const stop = new AbortController();
    const first = await runDurably(cfg, { signal: stop.signal, onStreamProgress: (p) => (p.stepsDone >= 3 ? stop.abort() : undefined) }, { store }, cpuRunner);
    expect(first.losses.length).toBeGreaterThanOrEqual(3);
    expect(first.losses.length).toBeLessThan(8);
    expect(first.checkpointSaves?.steps.at(-1)).toBe(first.losses.length);
    const resumed = await runDurably(cfg, { readWeights: true }, { store, resume: true }, cpuRunner);
    expect(resumed.resumedFrom).toBe(first.losses.length);
    expectSameRun(resumed, full);
  });

  it('a stream that fails before its first checkpoint (PipeDream-2BW), or PipeDream, which saves none inside its stream, recovers from step 0, its steps done while it ran its progress: the uninterrupted run, exactly', async () => {
    for (const schedule of ['pipedream-2bw', 'pipedream'] as const) {
      const store = new CheckpointStore(new MemoryShelf());
      const cfg = config({ schedule, lrSchedule: 'constant' });
      const full = await cpuRunner(cfg, { readWeights: true });
      const recoveries: { fromStep: number }[] = [];
      // Micro-batch 9 of the stream's 6 × 2: in its fifth step, after four were done.
      const report = await runDurably({ ...cfg, fault: { kind: 'throw', action: '1B9', step: 0 } }, { readWeights: true }, { store, onRecovery: (r) => recoveries.push(r) }, cpuRunner);
      expect(recoveries, schedule).toEqual([expect.objectContaining({ fromStep: 0 })]);
      expect(report.recovery?.fromStep).toBe(0);
      expect(report.recovery?.failedAtStep).toBeGreaterThanOrEqual(3);
      expect(report.recovery?.stepsRedone).toBe(report.recovery?.failedAtStep);
      expect(report.losses).toHaveLength(6);
      expectSameRun(report, full);
    }
  });

  it('a failure before any step is not recovered: it ends the run as it is', async () => {
    const store = new CheckpointStore(new MemoryShelf());
    const cfg = config({ checkpointEvery: 2, fault: { kind: 'throw', action: '0F0', step: 0 } });
    await expect(runDurably(cfg, {}, { store }, cpuRunner)).rejects.toThrow(/injected fault/);
  });
});
