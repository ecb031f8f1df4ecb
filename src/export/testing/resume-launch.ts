/**
 * Several exported runs in one torchrun launch, a resume case's second run among them: the straight run saves every
 * step, and a copy of its bundle resumes from its step-1 file later in the same launch. Each job ends at a barrier
 * after rank 0 wrote its files, so the file is whole before any process of the next job reads it.
 */
import { join } from 'node:path';
import type { RunConfig } from '../../config/run-config.ts';
import { writeTempBundle } from './temp-bundle.ts';
import { runTorchrunMany, type TorchrunResult } from './torchrun.ts';

type Bundle = ReturnType<typeof writeTempBundle>;

export interface LaunchedCases {
  bundles: Bundle[];
  runs: TorchrunResult[];
  /** By case index, for the cases with `resume`: the resumed run's bundle and result. */
  resumedBundles: Map<number, Bundle>;
  resumedRuns: Map<number, TorchrunResult>;
}

/** The processes a case's run takes. */
export const worldOf = (cfg: RunConfig): number => cfg.dp * (cfg.tp ?? 1) * (cfg.ep ?? 1) * cfg.ranks;

export async function launchCases(cases: readonly { cfg: RunConfig; resume?: boolean }[]): Promise<LaunchedCases> {
  const bundles = cases.map(({ cfg }) => writeTempBundle(cfg));
  const resumes = cases.flatMap(({ resume }, i) => (resume ? [i] : []));
  const resumedBundles = new Map(resumes.map((i) => [i, writeTempBundle(cases[i].cfg)]));
  const results = await runTorchrunMany([
    ...cases.map(({ cfg, resume }, i) => ({ dir: bundles[i].dir, world: worldOf(cfg), args: resume ? ['--save-every', '1'] : [] })),
    ...resumes.map((i) => ({ dir: resumedBundles.get(i)!.dir, world: worldOf(cases[i].cfg), args: ['--resume', join(bundles[i].dir, 'out', 'checkpoint-step1.safetensors')] })),
  ]);
  return { bundles, runs: results.slice(0, cases.length), resumedBundles, resumedRuns: new Map(resumes.map((i, k) => [i, results[cases.length + k]])) };
}
