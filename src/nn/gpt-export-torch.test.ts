/**
 * The GPT's safetensors export loads into makemore's Transformer (PyTorch,
 * Debian's /usr/bin/python3 with python3-torch) with load_state_dict(strict=False):
 * the only keys missing are the causal-mask buffers, none are unexpected, and
 * PyTorch's logits equal the float64 CPU reference's on the same tokens.
 * The PyTorch program export (src/export) carries its per-position labels and loss scale.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BatchSampler } from '../data/batches.ts';
import { createDataset } from '../data/datasets.ts';
import { defaultRunConfig, type RunConfig } from '../config/run-config.ts';
import { safetensorsFile } from '../ui/exports/export-files.ts';
import { buildTorchBundle } from '../export/torch-bundle.ts';
import { readTorchProgram } from '../export/torch-program-disk.ts';
import { CpuBackend } from './cpu-backend.ts';
import { buildModelSpec } from './model-config.ts';
import { StageChain } from './stage-chain.ts';
import { toTrainConfig } from '../config/run-config.ts';
import { trainSingleDevice } from './train.ts';
import { readSafetensors } from '../util/safetensors.ts';

const PYTHON = process.env.PIPELAB_PYTHON ?? '/usr/bin/python3';

describe('the GPT export in PyTorch', () => {
  it("loads into makemore's Transformer (strict=False: only the attn.bias buffers missing) and gives the same logits", async () => {
    const cfg: RunConfig = { ...defaultRunConfig(), dataset: 'names', model: 'gpt', layers: 2, heads: 2, width: 8, blockSize: 16, batchSize: 8, microbatches: 1, steps: 3, evalEvery: 0, lr: 0.01, ranks: 1 };
    const be = new CpuBackend();
    // Trained a few steps, so no weight is at its initial value (LayerNorm gains, biases).
    const trained = await trainSingleDevice(be, toTrainConfig(cfg));
    const file = safetensorsFile(cfg, trained.params, 'gpt');
    const chain = new StageChain(be, buildModelSpec(toTrainConfig(cfg)), 1, cfg.seed);
    chain.loadParams(trained.params);
    const batch = new BatchSampler(createDataset(toTrainConfig(cfg)).val, 5, 1).batch(0);
    const logits = await be.read(await chain.logits(chain.inputTensor(batch)));
    const dir = mkdtempSync(join(tmpdir(), 'pipelab-gpt-'));
    writeFileSync(join(dir, 'w.safetensors'), file.data as Uint8Array);
    const idx = Array.from({ length: batch.n }, (_, r) => Array.from(batch.inputs.subarray(r * 16, (r + 1) * 16)));
    writeFileSync(join(dir, 'c.json'), JSON.stringify({ vocab: 28, block: 16, layers: 2, heads: 2, width: 8, idx, logits: Array.from(logits) }));
    const script = new URL('./testing/makemore_gpt.py', import.meta.url).pathname;
    const out = JSON.parse(execFileSync(PYTHON, [script, join(dir, 'w.safetensors'), join(dir, 'c.json')], { encoding: 'utf8' }).trim().split('\n').at(-1) as string);
    expect(out.unexpected).toEqual([]);
    expect(out.missing).toEqual(['transformer.h.0.attn.bias', 'transformer.h.1.attn.bias']);
    expect(out.maxAbsRef).toBeGreaterThan(0.1);
    // float32 weights on both sides; PyTorch computes in float32.
    expect(out.maxAbsDiff).toBeLessThan(1e-4 * Math.max(1, out.maxAbsRef));
  }, 120_000);

  it('the PyTorch program export carries the GPT: per-position labels, [blockSize, width] stage inputs, loss scale 1 / non-padded targets of the batch', async () => {
    const cfg: RunConfig = { ...defaultRunConfig(), dataset: 'names', model: 'gpt', layers: 3, heads: 2, width: 8, blockSize: 16, batchSize: 8, microbatches: 4, steps: 2, ranks: 2 };
    const files = buildTorchBundle(cfg, readTorchProgram());
    const config = JSON.parse(files.find((f) => f.path === 'config.json')!.data as string) as { stageInShape: number[][]; lossScalePerStep: number[] };
    expect(config.stageInShape).toEqual([[16], [16, 8]]);
    const batches = readSafetensors(files.find((f) => f.path === 'batches.safetensors')!.data as Uint8Array).tensors;
    expect(batches.labels.shape).toEqual([2, 8, 16]);
    for (let step = 0; step < 2; step++) {
      const labels = Array.from(batches.labels.data.subarray(step * 128, (step + 1) * 128));
      const counted = labels.filter((l) => l !== -1).length;
      expect(counted).toBeLessThan(128); // names are shorter than blockSize: some targets are padding
      expect(config.lossScalePerStep[step]).toBe(1 / counted);
    }
  });
});
