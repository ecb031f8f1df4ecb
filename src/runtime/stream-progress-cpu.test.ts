/**
 * A stream's progress while it runs, and a Stop that ends it at a step boundary (stream-end.ts).
 *
 * Progress: (PipeDream, PipeDream-2BW: one window of all the run's steps): the worker holding
 * stage 0 of replica 0 tells each step done as its last micro-batch's backward ends, and the workers holding the
 * last stage each step's losses (stream-news.ts), on the CPU reference in-process, before any worker has finished
 * the window; synchronous schedules are told nothing (their onStep comes every step).
 */
import { describe, expect, it } from 'vitest';
import { CpuBackend } from '../nn/cpu-backend.ts';
import { defaultRunConfig, type RunConfig } from '../config/run-config.ts';
import { runPipeline, type RunOptions } from './coordinator.ts';
import { InProcessRankHost } from './executor/in-process-host.ts';
import type { StepResult } from './executor/rank-executor.ts';
import type { StreamNews } from './executor/rank-host.ts';
import { relErrByName } from '../util/rel-err.ts';

/** In-process hosts that note when each finished its window. */
function watchedHosts() {
  const finished: number[] = [];
  const hostFactory = (w: number) => {
    const h = new InProcessRankHost(w, new CpuBackend());
    const step = h.step.bind(h);
    h.step = (s: number, onStream?: StreamNews): Promise<StepResult> =>
      step(s, onStream).then((r) => {
        finished.push(w);
        return r;
      });
    return h;
  };
  return { finished, hostFactory };
}

function small(over: Partial<RunConfig>): RunConfig {
  return { ...defaultRunConfig(), layers: 3, hidden: 6, batchSize: 16, steps: 4, lr: 0.01, evalEvery: 0, ...over };
}

describe('a stream tells its steps done while it runs', () => {
  it.each([
    ['pipedream-2bw', { ranks: 2, microbatches: 2 }],
    ['pipedream-2bw', { ranks: 4, microbatches: 4, steps: 3 }],
    ['pipedream', { ranks: 3, microbatches: 4, steps: 3 }],
    ['pipedream-2bw', { ranks: 2, dp: 2, microbatches: 2, batchSize: 32 }],
    ['pipedream-2bw', { ranks: 2, tp: 2, microbatches: 2 }],
  ] as const)('%s %o', async (schedule, over) => {
    const cfg = small({ schedule, ...over });
    const { finished, hostFactory } = watchedHosts();
    const told: { stepsDone: number; steps: number; elapsedMs: number; finishedBefore: number; stepsSeen: number }[] = [];
    const lossesTold: { step: number; steps: number; loss: number; elapsedMs: number; finishedBefore: number; stepsSeen: number }[] = [];
    let stepsSeen = 0;
    const report = await runPipeline(cfg, {
      hostFactory,
      onStep: () => void stepsSeen++,
      onStreamProgress: (p) => told.push({ ...p, finishedBefore: finished.length, stepsSeen }),
      onStreamLoss: (p) => lossesTold.push({ ...p, finishedBefore: finished.length, stepsSeen }),
    });
    // Every step's loss, in order, the very number the report (and onStep at the end) gives: every replica's share summed.
    expect(lossesTold.map((t) => [t.step, t.steps, t.loss])).toEqual(report.losses.map((loss, k) => [k, cfg.steps, loss]));
    for (const t of lossesTold.slice(0, -1)) expect([t.finishedBefore, t.stepsSeen]).toEqual([0, 0]);
    // Once per step, in order, from one worker (replicas and tp workers tell nothing).
    expect(told.map((t) => t.stepsDone)).toEqual(Array.from({ length: cfg.steps }, (_, k) => k + 1));
    for (const t of told) expect(t.steps).toBe(cfg.steps);
    for (let k = 1; k < told.length; k++) expect(told[k].elapsedMs).toBeGreaterThanOrEqual(told[k - 1].elapsedMs);
    // While the window runs: before the last step, no worker has finished it, and no onStep has come yet.
    for (const t of told.slice(0, -1)) expect([t.finishedBefore, t.stepsSeen]).toEqual([0, 0]);
    expect(stepsSeen).toBe(cfg.steps);
    expect(report.losses).toHaveLength(cfg.steps);
  });

  it('only the workers asked get a listener: the stage-0 worker for progress, the last stage\'s (one per replica) for losses', async () => {
    const cfg = small({ schedule: 'pipedream-2bw', ranks: 2, dp: 2, microbatches: 2, batchSize: 32, steps: 2 });
    const heard = async (opts: Omit<RunOptions, 'hostFactory'>) => {
      const got: number[] = [];
      await runPipeline(cfg, {
        ...opts,
        hostFactory: (w) => {
          const h = new InProcessRankHost(w, new CpuBackend());
          const step = h.step.bind(h);
          h.step = (s: number, onStream?: StreamNews) => {
            if (onStream) got.push(w);
            return step(s, onStream);
          };
          return h;
        },
      });
      return got.sort();
    };
    // Workers: replica d, rank r is worker 2d + r; stage 0 on rank 0, the last stage on rank 1.
    expect(await heard({ onStreamProgress: () => {} })).toEqual([0]);
    expect(await heard({ onStreamLoss: () => {} })).toEqual([1, 3]);
    expect(await heard({ onStreamProgress: () => {}, onStreamLoss: () => {} })).toEqual([0, 1, 3]);
    expect(await heard({})).toEqual([]);
  });

  it('a synchronous schedule is told nothing: its onStep comes after every step', async () => {
    const told: number[] = [];
    await runPipeline(small({ schedule: '1f1b', ranks: 2, microbatches: 2, steps: 2 }), {
      hostFactory: (w) => new InProcessRankHost(w, new CpuBackend()),
      onStreamProgress: (p) => told.push(p.stepsDone),
      onStreamLoss: (p) => told.push(p.loss),
    });
    expect(told).toEqual([]);
  });
});

describe('a Stop ends a stream at a step boundary and keeps its steps: the run of that many steps, exactly', () => {
  it.each([
    ['pipedream-2bw', { ranks: 2, microbatches: 2 }],
    ['pipedream-2bw', { ranks: 4, microbatches: 4 }],
    ['pipedream', { ranks: 3, microbatches: 4 }],
    ['pipedream-2bw', { ranks: 2, dp: 2, microbatches: 2, batchSize: 32 }],
    ['pipedream-2bw', { ranks: 2, tp: 2, microbatches: 2 }],
  ] as const)('%s %o', async (schedule, over) => {
    // A constant learning rate: the first K steps of a longer run are then a K-step run.
    const cfg = small({ schedule, steps: 10, lrSchedule: 'constant', ...over });
    const hostFactory = (w: number) => new InProcessRankHost(w, new CpuBackend());
    const stop = new AbortController();
    const lossesTold: number[] = [];
    const report = await runPipeline(cfg, { hostFactory, readWeights: true, signal: stop.signal, onStreamProgress: (p) => p.stepsDone === 2 && stop.abort(), onStreamLoss: (p) => lossesTold.push(p.loss) });
    const kept = report.losses.length;
    // The losses told while it ran are the kept steps' (a step past the cut is never told).
    expect(lossesTold).toEqual(report.losses.slice(0, lossesTold.length));
    expect(lossesTold.length).toBeLessThanOrEqual(kept);
    expect(kept).toBeGreaterThanOrEqual(2);
    expect(kept).toBeLessThan(cfg.steps);
    // Its report is of the kept steps: their schedule, and every action of theirs measured (on every worker).
    expect(report.schedule.microbatches).toBe(kept * cfg.microbatches);
    const workers = (cfg.dp ?? 1) * (cfg.tp ?? 1);
    expect(report.timeline.intervals.filter((iv) => iv.op === 'F' || iv.op === 'B')).toHaveLength(workers * cfg.ranks * kept * cfg.microbatches * 2);
    if ((cfg.dp ?? 1) > 1) {
      expect(report.allReduce?.ringBytesPerWorker).toBeCloseTo(2 * (report.allReduce?.ringBytesFormula ?? NaN), 6);
      // Each stage's simulated all-reduce is one block's of the kept ones (not of the configuration's 10).
      const sim = report.simulatedTimeline.intervals.filter((iv) => iv.op === 'collective' && (iv.replica ?? 0) === 0);
      for (let st = 0; st < cfg.ranks; st++) {
        const own = sim.filter((iv) => iv.stage === st).reduce((t, iv) => t + (iv.end - iv.start), 0);
        expect(report.allReduce?.simulated?.perStageMs[st], `stage ${st}`).toBeCloseTo(own / kept, 9);
      }
    }
    // The same losses and weights as a run of `kept` steps.
    const short = await runPipeline({ ...cfg, steps: kept }, { hostFactory, readWeights: true });
    expect(report.losses).toEqual(short.losses);
    expect(short.weights, 'the shorter run read its weights').toBeDefined();
    for (const [n, e] of Object.entries(relErrByName(report.weights, short.weights!))) expect(e, n).toBeLessThanOrEqual(1e-15);
  });
});
