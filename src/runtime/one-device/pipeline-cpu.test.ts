/**
 * The pipeline runtime on the float64 CPU reference, in-process, over real
 * MessageChannels: every synchronous schedule must compute exactly what one
 * device computes (same losses, same weights), since float64 summation-order
 * differences are ~1e-15. The browser tests repeat this with one Worker and one
 * WebGPU device per rank.
 */
import { describe, expect, it } from 'vitest';
import { CpuBackend } from '../../nn/cpu-backend.ts';
import { trainSingleDevice } from '../../nn/train.ts';
import { generateSchedule, SCHEDULE_NAMES, SCHEDULES, type ScheduleName } from '../../schedule/registry.ts';
import { runPipeline } from '../coordinator.ts';
import { InProcessRankHost } from '../executor/in-process-host.ts';
import { defaultRunConfig, toTrainConfig, type RunConfig } from '../../config/run-config.ts';
import { relErrByName } from '../../util/rel-err.ts';

function smallConfig(schedule: RunConfig['schedule'], ranks: number, microbatches: number, virtual: number): RunConfig {
  const base = defaultRunConfig();
  return {
    ...base,
    schedule,
    ranks,
    virtual,
    microbatches,
    layers: Math.max(3, ranks * virtual - 1),
    hidden: 6,
    batchSize: microbatches * Math.ceil(16 / microbatches),
    steps: 2,
    optimizer: 'adamw',
    lr: 0.01,
    evalEvery: 0,
  };
}


const cases: [ScheduleName, number, number, number][] = [];
// The synchronous ('flush') schedules: those that compute what one device would.
const SYNCHRONOUS = SCHEDULE_NAMES.filter((n) => SCHEDULES[n].update === 'flush');
for (const name of SYNCHRONOUS) {
  const kind = SCHEDULES[name];
  const virtuals = [...new Set([kind.virtualFor(1), kind.virtualFor(2)])];
  for (const p of [2, 4]) {
    for (const m of [1, 4, 8]) {
      for (const v of virtuals) {
        try {
          kind.validateParams(p, m, v);
          cases.push([name, p, m, v]);
        } catch {
          // a pair this schedule does not accept
        }
      }
    }
  }
}
// Interleaving for any m: rounds of at least p micro-batches when m is not a multiple of p, and fewer than p.
cases.push(['interleaved-1f1b', 4, 6, 2], ['interleaved-1f1b', 4, 9, 2], ['interleaved-1f1b', 2, 3, 3], ['interleaved-1f1b', 4, 3, 2], ['interleaved-zb', 4, 6, 2], ['interleaved-zb', 3, 5, 3]);
// Hanayo with two waves (v = 2W = 4; the loop above gives one wave): the model zig-zags down and up the ranks twice.
cases.push(['hanayo', 2, 4, 4], ['hanayo', 3, 5, 4]);

describe('pipeline runtime on the CPU reference equals single-device training', () => {
  it('covers every synchronous schedule', () => {
    expect(new Set(cases.map((c) => c[0]))).toEqual(new Set(Object.keys(SCHEDULES).filter((n) => SCHEDULES[n as ScheduleName].update === 'flush')));
    expect(SYNCHRONOUS).toEqual([...SCHEDULE_NAMES]);
  });

  it.each(cases)('%s p=%i m=%i v=%i', async (name, p, m, v) => {
    const cfg = smallConfig(name, p, m, v);
    const report = await runPipeline(cfg, { hostFactory: (r) => new InProcessRankHost(r, new CpuBackend()), readWeights: true, recvTimeoutMs: 5000 });
    const ref = await trainSingleDevice(new CpuBackend(), toTrainConfig(cfg));
    expect(report.losses).toHaveLength(cfg.steps);
    for (let i = 0; i < cfg.steps; i++) expect(Math.abs(report.losses[i] - ref.losses[i])).toBeLessThan(1e-12 * Math.abs(ref.losses[i]));
    for (const [n, e] of Object.entries(relErrByName(report.weights, ref.params))) expect(e, n).toBeLessThan(1e-12);
    // One interval per action (dualpipe-v splits only some backwards into I and W).
    expect(report.timeline.intervals.filter((iv) => iv.op !== 'comm' && iv.op !== 'collective')).toHaveLength(generateSchedule(name, p, m, v).order.flat().length);
  });

  // docs/concepts.md: "the same losses and weights after every step", with dp and ZeRO 1, 2 and 3 too. The weights are
  // read after each step (weightsEvery 1; the last from the end of the run) and compared with one device's after as many
  // steps (a constant lr, so that a run of k steps is the first k steps of a longer one).
  it.each([
    ['1f1b p=2', {}],
    ['zb-h1 p=2', { schedule: 'zb-h1' as const }],
    ['interleaved-1f1b p=2 v=2', { schedule: 'interleaved-1f1b' as const, virtual: 2, layers: 4 }],
    ['dp=2 1f1b p=2', { dp: 2 }],
    ['dp=2 ZeRO-1', { dp: 2, zero: 1 as const }],
    ['dp=2 ZeRO-2 zb-h1', { dp: 2, zero: 2 as const, schedule: 'zb-h1' as const }],
    ['dp=2 ZeRO-3', { dp: 2, zero: 3 as const }],
  ])('the same weights as one device after every step: %s', async (_, over) => {
    const cfg: RunConfig = { ...smallConfig('1f1b', 2, 4, 1), steps: 3, lrSchedule: 'constant', batchSize: 16, ...over };
    const after: Record<string, ArrayLike<number>>[] = [];
    const report = await runPipeline(cfg, {
      hostFactory: (r) => new InProcessRankHost(r, new CpuBackend()), readWeights: true, recvTimeoutMs: 5000,
      weightsEvery: 1, onWeights: (step, w) => (after[step] = w),
    });
    expect(report.weights).toBeDefined();
    after[cfg.steps - 1] = report.weights!;
    expect(Object.keys(after).map(Number)).toEqual([0, 1, 2]);
    for (let k = 1; k <= cfg.steps; k++) {
      const ref = await trainSingleDevice(new CpuBackend(), toTrainConfig({ ...cfg, steps: k }));
      expect(Math.abs(report.losses[k - 1] - ref.losses[k - 1]), `loss of step ${k - 1}`).toBeLessThan(1e-12 * Math.abs(ref.losses[k - 1]));
      for (const [n, e] of Object.entries(relErrByName(after[k - 1], ref.params))) expect(e, `${n} after step ${k - 1}`).toBeLessThan(1e-12);
    }
  });

  it('with recomputation gives the same result as without', async () => {
    const cfg = smallConfig('1f1b', 4, 4, 1);
    const a = await runPipeline(cfg, { hostFactory: (r) => new InProcessRankHost(r, new CpuBackend()), readWeights: true });
    const b = await runPipeline({ ...cfg, recompute: true }, { hostFactory: (r) => new InProcessRankHost(r, new CpuBackend()), readWeights: true });
    for (let i = 0; i < cfg.steps; i++) expect(Math.abs(a.losses[i] - b.losses[i])).toBeLessThan(1e-12);
    // Recomputation keeps only the input per micro-batch: less stash at peak on every stage.
    for (const s of Object.keys(a.peakStashBytes)) expect(b.peakStashBytes[Number(s)]).toBeLessThan(a.peakStashBytes[Number(s)]);
  });

  it('1F1B holds at most p micro-batches on the first stage, GPipe all m', async () => {
    const p = 4, m = 8;
    const run = (schedule: RunConfig['schedule']) =>
      runPipeline(smallConfig(schedule, p, m, 1), { hostFactory: (r) => new InProcessRankHost(r, new CpuBackend()) });
    const g = await run('gpipe');
    const o = await run('1f1b');
    // Same model and micro-batch size: stash bytes scale with micro-batches held.
    expect(g.peakStashBytes[0] / o.peakStashBytes[0]).toBeCloseTo(m / p, 5);
  });
});
