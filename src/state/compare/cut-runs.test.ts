/**
 * Running the Plan panel's cuts: each distinct cut trains the configuration
 * (here on the in-process float64 CPU runtime standing in for the browser's
 * workers), one after the other in a 'planning' session, and the store keeps
 * each run's mean makespan, bubble and the stages it really cut; "Use this
 * cut" sets a valid configuration; another session refuses the whole thing.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { CpuBackend } from '../../nn/cpu-backend.ts';
import type { BrowserRunOptions } from '../../runtime/browser-run.ts';
import { runPipeline } from '../../runtime/coordinator.ts';
import { InProcessRankHost } from '../../runtime/executor/in-process-host.ts';
import { defaultRunConfig, type RunConfig } from '../../config/run-config.ts';
import type { BlockRange } from '../../nn/partition.ts';
import { applyCut, cutMeasured, cutMismatch, cutRunConfig, cutRunKey, distinctCuts, runEachCut, stopCutRuns } from './cut-runs.ts';
import { beginSession, endSession, usePipeLab, type SessionControl } from '../store/store.ts';

const runs: RunConfig[] = [];
vi.mock('../../runtime/browser-run.ts', () => ({
  runInBrowser: (cfg: RunConfig, opts: BrowserRunOptions = {}) => {
    runs.push(cfg);
    return runPipeline(cfg, { ...opts, hostFactory: (r) => new InProcessRankHost(r, new CpuBackend()) });
  },
}));

const names: RunConfig = { ...defaultRunConfig(), dataset: 'names', model: 'char-mlp', context: 3, embedDim: 8, layers: 3, hidden: 16, batchSize: 16, microbatches: 4, steps: 300, evalEvery: 0, ranks: 3 };

function ready(): void {
  runs.length = 0;
  usePipeLab.setState({ webgpu: { state: 'available', adapter: 'test' }, session: 'idle', control: null, cutRuns: {}, config: defaultRunConfig(), configProblem: null });
}

afterEach(ready);

describe('running each cut', () => {
  const cuts: BlockRange[][] = [
    [[0, 1], [1, 2], [2, 4]],
    [[0, 1], [1, 3], [3, 4]],
    [[0, 2], [2, 3], [3, 4]],
  ];

  it('runs each distinct cut once, for min(steps, 8) steps, and keeps its measured makespan, bubble and stages', async () => {
    ready();
    const sessions: string[] = [];
    const unsub = usePipeLab.subscribe((s) => sessions.push(s.session));
    await runEachCut(names, [...cuts, cuts[1]]);
    unsub();
    expect(runs.map((c) => c.cut)).toEqual([[1, 1, 2], [1, 2, 1], [2, 1, 1]]);
    expect(runs.every((c) => c.partition === 'cut' && c.steps === 8 && c.evalEvery === 0)).toBe(true);
    expect(sessions).toContain('planning');
    expect(usePipeLab.getState().session).toBe('idle');
    for (const ranges of cuts) {
      const m = usePipeLab.getState().cutRuns[cutRunKey(names, ranges)];
      expect(m.status, m.error ?? '').toBe('done');
      expect(m.stageBlocks).toEqual(ranges);
      expect(m.makespanMs).toBeGreaterThan(0);
      expect(m.bubble).toBeGreaterThanOrEqual(0);
      expect(m.bubble).toBeLessThan(1);
      expect(m.meanOf).toBe(7);
    }
  }, 60_000);

  it('a stream (PipeDream-2BW) keeps its window ÷ the steps it ran, all of them: no "stopped early" for a whole stream', async () => {
    ready();
    const stream: RunConfig = { ...names, schedule: 'pipedream-2bw', microbatches: 4 };
    const ranges = cuts[0];
    await runEachCut(stream, [ranges]);
    const m = usePipeLab.getState().cutRuns[cutRunKey(stream, ranges)];
    expect(m.status, m.error ?? '').toBe('done');
    expect(m.meanOf).toBe(8);
    // The rule on a report of the same run: the stream's makespan ÷ its 8 steps.
    const r = await runPipeline(cutRunConfig(stream, ranges), { hostFactory: (w) => new InProcessRankHost(w, new CpuBackend()) });
    expect(cutMeasured(r).meanOf).toBe(8);
    expect(cutMeasured(r).makespanMs).toBeCloseTo(r.makespanMs.measured / 8, 12);
    // A synchronous schedule's: the mean over the steps after the first.
    const flush = await runPipeline(cutRunConfig(names, ranges), { hostFactory: (w) => new InProcessRankHost(w, new CpuBackend()) });
    expect(cutMeasured(flush)).toMatchObject({ meanOf: 7, makespanMs: flush.makespanMs.measured });
  }, 60_000);

  it('"Stop" ends the sequence after the run in flight', async () => {
    ready();
    const unsub = usePipeLab.subscribe((s) => {
      if (Object.values(s.cutRuns).some((m) => m.status === 'running')) stopCutRuns();
    });
    await runEachCut(names, cuts);
    unsub();
    expect(runs).toHaveLength(1);
    const states = cuts.map((r) => usePipeLab.getState().cutRuns[cutRunKey(names, r)]?.status);
    expect(['done', 'error']).toContain(states[0]);
    expect(states.slice(1)).toEqual([undefined, undefined]);
    expect(usePipeLab.getState().session).toBe('idle');
  }, 60_000);

  it('is refused, running nothing, while another session holds the workers', async () => {
    ready();
    const other: SessionControl = { kind: 'comparing', abort: new AbortController() };
    beginSession(other);
    await runEachCut(names, cuts);
    expect(runs).toEqual([]);
    expect(usePipeLab.getState().cutRuns).toEqual({});
    expect(usePipeLab.getState().session).toBe('comparing');
    endSession(other);
  });

  it('a cut the configuration refuses is reported on its row, and the others still run', async () => {
    ready();
    const big: RunConfig = { ...defaultRunConfig(), hidden: 4096, layers: 6, ranks: 2, batchSize: 8, microbatches: 8, steps: 2 };
    const heavy: BlockRange[] = [[0, 1], [1, 7]];
    await runEachCut(big, [heavy]);
    const m = usePipeLab.getState().cutRuns[cutRunKey(big, heavy)];
    expect(m.status).toBe('error');
    expect(m.error).toMatch(/^hidden = 4096: a rank would hold about/);
    expect(runs).toEqual([]);
  });
});

describe('the cuts and the run configuration', () => {
  it('"Use this cut" sets partition cut with the row’s blocks per stage, a valid configuration', () => {
    ready();
    applyCut(names, [[0, 2], [2, 3], [3, 4]]);
    const { config, configProblem } = usePipeLab.getState();
    expect(config.partition).toBe('cut');
    expect(config.cut).toEqual([2, 1, 1]);
    expect(configProblem).toBeNull();
  });

  it('says in one sentence what to change when the cuts do not fit the run', () => {
    expect(cutMismatch(names, 3, 4)).toBeNull();
    expect(cutMismatch(names, 2, 4)).toBe('These cuts are for 2 stages but the run has ranks × virtual = 3: set “Ranks to plan for” to 3 (or the run\'s ranks to 2) to use or run them.');
    expect(cutMismatch(names, 3, 5)).toBe('The profile has 5 blocks but the run\'s model has 4: profile this model (or paste a profile of it) to use or run these cuts.');
  });

  it('rows with the same cut share one run; a short run has min(steps, 8) steps', () => {
    const a: BlockRange[] = [[0, 1], [1, 4]];
    const b: BlockRange[] = [[0, 3], [3, 4]];
    expect(distinctCuts([{ by: 'blocks', ranges: a }, { by: 'flops', ranges: b }, { by: 'measured', ranges: a }])).toEqual([
      { ranges: a, by: ['blocks', 'measured'] },
      { ranges: b, by: ['flops'] },
    ]);
    expect(cutRunConfig({ ...names, steps: 3 }, a).steps).toBe(3);
    expect(cutRunConfig(names, a).steps).toBe(8);
  });
});
