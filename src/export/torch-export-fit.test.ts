/**
 * A run that swaps activations and offloads its optimizer exports unchanged (issue 54): swapping and offload change
 * where the page keeps bytes, not the arithmetic, so the exported program trains it as it is and torchrun (CPU, gloo)
 * gives the page's own losses and weights (the page's run on the float64 CPU host, with its swapping and offload,
 * to float32 rounding); the bundle keeps the page's choices in config.json and its README names what a CUDA cluster
 * would use for each (save_on_cpu for activations, DeepSpeed's offload_optimizer). Needs Debian's python3-torch.
 */
import { describe, expect, it } from 'vitest';
import { CpuBackend } from '../nn/cpu-backend.ts';
import { runPipeline } from '../runtime/coordinator.ts';
import { InProcessRankHost } from '../runtime/executor/in-process-host.ts';
import { defaultRunConfig, withDataset, type RunConfig } from '../config/run-config.ts';
import { maxRelativeDiff, maxWeightDiff, readTrainedWeights, runTorchrun, withoutKeyBias } from './testing/torchrun.ts';
import { writeTempBundle } from './testing/temp-bundle.ts';

const cfg: RunConfig = {
  ...withDataset(defaultRunConfig(), 'names'), model: 'gpt', layers: 3, heads: 2, width: 8, blockSize: 16,
  batchSize: 8, microbatches: 4, steps: 4, evalEvery: 0, lr: 0.01, weightDecay: 0.01, ranks: 2, schedule: 'gpipe', swap: 'all', offloadOptimizer: true,
};

describe('a run with swapping and optimizer offload, exported', () => {
  it('torchrun gives the page’s losses and weights; the README says what a CUDA cluster would use', async () => {
    const page = await runPipeline(cfg, { hostFactory: (w) => new InProcessRankHost(w, new CpuBackend()), readWeights: true });
    expect(page.timeline.intervals.some((iv) => iv.comm === 'swap-out')).toBe(true);
    const { dir, files } = writeTempBundle(cfg);
    const readme = files.find((f) => f.path === 'README.md')!.data as string;
    expect(readme).toContain('torch.autograd.graph.save_on_cpu(pin_memory=True)');
    expect(readme).toContain('"offload_optimizer": {"device": "cpu"');
    const bundled = JSON.parse(files.find((f) => f.path === 'config.json')!.data as string) as { run: RunConfig };
    expect([bundled.run.swap, bundled.run.offloadOptimizer]).toEqual(['all', true]);
    const r = await runTorchrun(dir, cfg.ranks);
    expect(r.code, r.output).toBe(0);
    expect(maxRelativeDiff(r.losses, page.losses)).toBeLessThan(1e-4);
    const comparable = (w: Readonly<Record<string, ArrayLike<number>>>) => withoutKeyBias(w, cfg.width ?? 0);
    expect(maxWeightDiff(comparable(readTrainedWeights(dir)), comparable(page.weights!))).toBeLessThan(1e-4);
  }, 300_000);
});
