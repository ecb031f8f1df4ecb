/**
 * The parameters of a simulate-only view: a schedule at any size, played
 * against a per-op cost model without training anything. They travel in the
 * URL under `sim.*` keys, next to the run configuration's keys.
 */
import { SCHEDULE_NAMES, scheduleKind, type ScheduleName } from '../schedule/index.ts';
import { ConfigError, requireFinite, requireInt, requireOneOf } from '../util/errors.ts';
import { parseQueryNumber, revertUntilValid } from '../util/query-values.ts';

export interface SimParams {
  schedule: ScheduleName;
  ranks: number;
  microbatches: number;
  /** Stages per rank. */
  virtual: number;
  /** Per-op time of one rank's share of the model (split over its v stages), time units. */
  costF: number;
  costB: number;
  costI: number;
  costW: number;
  /** Link latency between ranks, time units. */
  latency: number;
}

/** Sizes the browser cannot train but draws at once. */
export function defaultSimParams(): SimParams {
  return { schedule: '1f1b', ranks: 64, microbatches: 512, virtual: 1, costF: 1, costB: 2, costI: 1, costW: 1, latency: 0 };
}

export const SIM_LIMITS = { ranks: 512, microbatches: 8192, virtual: 16, actions: 2_000_000 } as const;

/** Throws ConfigError naming the first bad field. */
export function validateSimParams(p: SimParams): void {
  const kind = scheduleKind(p.schedule);
  requireInt('sim.ranks', p.ranks, 1, SIM_LIMITS.ranks);
  requireInt('sim.microbatches', p.microbatches, 1, SIM_LIMITS.microbatches);
  requireInt('sim.virtual', p.virtual, 1, SIM_LIMITS.virtual);
  for (const k of ['costF', 'costB', 'costI', 'costW', 'latency'] as const) requireFinite(`sim.${k}`, p[k], { min: 0 });
  if (p.costF + p.costB <= 0) throw new ConfigError('sim.costF', p.costF, 'F and B cannot both cost 0');
  const actions = p.ranks * p.virtual * p.microbatches * (kind.splitBackward ? 3 : 2);
  if (actions > SIM_LIMITS.actions) {
    throw new ConfigError('sim.microbatches', p.microbatches, `ranks · virtual · microbatches · ops = ${actions} actions; the page draws at most ${SIM_LIMITS.actions}`);
  }
  try {
    kind.validateParams(p.ranks, p.microbatches, p.virtual);
  } catch (e) {
    if (e instanceof ConfigError) throw new ConfigError(`sim.${e.field}`, e.value, e.rule);
    throw e;
  }
}

const NUMERIC: readonly (keyof SimParams)[] = ['ranks', 'microbatches', 'virtual', 'costF', 'costB', 'costI', 'costW', 'latency'];

export function simParamsToQuery(p: SimParams, params: URLSearchParams): void {
  params.set('sim.schedule', p.schedule);
  for (const k of NUMERIC) params.set(`sim.${k}`, String(p[k]));
}

/** The `sim.*` keys a URL may hold. */
export const SIM_QUERY_KEYS: readonly string[] = ['sim.schedule', ...NUMERIC.map((k) => `sim.${k}`)];

/** Reads `sim.*` keys; a bad value is reported (as the link gave it) and the default kept for that field. */
export function simParamsFromQuery(params: URLSearchParams): { params: SimParams; errors: ConfigError[] } {
  const out = defaultSimParams();
  const errors: ConfigError[] = [];
  const given = new Set<string>();
  const sched = params.get('sim.schedule');
  if (sched !== null) {
    try {
      out.schedule = requireOneOf('sim.schedule', sched, SCHEDULE_NAMES);
      out.virtual = scheduleKind(out.schedule).defaultVirtual;
      given.add('schedule');
    } catch (e) {
      if (e instanceof ConfigError) errors.push(e);
      else throw e;
    }
  }
  for (const k of NUMERIC) {
    const raw = params.get(`sim.${k}`);
    if (raw === null) continue;
    try {
      (out as unknown as Record<string, number>)[k] = parseQueryNumber(`sim.${k}`, raw);
      given.add(k);
    } catch (e) {
      if (e instanceof ConfigError) errors.push(e);
      else throw e;
    }
  }
  // Whole-record checks; a failing field falls back to its default, and a clash with a default names the link's value.
  const values = out as unknown as Record<string, unknown>;
  const defaultOf = (key: string): unknown => {
    if (key === 'virtual') return scheduleKind(out.schedule).defaultVirtual;
    return (defaultSimParams() as unknown as Record<string, unknown>)[key];
  };
  const ok = revertUntilValid(values, given, defaultOf, () => validateSimParams(out), (f) => f.replace(/^sim\./, ''), (k) => `sim.${k}`, errors);
  return { params: ok ? out : defaultSimParams(), errors };
}
