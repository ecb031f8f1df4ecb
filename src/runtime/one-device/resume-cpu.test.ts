/**
 * A run's state out of the workers and back in, on the float64 CPU reference
 * (in-process workers over real MessageChannels): a run stopped after k steps
 * saves its progress (weights, optimizer state — ZeRO-1 shards joined —
 * losses), the progress goes through the checkpoint file (encode, decode),
 * and a fresh run resumed from it for k more steps must equal the
 * uninterrupted run of 2k steps EXACTLY: every loss and every weight.
 */
import { describe, expect, it } from 'vitest';
import { CpuBackend } from '../../nn/cpu-backend.ts';
import type { TrainProgress } from '../../nn/train.ts';
import { decodeRunState, encodeRunState } from '../../run-state/codec.ts';
import { runStateOf } from '../../run-state/run-state.ts';
import { expectSameRun } from '../../run-state/testing/same-run.ts';
import { runPipeline, type RunOptions } from '../coordinator.ts';
import { InProcessRankHost } from '../executor/in-process-host.ts';
import { defaultRunConfig, validateRunConfig, type RunConfig } from '../../config/run-config.ts';

const cpuHosts = () => (w: number) => new InProcessRankHost(w, new CpuBackend());
const base: Partial<RunOptions> = { recvTimeoutMs: 5000 };

function config(over: Partial<RunConfig>): RunConfig {
  const cfg: RunConfig = { ...defaultRunConfig(), layers: 3, hidden: 6, batchSize: 16, microbatches: 2, steps: 6, optimizer: 'adamw', lr: 0.01, lrSchedule: 'cosine', evalEvery: 0, ...over };
  validateRunConfig(cfg);
  return cfg;
}

/** Runs `cfg` and stops it after `k` steps; returns the progress it handed over at the stop. */
async function stoppedAt(cfg: RunConfig, k: number): Promise<TrainProgress> {
  const stop = new AbortController();
  const saved: TrainProgress[] = [];
  await runPipeline(cfg, {
    ...base,
    hostFactory: cpuHosts(),
    signal: stop.signal,
    onStep: (p) => {
      if (p.step + 1 === k) stop.abort();
    },
    onProgress: (p) => saved.push(p),
  });
  expect(saved.map((p) => p.stepsDone)).toEqual([k]);
  return saved[0];
}

async function expectResumeExact(cfg: RunConfig, k: number) {
  const full = await runPipeline(cfg, { ...base, hostFactory: cpuHosts(), readWeights: true });
  const progress = await stoppedAt(cfg, k);
  // Through the file, as a checkpoint goes: F64 from the CPU reference, so nothing is rounded.
  const state = decodeRunState(encodeRunState(runStateOf(cfg, progress)), { config: cfg });
  const resumed = await runPipeline(cfg, { ...base, hostFactory: cpuHosts(), readWeights: true, from: state });
  expect(resumed.steps.map((s) => s.step)).toEqual(Array.from({ length: cfg.steps - k }, (_, i) => k + i));
  expectSameRun(resumed, full);
}

describe('resume from a saved state on the CPU host equals the uninterrupted run exactly', () => {
  it('1F1B p=2, AdamW with the cosine schedule', async () => {
    await expectResumeExact(config({ schedule: '1f1b', ranks: 2 }), 3);
  });

  it('ZB-H1 p=2, SGD with momentum', async () => {
    await expectResumeExact(config({ schedule: 'zb-h1', ranks: 2, optimizer: 'sgd', momentum: 0.9, lr: 0.05 }), 3);
  });

  for (const zero of [0, 1, 2, 3] as const) {
    it(`dp=2 × p=2 1F1B, zero=${zero}`, async () => {
      await expectResumeExact(config({ schedule: '1f1b', ranks: 2, dp: 2, zero }), 3);
    });
  }

  it('dp=3 × p=2 GPipe with ZeRO-1 (chunks cutting parameters): the joined optimizer state equals the unsharded one', async () => {
    const cfg = config({ schedule: 'gpipe', ranks: 2, dp: 3, batchSize: 24, zero: 1 });
    const sharded = await stoppedAt(cfg, 2);
    const whole = await stoppedAt({ ...cfg, zero: 0 }, 2);
    expect(sharded.optimizer.steps).toBe(2);
    expect(Object.keys(sharded.optimizer.slots).sort()).toEqual(Object.keys(whole.optimizer.slots).sort());
    for (const [name, slots] of Object.entries(whole.optimizer.slots)) {
      for (const [slot, v] of Object.entries(slots)) expect(Array.from(sharded.optimizer.slots[name][slot])).toEqual(Array.from(v));
    }
    await expectResumeExact(cfg, 2);
  });
});

describe('checkpoints hold whole tensors by name, whatever the shard layout', () => {
  it('ZeRO-3 dp=3 × p=2: the weights and optimizer state joined from the shards equal the unsharded run\'s, and load into other layouts', async () => {
    const cfg = config({ schedule: '1f1b', ranks: 2, dp: 3, batchSize: 24, zero: 3, reshard: 'microbatch' });
    const sharded = await stoppedAt(cfg, 2);
    const whole = await stoppedAt({ ...cfg, zero: 0, reshard: 'step' }, 2);
    const close = (a: ArrayLike<number>, b: ArrayLike<number>) => {
      let worst = 0;
      for (let i = 0; i < b.length; i++) worst = Math.max(worst, Math.abs(a[i] - b[i]) / Math.max(1e-300, Math.abs(b[i])));
      return worst;
    };
    expect(Object.keys(sharded.params).sort()).toEqual(Object.keys(whole.params).sort());
    for (const [n, v] of Object.entries(whole.params)) {
      expect(sharded.params[n]).toHaveLength(v.length);
      expect(close(sharded.params[n], v)).toBeLessThan(1e-10);
    }
    for (const [name, slots] of Object.entries(whole.optimizer.slots)) {
      for (const [slot, v] of Object.entries(slots)) expect(close(sharded.optimizer.slots[name][slot], v)).toBeLessThan(1e-8);
    }
    // The ZeRO-3 state resumes a run of ZeRO-1 on 2 replicas and one of ZeRO-2 on 3, within float64's rounding of the full run.
    const full = await runPipeline(cfg, { ...base, hostFactory: cpuHosts() });
    for (const layout of [{ dp: 2, zero: 1 as const, reshard: 'step' as const }, { dp: 3, zero: 2 as const, reshard: 'step' as const }]) {
      const next = config({ ...cfg, ...layout });
      const resumed = await runPipeline(next, { ...base, hostFactory: cpuHosts(), from: sharded });
      expect(close(resumed.losses.slice(2), full.losses.slice(2))).toBeLessThan(1e-10);
    }
  });
});

describe('progress every N steps', () => {
  it('hands over the state after every N steps and at the end, each equal to a stop there', async () => {
    const cfg = config({ schedule: '1f1b', ranks: 2 });
    const seen: TrainProgress[] = [];
    await runPipeline(cfg, { ...base, hostFactory: cpuHosts(), progressEvery: 2, onProgress: (p) => seen.push(p) });
    expect(seen.map((p) => p.stepsDone)).toEqual([2, 4, 6]);
    const at4 = await stoppedAt(cfg, 4);
    expect(seen[1].losses).toEqual(at4.losses);
    for (const [n, v] of Object.entries(at4.params)) expect(Array.from(seen[1].params[n])).toEqual(Array.from(v));
  });

  it('hands over the progress before a step when asked (a pause), once per point', async () => {
    const cfg = config({ schedule: '1f1b', ranks: 2 });
    const seen: number[] = [];
    await runPipeline(cfg, { ...base, hostFactory: cpuHosts(), progressEvery: 4, progressNow: () => true, onProgress: (p) => seen.push(p.stepsDone) });
    expect(seen).toEqual([1, 2, 3, 4, 5, 6]);
  });

  it('refuses to start a stream (PipeDream) from a saved state, and a state of another length of run', async () => {
    const cfg = config({ schedule: '1f1b', ranks: 2 });
    const progress = await stoppedAt(cfg, 2);
    await expect(runPipeline({ ...cfg, schedule: 'pipedream' }, { ...base, hostFactory: cpuHosts(), from: progress })).rejects.toThrow(/pipedream.*cannot start from a saved state/i);
    await expect(runPipeline(cfg, { ...base, hostFactory: cpuHosts(), from: { ...progress, losses: [1] } })).rejects.toThrow(/from\.losses\.length/);
  });
});
