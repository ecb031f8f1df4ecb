/**
 * validationLoss off the page's thread: the page starts every step of a run (the coordinator runs there), so an
 * evaluation on it (makemore's GPT: 256 names through the float64 reference, seconds) held every worker idle for its
 * length, a dozen times a run. Here it runs in one Worker kept for the page (eval-worker.ts; calls queue in order).
 * Where there are no Workers (Node) and for a text data set (its corpus is registered on the page's thread only) it
 * runs in the calling thread, as it does when the worker fails (the worker is then dropped).
 */
import * as Comlink from 'comlink';
import type { RunConfig } from '../../config/run-config.ts';
import { validationLoss, type WeightMap } from './trained-model.ts';
import type { EvalWorkerApi } from './eval-worker.ts';

interface Live {
  api: Comlink.Remote<EvalWorkerApi>;
  worker: Worker;
  /** Rejects when the worker fails to load or crashes (a call to it would never answer then). */
  crashed: Promise<never>;
  dead: boolean;
}

let live: Live | null = null;

function evalWorker(): Live {
  if (!live) {
    const worker = new Worker(new URL('./eval-worker.ts', import.meta.url), { type: 'module', name: 'pipelab-eval' });
    let dead!: () => void;
    const crashed = new Promise<never>((_, reject) => {
      worker.addEventListener('error', (e: ErrorEvent) => {
        e.preventDefault();
        dead();
        reject(new Error(`the evaluation worker crashed: ${e.message || 'unknown error'}`));
      });
    });
    crashed.catch(() => {});
    const made: Live = { api: Comlink.wrap<EvalWorkerApi>(worker), worker, crashed, dead: false };
    dead = () => (made.dead = true);
    live = made;
  }
  return live;
}

/** The held-out loss of `weights` (null: the configuration's initial weights), computed off the page's thread where it can be. */
export async function validationLossOffThread(cfg: RunConfig, weights: WeightMap | null): Promise<number> {
  if (typeof Worker === 'undefined' || cfg.dataset === 'text') return validationLoss(cfg, weights);
  const w = evalWorker();
  try {
    return await Promise.race([w.api.validationLoss(cfg, weights), w.crashed]);
  } catch (e) {
    // This evaluation runs here: where the worker failed, it is dropped and later ones run here too; where the
    // evaluation itself threw, here it throws the same error with its own type (a Worker's errors cross as plain ones).
    if (w.dead && live === w) {
      console.warn('PipeLab: the evaluation worker failed; evaluating on the page:', e);
      w.worker.terminate();
      live = null;
    }
    return validationLoss(cfg, weights);
  }
}
