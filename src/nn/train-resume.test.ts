/**
 * Resume at the nn level, on the float64 CPU reference: k steps, the progress
 * read out (weights, optimizer state, losses, evaluations), a fresh model and
 * optimizer loaded from it, k more steps — bit for bit the run of 2k steps,
 * for AdamW and SGD with momentum under the cosine schedule. A resume that
 * drops the optimizer state does not match (the check can fail).
 */
import { describe, expect, it } from 'vitest';
import { CpuBackend } from './cpu-backend.ts';
import { defaultTrainConfig, type TrainConfig } from './train-config.ts';
import { trainSingleDevice, type TrainProgress } from './train.ts';

const cpu = new CpuBackend();

/** k steps of a 2k-step run, stopped, its progress read; then a fresh run from there. */
async function stopAndResume(cfg: TrainConfig, k: number, change?: (p: TrainProgress) => TrainProgress) {
  let done = 0;
  const first = await trainSingleDevice(cpu, cfg, { onStep: () => void done++, shouldStop: () => done >= k }, { readProgress: true });
  expect(first.stepsDone).toBe(k);
  const progress = first.progress!;
  const second = await trainSingleDevice(cpu, cfg, {}, { from: change ? change(progress) : progress, readProgress: true });
  return { first, second };
}

const cases: [string, TrainConfig][] = [
  ['spiral MLP, AdamW, cosine, weight decay', { ...defaultTrainConfig('spiral'), steps: 12, evalEvery: 4, weightDecay: 0.05, lrSchedule: 'cosine' }],
  ['spiral MLP, SGD with momentum, cosine, weight decay', { ...defaultTrainConfig('spiral'), steps: 12, evalEvery: 0, optimizer: 'sgd', lr: 0.1, momentum: 0.9, weightDecay: 0.01, lrSchedule: 'cosine' }],
  ['names char-MLP (embedding, LayerNorm), AdamW, two stages', { ...defaultTrainConfig('names'), hidden: 16, layers: 2, batchSize: 32, steps: 6, evalEvery: 3, stages: 2 }],
];

describe('k steps + resume + k steps equals 2k steps, bit for bit in float64', () => {
  for (const [name, cfg] of cases) {
    it(name, async () => {
      const k = cfg.steps / 2;
      const whole = await trainSingleDevice(cpu, cfg, {}, { readProgress: true });
      const { first, second } = await stopAndResume(cfg, k);
      expect(first.losses).toEqual(whole.losses.slice(0, k));
      expect(second.stepsDone).toBe(cfg.steps);
      expect(second.losses).toEqual(whole.losses);
      expect(second.params).toEqual(whole.params);
      expect(second.progress!.optimizer).toEqual(whole.progress!.optimizer);
      expect(second.progress!.optimizer.steps).toBe(cfg.steps);
      expect(second.evals).toEqual(whole.evals);
      expect(second.final).toEqual(whole.final);
    });
  }

  it('a resume without the optimizer state (fresh moments, step count 0) does not match', async () => {
    const cfg = cases[0][1];
    const whole = await trainSingleDevice(cpu, cfg);
    const { second } = await stopAndResume(cfg, cfg.steps / 2, (p) => ({
      ...p,
      optimizer: { ...p.optimizer, steps: 0, slots: Object.fromEntries(Object.entries(p.optimizer.slots).map(([n, s]) => [n, Object.fromEntries(Object.entries(s).map(([k, v]) => [k, new Float64Array(v.length)]))])) },
    }));
    // Step k's loss comes from the weights before its update, so it still agrees; the steps after it do not.
    expect(second.losses.slice(0, cfg.steps / 2 + 1)).toEqual(whole.losses.slice(0, cfg.steps / 2 + 1));
    expect(second.losses[cfg.steps / 2 + 1]).not.toBe(whole.losses[cfg.steps / 2 + 1]);
    expect(second.params).not.toEqual(whole.params);
  });

  it('a start that is not a point of this run is refused, naming the field', async () => {
    const cfg = { ...defaultTrainConfig('spiral'), steps: 4, evalEvery: 0 };
    const p = (await trainSingleDevice(cpu, cfg, {}, { readProgress: true })).progress!;
    await expect(trainSingleDevice(cpu, cfg, {}, { from: { ...p, stepsDone: 5, losses: [1, 2, 3, 4, 5] } })).rejects.toThrow('from.stepsDone = 5: must be an integer between 0 and 4');
    await expect(trainSingleDevice(cpu, cfg, {}, { from: { ...p, losses: [1] } })).rejects.toThrow('from.losses.length = 1: must be 4, one loss per step done');
    await expect(trainSingleDevice(cpu, { ...cfg, optimizer: 'sgd' }, {}, { from: p })).rejects.toThrow('optimizer state.name = "adamw": must be "sgd", the optimizer of this run');
  });
});
