/**
 * planMesh in its own module Worker, driven through Comlink, so that a 1024-device plan (seconds) never
 * blocks the page: the plan, and the winner's step simulated for drawing. Everything it returns is plain
 * data (numbers, strings, arrays, plain objects), so structured cloning hands over exactly what planMesh
 * and simulate returned. A ConfigError comes back as its field, value and rule (a thrown error would
 * cross as a bare Error), and mesh-plan-client.ts rebuilds it.
 */
import * as Comlink from 'comlink';
import { simulate, type SimulationResult } from '../schedule/index.ts';
import { ConfigError } from '../util/errors.ts';
import { candidateSchedule, planMesh, type MeshPlan, type MeshPlanRequest } from './mesh-plan.ts';

export type MeshPlanOutcome =
  | { ok: true; plan: MeshPlan; best: SimulationResult; tookMs: number }
  | { ok: false; field: string; value: unknown; rule: string };

/** The plan and its winner's simulated step; a ConfigError as its parts. Runs wherever it is called. */
export function planAndSimulate(req: MeshPlanRequest): MeshPlanOutcome {
  const t0 = performance.now();
  try {
    const plan = planMesh(req);
    const { schedule, costs } = candidateSchedule(req, plan.candidates[0]);
    return { ok: true, plan, best: simulate(schedule, costs), tookMs: performance.now() - t0 };
  } catch (e) {
    if (e instanceof ConfigError) return { ok: false, field: e.field, value: e.value, rule: e.rule };
    throw e;
  }
}

const api = { plan: planAndSimulate };

export type MeshPlanWorkerApi = typeof api;

// Only inside a worker: the page imports this module for its types and planAndSimulate's tests.
if (typeof WorkerGlobalScope !== 'undefined' && self instanceof WorkerGlobalScope) Comlink.expose(api);
