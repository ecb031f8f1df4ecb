/**
 * Waiting only for a value the CPU reads, on WebGPU (Dawn in Node on SwiftShader, one device per rank, in-process
 * ranks over real MessageChannels). Each worker's waits on its GPU, submits, crossings and actions per step are
 * counted by its backend and transport (rank-executor.ts StepCounts) and must equal what the schedule alone says:
 * one wait per send (its readback), one for all of a last stage's losses — none per action (the GPT's kernels
 * included: makemore's GPT in small, on 1F1B's 4 workers), and none for the step's
 * action spans (read with the update's submit, placed when the next step ends, the last step's at the run's end:
 * late-times.ts) nor for the update; one submit per action and one or two at the step's end (below). The actions'
 * intervals are each worker's own actions in order, never overlapping, in every step's record (each at its GPU times
 * from the second step's report on), and the losses and weights equal the float64 CPU run of the same pipeline.
 * Needs VK_ICD_FILENAMES=/usr/lib/chromium/vk_swiftshader_icd.json here (testing/node-gpu.ts sets it).
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { GpuBackend } from '../../gpu/gpu-backend.ts';
import { createTestBackend } from '../../gpu/testing/node-gpu.ts';
import { CpuBackend } from '../../nn/cpu-backend.ts';
import type { Backend } from '../../nn/backend.ts';
import { generateSchedule } from '../../schedule/registry.ts';
import { isCompute, type Timeline } from '../../schedule/timeline.ts';
import type { Schedule } from '../../schedule/types.ts';
import { relErr } from '../../util/rel-err.ts';
import { runPipeline } from '../coordinator.ts';
import { InProcessRankHost } from './in-process-host.ts';
import { defaultRunConfig, type RunConfig } from '../../config/run-config.ts';

const backends: GpuBackend[] = [];
afterAll(() => {
  for (const b of backends) b.destroy();
});

const pipeline: RunConfig = { ...defaultRunConfig(), schedule: '1f1b', ranks: 2, layers: 3, hidden: 8, batchSize: 16, microbatches: 4, steps: 2, evalEvery: 0, optimizer: 'adamw', lr: 0.01 };

/** makemore's GPT in small: its layers and schedule (4 blocks, 1F1B on 4 workers), a few values wide. */
const gpt: RunConfig = { ...pipeline, dataset: 'names', model: 'gpt', layers: 4, heads: 2, width: 8, blockSize: 16, ranks: 4, batchSize: 8, microbatches: 4, lr: 0.002 };

/**
 * The first n devices with or without timestamp-query, made as a case first needs them and kept for the next (each
 * device compiles its kernels once): the dp case's first two workers are the 1F1B case's devices, warm, as a second
 * run on kept devices is (the 1F1B case checks that such a run counts the same).
 */
const pools = new Map<boolean, GpuBackend[]>();
async function devices(n: number, timestamps: boolean): Promise<GpuBackend[]> {
  const pool = pools.get(timestamps) ?? [];
  pools.set(timestamps, pool);
  while (pool.length < n) {
    const g = await createTestBackend({ timestamps });
    backends.push(g);
    pool.push(g);
  }
  return pool.slice(0, n);
}

function run(cfg: RunConfig, bes: Backend[], onStep?: (timeline: Timeline) => void) {
  return runPipeline(cfg, { hostFactory: (w) => new InProcessRankHost(w, bes[w]), readWeights: true, ...(onStep ? { onStep: (p) => onStep(p.timeline) } : {}) });
}

/**
 * What rank `r` must count in a step, from the schedule alone. Submits: one per action (a send's readback rides in
 * its action's), and at the step's end one for the losses' read where the rank has losses (before the update, so
 * that it waits for the step's actions, not the update too) and one that carries the update (and, with timestamps, the spans'
 * resolve). Waits: one per send, one for the losses. With dp replicas each stage's all-reduce adds
 * one wait, the read of its gradients (their write back is queued, not waited for: the CPU reads nothing of it), and
 * takes 2(dp − 1) chunks; it adds the read's submit, unless the read is the one that submits the stage's last
 * backward: with config.overlap (the default) it runs right after that action, which on stage 0 sends nothing (on
 * a later stage the send's readback has submitted it).
 */
function expected(s: Schedule, r: number, timestamps: boolean, cfg: RunConfig) {
  const { dp } = cfg;
  const last = s.stages - 1;
  const elsewhere = (stage: number) => stage >= 0 && stage <= last && s.stageToRank[stage] !== r;
  const order = s.order[r];
  // A forward's output goes on to stage + 1, a backward's input gradient back to stage − 1; a forward takes its
  // input from stage − 1, a backward its output's gradient from stage + 1.
  const sends = order.filter((a) => (a.op === 'F' ? elsewhere(a.stage + 1) : elsewhere(a.stage - 1))).length;
  const crossings = order.filter((a) => (a.op === 'F' ? elsewhere(a.stage - 1) : elsewhere(a.stage + 1))).length;
  const losses = order.some((a) => a.op === 'F' && a.stage === last) ? 1 : 0;
  const held = dp > 1 ? s.stageToRank.flatMap((x, stage) => (x === r ? [stage] : [])) : [];
  const ringSubmits = held.reduce((n, stage) => n + (cfg.overlap && stage === 0 ? 0 : 1), 0);
  return { actions: order.length, crossings: crossings + held.length * 2 * (dp - 1), waits: sends + losses + held.length, submits: order.length + 1 + losses + ringSubmits };
}

describe('a pipeline on WebGPU waits only for what the CPU reads', () => {
  const cases: [string, RunConfig, boolean][] = [
    ['1F1B on 2 ranks, timestamp-query spans', pipeline, true],
    ['1F1B on 2 ranks, completion callbacks (no timestamp-query)', pipeline, false],
    ['dp 2 × pp 2, a ring all-reduce per stage after its last backward, timestamp-query spans', { ...pipeline, dp: 2, overlap: true }, true],
    ["makemore's GPT in small (4 layers, 1F1B on 4 ranks), timestamp-query spans", gpt, true],
  ];
  for (const [what, cfg, timestamps] of cases) {
    it(`${what}: the counts the schedule gives, actions in order without overlap, one device's losses and weights`, async () => {
      const gpus = await devices(cfg.dp * cfg.ranks, timestamps);
      expect(gpus.every((g) => g.hasTimestamps === timestamps)).toBe(true);
      const shown: Timeline[] = [];
      const report = await run(cfg, gpus, (t) => shown.push(t));
      const s = generateSchedule(cfg.schedule, cfg.ranks, cfg.microbatches, cfg.virtual);

      expect(report.steps).toHaveLength(cfg.steps);
      for (const step of report.steps) {
        expect(step.counts.map((c) => [c.replica ?? 0, c.rank])).toEqual(gpus.map((_, w) => [Math.floor(w / cfg.ranks), w % cfg.ranks]));
        for (const c of step.counts) expect({ actions: c.actions, crossings: c.crossings, waits: c.waits, submits: c.submits }).toEqual(expected(s, c.rank, timestamps, cfg));
      }

      // Each worker's actions: its own order, each after the previous one's end, spans from timestamps where there are any.
      // The live timeline of each step after the first is the previous step's, at its GPU times; the report's last
      // step's too (the run's end waited for them).
      expect(shown).toHaveLength(cfg.steps);
      // A step ends on a worker when its actions' kernels have, though the worker went on before (late-times.ts).
      expect(report.stepEnd!.wallMs).toBeGreaterThanOrEqual(report.makespanMs.measured - 1e-9);
      const placed = [...shown.slice(1), report.timeline];
      for (const t of placed) for (const iv of t.intervals.filter(isCompute)) expect(iv.gpuMs !== undefined).toBe(timestamps);
      for (let w = 0; w < gpus.length; w++) for (const t of placed) {
        const r = w % cfg.ranks;
        const mine = t.intervals.filter((iv) => isCompute(iv) && iv.rank === r && (iv.replica ?? 0) === Math.floor(w / cfg.ranks)).sort((a, b) => a.start - b.start);
        expect(mine.map((iv) => `${iv.stage}${iv.op}${iv.mb}`)).toEqual(s.order[r].map((a) => `${a.stage}${a.op}${a.mb}`));
        mine.forEach((iv, i) => {
          expect(iv.end).toBeGreaterThanOrEqual(iv.start);
          if (i > 0) expect(iv.start).toBeGreaterThanOrEqual(mine[i - 1].end);
          expect(iv.gpuMs !== undefined).toBe(timestamps);
        });
      }

      if (cfg === pipeline && timestamps) {
        // A second run on the same devices (kept between runs, as warm workers keep them) reuses each device's clock
        // and its query sets, and counts the same.
        expect(gpus[0].actionClock(Date.now)).toBe(gpus[0].actionClock(Date.now));
        const again = await run(cfg, gpus);
        expect(again.steps.map((st) => st.counts)).toEqual(report.steps.map((st) => st.counts));
      }

      const cpu = await run(cfg, gpus.map(() => new CpuBackend()));
      expect(cpu.steps.every((st) => st.counts.every((c) => c.waits === undefined && c.submits === undefined))).toBe(true);
      report.losses.forEach((l, i) => expect(Math.abs(l - cpu.losses[i])).toBeLessThan(1e-4 * Math.max(1, Math.abs(cpu.losses[i]))));
      const names = Object.keys(cpu.weights ?? {}).sort();
      expect(Object.keys(report.weights ?? {}).sort()).toEqual(names);
      for (const n of names) expect(relErr((report.weights ?? {})[n], (cpu.weights ?? {})[n])).toBeLessThan(1e-4);
      expect(report.leakedBuffers).toBe(0);
    }, 120_000);
  }
});
