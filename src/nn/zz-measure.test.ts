import { it } from 'vitest';
import { createTestBackend } from '../gpu/testing/node-gpu.ts';
import { CpuBackend } from './cpu-backend.ts';
import { defaultGptConfig } from './model-config.ts';
import { defaultTrainConfig, type TrainConfig } from './train-config.ts';
import { trainSingleDevice } from './train.ts';

it('measure', async () => {
  const gpu = await createTestBackend();
  const sizes = JSON.parse(process.env.SIZES ?? '[]') as Partial<TrainConfig>[];
  for (const s of sizes) {
    const cfg: TrainConfig = { ...defaultTrainConfig('names'), ...defaultGptConfig(), batchSize: 32, microbatches: 1, lr: 3e-3, weightDecay: 0.01, lrSchedule: 'cosine', evalEvery: 0, ...s };
    const be = process.env.CPU ? new CpuBackend() : gpu;
    const r = await trainSingleDevice(be, cfg);
    console.log(JSON.stringify(s), r.evals.map((e) => `${e.step}:${e.valLoss.toFixed(3)}`).join(" "), `${cfg.steps} steps ${(r.ms / 1000).toFixed(1)} s (${(r.ms / cfg.steps).toFixed(0)} ms/step) val ${r.final.valLoss.toFixed(4)} first ${r.losses[0].toFixed(3)} last ${r.losses.at(-1)?.toFixed(3)}`);
  }
  gpu.destroy();
}, 600000);
