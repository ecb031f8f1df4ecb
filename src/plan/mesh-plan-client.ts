/**
 * The page's side of mesh-plan-worker.ts: one plan at a time in a module Worker. start() while a plan runs
 * terminates that worker (its plan settles as cancelled) and starts a fresh one; cancel() terminates it.
 * An idle worker is kept for the next plan; dispose() ends it. A ConfigError from the planner is rethrown
 * as one (same field, value, rule, message); a worker that dies rejects with what it said.
 */
import * as Comlink from 'comlink';
import { decodeTimelineInChunks } from '../schedule/timeline-columns.ts';
import { ConfigError } from '../util/errors.ts';
import type { MeshPlan, MeshPlanRequest } from './mesh-plan.ts';
import type { MeshPlanWorkerApi } from './mesh-plan-worker.ts';
import type { SimulationResult } from '../schedule/index.ts';

export interface MeshPlanned {
  plan: MeshPlan;
  /** The winner's simulated step; its timeline holds the first drawnReplicas of its replicas (every replica plays the same step). */
  best: SimulationResult & { drawnReplicas: number; replicas: number };
  /** The worker's own time for the plan and the winner's simulation, ms. */
  tookMs: number;
}

export type MeshPlanSettled = { cancelled: true } | ({ cancelled: false } & MeshPlanned);

interface Live {
  worker: Worker;
  api: Comlink.Remote<MeshPlanWorkerApi>;
  /** Rejects when the worker crashes; resolves { cancelled } when it is terminated. */
  ended: Promise<{ cancelled: true }>;
  end: () => void;
}

export class MeshPlanClient {
  private live: Live | null = null;
  private busy = false;

  /** Plans `req` in the worker; a plan already running is cancelled first. */
  async start(req: MeshPlanRequest): Promise<MeshPlanSettled> {
    if (this.busy) this.cancel();
    const live = (this.live ??= spawn());
    this.busy = true;
    try {
      const out = await Promise.race([live.api.plan(req), live.ended]);
      if ('cancelled' in out) return out;
      if (!out.ok) throw new ConfigError(out.field, out.value, out.rule);
      // Rebuilt in chunks, so the page answers meanwhile; a cancel or a newer plan stops it.
      const timeline = await decodeTimelineInChunks(out.best.timeline, () => this.live === live && this.busy);
      if (!timeline) return { cancelled: true };
      return { cancelled: false, plan: out.plan, best: { ...out.best, timeline }, tookMs: out.tookMs };
    } catch (e) {
      // A crashed worker is not reused; one that rejected the request is.
      if (!(e instanceof ConfigError) && this.live === live) this.drop();
      throw e;
    } finally {
      if (this.live === live) this.busy = false;
    }
  }

  /** Stops the running plan (terminates its worker); no-op when idle. */
  cancel(): void {
    if (this.busy) this.drop();
  }

  /** Ends the worker, running or idle. */
  dispose(): void {
    this.drop();
  }

  private drop(): void {
    const live = this.live;
    this.live = null;
    this.busy = false;
    live?.end();
  }
}

function spawn(): Live {
  const worker = new Worker(new URL('./mesh-plan-worker.ts', import.meta.url), { type: 'module', name: 'pipelab-mesh-plan' });
  const api = Comlink.wrap<MeshPlanWorkerApi>(worker);
  let end = () => {};
  const ended = new Promise<{ cancelled: true }>((resolve, reject) => {
    worker.addEventListener('error', (e: ErrorEvent) => {
      e.preventDefault();
      reject(new Error(`the planner's worker crashed: ${e.message || 'unknown error'}`));
    });
    worker.addEventListener('messageerror', () => reject(new Error("the planner's answer could not be read")));
    end = () => {
      api[Comlink.releaseProxy]();
      worker.terminate();
      resolve({ cancelled: true });
    };
  });
  ended.catch(() => {});
  return { worker, api, ended, end };
}
