/**
 * Test support (Node only): an MoE run as the page runs it, on its own mesh and schedule, every worker on the float64
 * CPU host (in-process): each step's loss, aux loss and the token choices its experts dropped (the run report's
 * routing counts), and the final weights; what the exported MoE runs are checked against
 * (../torch-export.test.ts, ../torch-export-dp.test.ts).
 */
import { CpuBackend } from '../../nn/cpu-backend.ts';
import { runPipeline } from '../../runtime/coordinator.ts';
import { InProcessRankHost } from '../../runtime/executor/index.ts';
import type { RunConfig } from '../../config/run-config.ts';
import { expect } from 'vitest';
import { maxRelativeDiff, maxWeightDiff, readTrainedWeights, withoutKeyBias, type TorchrunResult } from './torchrun.ts';

export interface PageMoeRun {
  losses: number[];
  auxLosses: number[];
  dropped: number[];
  weights: Record<string, Float64Array | Float32Array>;
}

export async function pageMoeRun(cfg: RunConfig): Promise<PageMoeRun> {
  const auxLosses: number[] = [];
  const dropped: number[] = [];
  const report = await runPipeline(cfg, {
    hostFactory: (w) => new InProcessRankHost(w, new CpuBackend()),
    readWeights: true,
    onStep: (p) => {
      if (p.auxLoss === undefined || !p.moeLoad) throw new Error(`step ${p.step}: the page reported no aux loss or routing counts for an MoE run`);
      auxLosses[p.step] = p.auxLoss;
      dropped[p.step] = p.moeLoad.layers.reduce((a, l) => a + l.dropped.flat().reduce((x, y) => x + y, 0), 0);
    },
  });
  return { losses: report.losses, auxLosses, dropped, weights: report.weights! };
}

/**
 * An exported MoE run (`r`, its bundle in `dir`) against the page's own run of `cfg` (pageMoeRun): every step's loss
 * and aux loss within 1e-4 relative, the dropped choices equal (some where the capacity factor is > 0, none dropless),
 * the weights within 1e-4; and against the float64 loop (`loop`: its losses and aux losses, on the same routing groups)
 * within 1e-6.
 */
export async function moeChecks(title: string, cfg: RunConfig, r: TorchrunResult, dir: string, loop: { losses: number[]; auxLosses: number[] }): Promise<void> {
  const page = await pageMoeRun(cfg);
  const diffs = {
    pageLoss: maxRelativeDiff(r.losses, page.losses), pageAux: maxRelativeDiff(r.auxLosses, page.auxLosses),
    loopLoss: maxRelativeDiff(r.losses, loop.losses), loopAux: maxRelativeDiff(r.auxLosses, loop.auxLosses),
    pageWeights: maxWeightDiff(withoutKeyBias(readTrainedWeights(dir), cfg.width ?? 0), withoutKeyBias(page.weights, cfg.width ?? 0)),
  };
  console.log(`${title}: against the page ${JSON.stringify(diffs)}; dropped per step ${r.dropped.join(' ')}`);
  expect(r.dropped, r.output).toEqual(page.dropped);
  expect(r.dropped.length).toBe(cfg.steps);
  if (cfg.capacityFactor === 0) expect(r.dropped.every((d) => d === 0)).toBe(true);
  else expect(r.dropped.some((d) => d > 0)).toBe(true);
  for (const key of ['pageLoss', 'pageAux', 'pageWeights'] as const) expect(diffs[key], key).toBeLessThan(1e-4);
  for (const key of ['loopLoss', 'loopAux'] as const) expect(diffs[key], key).toBeLessThan(1e-6);
}
