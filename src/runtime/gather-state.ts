/**
 * A run's progress gathered from its workers between steps: the weights of
 * replica 0 (every replica holds the same), the optimizer state of replica 0's
 * workers — or, with ZeRO-1, the pieces every worker's shards hold, joined
 * into whole parameters — and the step count, checked equal on every worker.
 */
import type { TrainProgress } from '../nn/train.ts';
import type { EvalReport } from '../nn/train.ts';
import { workerCount, type Mesh } from '../schedule/mesh.ts';
import type { RankHost, RankState, Weights } from './rank-host.ts';
import type { ZeroStage } from '../config/run-config.ts';

/** Joins workers' optimizer pieces into whole parameters (sizes from `params`); every value must be covered exactly once. */
export function joinOptimizer(parts: readonly RankState['optimizer'][], params: Weights): TrainProgress['optimizer'] {
  const first = parts[0];
  if (!first) throw new Error('no worker gave its optimizer state');
  const slots: TrainProgress['optimizer']['slots'] = {};
  const covered = new Map<string, number>();
  for (const part of parts) {
    if (part.name !== first.name || part.steps !== first.steps) {
      throw new Error(`the workers' optimizer states differ: ${first.name} after ${first.steps} steps, and ${part.name} after ${part.steps}`);
    }
    for (const piece of part.pieces) {
      const whole = params[piece.param];
      if (!whole) throw new Error(`optimizer state of "${piece.param}", a parameter no worker holds`);
      const own = (slots[piece.param] ??= {});
      for (const [slot, v] of Object.entries(piece.slots)) {
        const dst = (own[slot] ??= whole instanceof Float64Array ? new Float64Array(whole.length) : new Float32Array(whole.length));
        dst.set(v, piece.lo);
      }
      covered.set(piece.param, (covered.get(piece.param) ?? 0) + piece.hi - piece.lo);
    }
  }
  for (const [name, v] of Object.entries(params)) {
    if (covered.get(name) !== v.length) throw new Error(`the workers' optimizer states cover ${covered.get(name) ?? 0} of the ${v.length} values of "${name}"`);
  }
  return { name: first.name, steps: first.steps, slots };
}

/** The progress after `stepsDone` steps: `hosts` in worker order (replica-major), `losses` one per step done. */
export async function gatherProgress(
  m: Mesh,
  zero: ZeroStage,
  hosts: readonly RankHost[],
  stepsDone: number,
  losses: readonly number[],
  evals: readonly EvalReport[],
): Promise<TrainProgress> {
  // Replica 0 holds every weight and, without ZeRO-1, every optimizer slot; with it, each worker holds a shard.
  const readers = zero === 1 ? hosts.slice(0, workerCount(m)) : hosts.slice(0, m.ranks);
  const states = await Promise.all(readers.map((h) => h.readState()));
  const params: Weights = {};
  for (const st of states.slice(0, m.ranks)) Object.assign(params, st.params);
  const optimizer = joinOptimizer(
    states.map((s) => s.optimizer),
    params,
  );
  return { stepsDone, params, optimizer, losses: losses.slice(0, stepsDone), evals: [...evals] };
}
