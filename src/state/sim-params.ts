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
  /** Data-parallel replicas of the pipeline: dp × ranks workers. */
  dp: number;
  /** Gradient bytes of each stage, MB (what its all-reduce moves). */
  gradMB: number;
  /** The ring all-reduce's α, ms per chunk exchange (one time unit is read as 1 ms). */
  arLatencyMs: number;
  /** The ring all-reduce's β, MB/s on one link. */
  arBandwidthMBs: number;
  /** Start each stage's all-reduce when its last backward ends (true), or after every worker's last compute. */
  overlap: boolean;
  /** ZeRO-1: reduce-scatter, sharded update, all-gather of the weights (the same volume as the all-reduce). */
  zero: boolean;
}

/** Sizes the browser cannot train but draws at once. */
export function defaultSimParams(): SimParams {
  return {
    schedule: '1f1b', ranks: 64, microbatches: 512, virtual: 1, costF: 1, costB: 2, costI: 1, costW: 1, latency: 0,
    dp: 1, gradMB: 100, arLatencyMs: 0.01, arBandwidthMBs: 1000, overlap: true, zero: false,
  };
}

/** `workers`: dp × ranks; `actions`: the intervals the page draws (compute of every worker and the collectives' exchanges). */
export const SIM_LIMITS = { ranks: 512, microbatches: 8192, virtual: 16, dp: 256, workers: 4096, actions: 2_000_000 } as const;

/** Bytes per time unit on one link for a bandwidth in MB/s, one time unit read as 1 ms. */
export function bytesPerUnit(mbPerSecond: number): number {
  return (mbPerSecond * 1e6) / 1e3;
}

/** True when the view should show the data-parallel step (more than one replica). */
export function simHasMesh(p: SimParams): boolean {
  return p.dp > 1;
}

/** Throws ConfigError naming the first bad field. */
export function validateSimParams(p: SimParams): void {
  const kind = scheduleKind(p.schedule);
  requireInt('sim.ranks', p.ranks, 1, SIM_LIMITS.ranks);
  requireInt('sim.microbatches', p.microbatches, 1, SIM_LIMITS.microbatches);
  requireInt('sim.virtual', p.virtual, 1, SIM_LIMITS.virtual);
  for (const k of ['costF', 'costB', 'costI', 'costW', 'latency'] as const) requireFinite(`sim.${k}`, p[k], { min: 0 });
  if (p.costF + p.costB <= 0) throw new ConfigError('sim.costF', p.costF, 'F and B cannot both cost 0');
  requireInt('sim.dp', p.dp, 1, SIM_LIMITS.dp);
  if (p.dp * p.ranks > SIM_LIMITS.workers) {
    throw new ConfigError('sim.dp', p.dp, `dp × ranks = ${p.dp} × ${p.ranks} = ${p.dp * p.ranks} workers; the page simulates at most ${SIM_LIMITS.workers}`);
  }
  requireFinite('sim.gradMB', p.gradMB, { min: 0 });
  requireFinite('sim.arLatencyMs', p.arLatencyMs, { min: 0 });
  requireFinite('sim.arBandwidthMBs', p.arBandwidthMBs, { min: 0, exclusiveMin: true });
  if (typeof p.overlap !== 'boolean') throw new ConfigError('sim.overlap', p.overlap, 'must be true or false');
  if (typeof p.zero !== 'boolean') throw new ConfigError('sim.zero', p.zero, 'must be true or false');
  if (p.zero && p.dp === 1) throw new ConfigError('sim.zero', p.zero, 'ZeRO-1 shards the optimizer state across data-parallel replicas; it needs dp ≥ 2 (dp = 1)');
  const compute = p.dp * p.ranks * p.virtual * p.microbatches * (kind.splitBackward ? 3 : 2);
  const exchanges = p.dp > 1 ? p.ranks * p.virtual * p.dp * 2 * (p.dp - 1) : 0;
  const actions = compute + exchanges;
  if (actions > SIM_LIMITS.actions) {
    const field = p.dp > 1 ? 'sim.dp' : 'sim.microbatches';
    const terms = p.dp > 1 ? 'dp · ranks · virtual · (microbatches · ops + all-reduce exchanges)' : 'ranks · virtual · microbatches · ops';
    throw new ConfigError(field, p[field === 'sim.dp' ? 'dp' : 'microbatches'], `${terms} = ${actions} actions; the page draws at most ${SIM_LIMITS.actions}`);
  }
  try {
    kind.validateParams(p.ranks, p.microbatches, p.virtual);
  } catch (e) {
    if (e instanceof ConfigError) throw new ConfigError(`sim.${e.field}`, e.value, e.rule);
    throw e;
  }
}

const NUMERIC = ['ranks', 'microbatches', 'virtual', 'costF', 'costB', 'costI', 'costW', 'latency', 'dp', 'gradMB', 'arLatencyMs', 'arBandwidthMBs'] as const;
const BOOLEAN = ['overlap', 'zero'] as const;
/** The data-parallel keys, written only when they differ from their defaults (older links stay as they were). */
const MESH_KEYS: ReadonlySet<string> = new Set(['dp', 'gradMB', 'arLatencyMs', 'arBandwidthMBs', 'overlap', 'zero']);

export function simParamsToQuery(p: SimParams, params: URLSearchParams): void {
  params.set('sim.schedule', p.schedule);
  const d = defaultSimParams();
  for (const k of [...NUMERIC, ...BOOLEAN]) if (!MESH_KEYS.has(k) || p[k] !== d[k]) params.set(`sim.${k}`, String(p[k]));
}

/** The `sim.*` keys a URL may hold. */
export const SIM_QUERY_KEYS: readonly string[] = ['sim.schedule', ...NUMERIC.map((k) => `sim.${k}`), ...BOOLEAN.map((k) => `sim.${k}`)];

function parseQueryBoolean(raw: string): boolean | string {
  return raw === 'true' || raw === '1' ? true : raw === 'false' || raw === '0' ? false : raw;
}

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
  for (const k of BOOLEAN) {
    const raw = params.get(`sim.${k}`);
    if (raw === null) continue;
    // A word other than true/false/1/0 stays a string, so the record check names it with the rule.
    (out as unknown as Record<string, unknown>)[k] = parseQueryBoolean(raw);
    given.add(k);
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
