/**
 * planMesh in its own module Worker, driven through Comlink, so that a 1024-device plan (seconds) never
 * blocks the page: the plan, and the winner's step simulated for drawing. Both are plain data (numbers,
 * strings, arrays, plain objects), so structured cloning hands over exactly what planMesh and simulate
 * returned; but a 1024-device step has about two million intervals, seconds of deserializing on the page,
 * so the timeline travels as transferred columns (timeline-columns.ts) and the client rebuilds it.
 * A ConfigError comes back as its field, value and rule (a thrown error would cross as a bare Error), and
 * mesh-plan-client.ts rebuilds it.
 */
import * as Comlink from 'comlink';
import { simulate, type SimulationResult } from '../schedule/index.ts';
import { firstReplicas } from '../schedule/timeline.ts';
import { encodeTimeline, timelineBuffers, type TimelineColumns } from '../schedule/timeline-columns.ts';
import { ConfigError } from '../util/errors.ts';
import { candidateSchedule, planMesh, type MeshPlan, type MeshPlanRequest } from './mesh-plan.ts';

/** The winner's simulated step with its timeline as columns: its first replicas only (drawnReplicas of replicas). */
export type SimulationWire = Omit<SimulationResult, 'timeline'> & { timeline: TimelineColumns; drawnReplicas: number; replicas: number };

/**
 * Lanes of the winner's step that travel to the page: every replica plays the same step, and 1024 workers
 * (512 replicas of a 2-rank pipeline: two million intervals, most of them the ring's chunk exchanges) took
 * seconds to decode and index on the page for a canvas where each lane is under a pixel.
 */
export const MAX_DRAWN_LANES = 64;

export type MeshPlanOutcome =
  | { ok: true; plan: MeshPlan; best: SimulationWire; tookMs: number }
  | { ok: false; field: string; value: unknown; rule: string };

/** The plan and its winner's simulated step; a ConfigError as its parts. Runs wherever it is called. */
export function planAndSimulate(req: MeshPlanRequest): MeshPlanOutcome {
  const t0 = performance.now();
  try {
    const plan = planMesh(req);
    const { schedule, costs } = candidateSchedule(req, plan.candidates[0]);
    const best = simulate(schedule, costs);
    const drawn = firstReplicas(best.timeline, MAX_DRAWN_LANES);
    return { ok: true, plan, best: { ...best, timeline: encodeTimeline(drawn), drawnReplicas: drawn.dp ?? 1, replicas: best.timeline.dp ?? 1 }, tookMs: performance.now() - t0 };
  } catch (e) {
    if (e instanceof ConfigError) return { ok: false, field: e.field, value: e.value, rule: e.rule };
    throw e;
  }
}

const api = {
  plan(req: MeshPlanRequest): MeshPlanOutcome {
    const out = planAndSimulate(req);
    return out.ok ? Comlink.transfer(out, timelineBuffers(out.best.timeline)) : out;
  },
};

export type MeshPlanWorkerApi = typeof api;

// Only inside a worker: the page imports this module for its types and planAndSimulate's tests.
if (typeof WorkerGlobalScope !== 'undefined' && self instanceof WorkerGlobalScope) Comlink.expose(api);
