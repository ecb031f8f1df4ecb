import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { it } from 'vitest';
import { CpuBackend } from '../nn/cpu-backend.ts';
import { trainSingleDevice } from '../nn/train.ts';
import { defaultRunConfig, toTrainConfig, withDataset, type RunConfig } from '../runtime/run-config.ts';
import { configFromQuery } from '../runtime/run-config.ts';
import { maxRelativeDiff, maxWeightDiff, readTrainedWeights, runTorchrun, writeBundle } from './testing/torchrun.ts';
import { buildTorchBundle } from './torch-bundle.ts';
import { readTrainPy } from './train-py-file.ts';
const small: RunConfig = { ...defaultRunConfig(), layers: 3, hidden: 16, batchSize: 32, microbatches: 4, steps: 5, evalEvery: 0 };
const q = (x: string): RunConfig => configFromQuery(x).config;
const gpt: RunConfig = { ...withDataset(defaultRunConfig(), 'names'), model: 'gpt', layers: 3, heads: 2, width: 8, blockSize: 16, batchSize: 8, microbatches: 4, steps: 5, evalEvery: 0, lr: 0.01, weightDecay: 0.01, ranks: 2, schedule: '1f1b' };
const cases: [string, RunConfig][] = [
  ['gpt', gpt],
  ['gpt-wd0', { ...gpt, weightDecay: 0 }],
  ['names-def', { ...withDataset(defaultRunConfig(), 'names'), ranks: 2, steps: 3, evalEvery: 0 }],
  ['names-def-wd0', { ...withDataset(defaultRunConfig(), 'names'), ranks: 2, steps: 3, evalEvery: 0, weightDecay: 0 }],
];
for (const [t, cfg] of cases) it(t, async () => {
  const ref = await trainSingleDevice(new CpuBackend(), toTrainConfig(cfg));
  const dir = mkdtempSync(join(tmpdir(), 'pipelab-rep-'));
  writeBundle(dir, buildTorchBundle(cfg, readTrainPy()));
  const r = await runTorchrun(dir, cfg.ranks);
  const w = readTrainedWeights(dir);
  console.log(t, dir, cfg.activation, cfg.weightDecay, cfg.lr, cfg.optimizer, maxRelativeDiff(r.losses, ref.losses), maxWeightDiff(w, ref.params), r.losses.map((l,i)=>(Math.abs(l-ref.losses[i])/ref.losses[i]).toExponential(1)).filter((_, i) => i % 20 === 0).join(' '));
  for (const [n, v] of Object.entries(ref.params)) { const e = maxWeightDiff({ [n]: w[n] }, { [n]: v }); if (e > 1e-6) { const a = w[n], b = v; let k = 0, m = 0; for (let i = 0; i < b.length; i++) { const dd = Math.abs(a[i] - b[i]); if (dd > m) { m = dd; k = i; } } console.log(n, e, 'worst', k, a[k], b[k]); } }
}, 300000);
