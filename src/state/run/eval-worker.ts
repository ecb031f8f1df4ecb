/**
 * The held-out loss on the float64 CPU reference in a module Worker of its own (eval-off-thread.ts), so that a GPT's
 * evaluation (seconds of float64 JavaScript for makemore's GPT) never holds the page's thread, which starts every
 * step of a run.
 */
import * as Comlink from 'comlink';
import type { RunConfig } from '../../config/run-config.ts';
import { validationLoss, type WeightMap } from './trained-model.ts';

const api = {
  validationLoss(cfg: RunConfig, weights: WeightMap | null): Promise<number> {
    return validationLoss(cfg, weights);
  },
};

export type EvalWorkerApi = typeof api;

Comlink.expose(api);
