/**
 * The parameters of a simulate-only view: a schedule at any size, played
 * against a per-op cost model without training anything. They travel in the
 * URL under `sim.*` keys, next to the run configuration's keys.
 */
import { RUN_SCHEDULE_NAMES, runsAsStream, scheduleKind, streamMeshRefusal, windowMicrobatches, type RunScheduleName } from '../../schedule/index.ts';
import { ConfigError, requireFinite, requireInt, requireOneOf } from '../../util/errors.ts';
import { parseQueryNumber, revertUntilValid } from '../../util/query-values.ts';

export interface SimParams {
  schedule: RunScheduleName;
  ranks: number;
  /** Micro-batches per step. */
  microbatches: number;
  /** PipeDream and PipeDream-2BW only (they never flush): the steps drawn as one stream of steps × microbatches. */
  steps: number;
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
  /**
   * The ZeRO stage over the replicas (schedule/allreduce-cost.ts): 0 the all-reduce at the flush, 1 the same volume as
   * reduce-scatter + sharded update + all-gather, 2 each backward's gradients reduce-scattered as they are made, 3 the
   * weights gathered before each action as well (simulate-zero.ts). Older links' `true` / `false` read as 1 / 0.
   */
  zero: 0 | 1 | 2 | 3;
  /**
   * ZeRO-3 only, the run configuration's word: step keeps a stage's gathered weights until its last action of the step;
   * microbatch frees them after every action (FSDP's reshard after forward) and gathers again for the next.
   */
  reshard: 'step' | 'microbatch';
  /** Tensor-parallel workers per pipeline worker (Megatron): dp × ranks × tp workers. */
  tp: number;
  /** Transformer layers per rank: each runs 2 tp all-reduces in its forward and 2 in its backward (Megatron's g and f). */
  tpLayers: number;
  /** Bytes of one tp all-reduce (rows × width × bytes per element of the activations), KB. */
  tpActKB: number;
  /** One tp collective's α, ms (one time unit read as 1 ms). */
  tpLatencyMs: number;
  /** The bytes per second one tp worker sends, MB/s. */
  tpBandwidthMBs: number;
  /**
   * Sequence parallelism (Korthikanti et al. 2022) on every layer: each all-reduce becomes a reduce-scatter and an
   * all-gather of 1/tp of tpActKB each, and each stage sums its LayerNorms' weight gradients where its update reads
   * them (tp-cost.ts). Needs tp ≥ 2.
   */
  sequenceParallel: boolean;
}

/** Sizes the browser cannot train but draws at once. */
export function defaultSimParams(): SimParams {
  return {
    schedule: '1f1b', ranks: 64, microbatches: 512, steps: 4, virtual: 1, costF: 1, costB: 2, costI: 1, costW: 1, latency: 0,
    dp: 1, gradMB: 100, arLatencyMs: 0.01, arBandwidthMBs: 1000, overlap: true, zero: 0, reshard: 'step',
    tp: 1, tpLayers: 4, tpActKB: 1000, tpLatencyMs: 0.01, tpBandwidthMBs: 100_000, sequenceParallel: false,
  };
}

/** `workers`: dp × ranks × tp; `actions`: the intervals the page draws (compute of every worker and the collectives' exchanges). */
export const SIM_LIMITS = { ranks: 512, microbatches: 8192, steps: 1024, virtual: 16, dp: 256, tp: 64, tpLayers: 1024, workers: 4096, actions: 2_000_000 } as const;

/** Bytes per time unit on one link for a bandwidth in MB/s, one time unit read as 1 ms. */
export function bytesPerUnit(mbPerSecond: number): number {
  return (mbPerSecond * 1e6) / 1e3;
}

/** The micro-batches the view plays: one step's, or a stream's steps × m (PipeDream, 2BW). */
export function simWindowMicrobatches(p: Pick<SimParams, 'schedule' | 'microbatches' | 'steps'>): number {
  return windowMicrobatches(p.schedule, p.microbatches, p.steps);
}

/** True when the view should show the data-parallel step (more than one replica). */
export function simHasMesh(p: SimParams): boolean {
  return p.dp > 1;
}

/** True when each stage is split over tp workers. */
export function simHasTp(p: SimParams): boolean {
  return p.tp > 1;
}

/**
 * The tp collectives one pipeline worker's tp group runs per micro-batch: per layer 2 all-reduces forward and 2 backward
 * (B or I); with sequence parallelism 4 forward (all-gather, reduce-scatter, twice) and 4 backward, and each stage's
 * LayerNorm gradient sum where its update reads them (tp-cost.ts), not counted here.
 */
export function simTpCollectivesPerMicrobatch(p: Pick<SimParams, 'tp' | 'tpLayers' | 'sequenceParallel'>): number {
  return p.tp > 1 ? (p.sequenceParallel ? 8 : 4) * p.tpLayers : 0;
}

/** Throws ConfigError naming the first bad field. */
export function validateSimParams(p: SimParams): void {
  const kind = scheduleKind(p.schedule);
  requireInt('sim.ranks', p.ranks, 1, SIM_LIMITS.ranks);
  requireInt('sim.microbatches', p.microbatches, 1, SIM_LIMITS.microbatches);
  requireInt('sim.virtual', p.virtual, 1, SIM_LIMITS.virtual);
  requireInt('sim.steps', p.steps, 1, SIM_LIMITS.steps);
  const stream = runsAsStream(p.schedule);
  if (simWindowMicrobatches(p) > SIM_LIMITS.microbatches) {
    throw new ConfigError('sim.steps', p.steps, `a stream of ${p.steps} steps × ${p.microbatches} micro-batches holds ${simWindowMicrobatches(p)}; the page plays at most ${SIM_LIMITS.microbatches} (steps ≤ ${Math.floor(SIM_LIMITS.microbatches / p.microbatches)})`);
  }
  for (const k of ['costF', 'costB', 'costI', 'costW', 'latency'] as const) requireFinite(`sim.${k}`, p[k], { min: 0 });
  if (p.costF + p.costB <= 0) throw new ConfigError('sim.costF', p.costF, 'F and B cannot both cost 0');
  requireInt('sim.dp', p.dp, 1, SIM_LIMITS.dp);
  // A stream on replicas: PipeDream-2BW all-reduces after each block of m backwards (simulate-blocks.ts); PipeDream cannot.
  const streamRefused = streamMeshRefusal(p.schedule, p);
  if (streamRefused) {
    const { key, want, rule } = streamRefused;
    throw new ConfigError(`sim.${key}`, p[key], `${rule} (${key} = ${want}${key === 'dp' ? ' here' : ` with ${p.schedule}`})`);
  }
  if (p.dp * p.ranks > SIM_LIMITS.workers) {
    throw new ConfigError('sim.dp', p.dp, `dp × ranks = ${p.dp} × ${p.ranks} = ${p.dp * p.ranks} workers; the page simulates at most ${SIM_LIMITS.workers}`);
  }
  requireInt('sim.tp', p.tp, 1, SIM_LIMITS.tp);
  if (p.dp * p.ranks * p.tp > SIM_LIMITS.workers) {
    throw new ConfigError('sim.tp', p.tp, `dp × ranks × tp = ${p.dp} × ${p.ranks} × ${p.tp} = ${p.dp * p.ranks * p.tp} workers; the page simulates at most ${SIM_LIMITS.workers}`);
  }
  requireInt('sim.tpLayers', p.tpLayers, 1, SIM_LIMITS.tpLayers);
  const chunks = kind.costChunks(p.virtual);
  if (p.tp > 1 && p.tpLayers % chunks !== 0) {
    throw new ConfigError('sim.tpLayers', p.tpLayers, `must be a multiple of the stages a rank's share of the model is cut into (${chunks}), so every stage holds whole layers`);
  }
  requireFinite('sim.tpActKB', p.tpActKB, { min: 0 });
  requireFinite('sim.tpLatencyMs', p.tpLatencyMs, { min: 0 });
  requireFinite('sim.tpBandwidthMBs', p.tpBandwidthMBs, { min: 0, exclusiveMin: true });
  if (typeof p.sequenceParallel !== 'boolean') throw new ConfigError('sim.sequenceParallel', p.sequenceParallel, 'must be true or false');
  if (p.sequenceParallel && p.tp < 2) throw new ConfigError('sim.sequenceParallel', p.sequenceParallel, `splits each layer's token rows over a stage's tp workers; it needs tp ≥ 2 (tp = ${p.tp})`);
  requireFinite('sim.gradMB', p.gradMB, { min: 0 });
  requireFinite('sim.arLatencyMs', p.arLatencyMs, { min: 0 });
  requireFinite('sim.arBandwidthMBs', p.arBandwidthMBs, { min: 0, exclusiveMin: true });
  if (typeof p.overlap !== 'boolean') throw new ConfigError('sim.overlap', p.overlap, 'must be true or false');
  if (![0, 1, 2, 3].includes(p.zero)) throw new ConfigError('sim.zero', p.zero, 'must be a ZeRO stage 0, 1, 2 or 3');
  if (p.zero > 0 && p.dp === 1) throw new ConfigError('sim.zero', p.zero, `ZeRO-${p.zero} shards across data-parallel replicas; it needs dp ≥ 2 (dp = 1)`);
  if (p.reshard !== 'step' && p.reshard !== 'microbatch') throw new ConfigError('sim.reshard', p.reshard, 'must be one of step, microbatch');
  if (p.reshard === 'microbatch' && p.zero !== 3) throw new ConfigError('sim.reshard', p.reshard, `re-gathering weights for every action is ZeRO-3's; it needs zero = 3 (zero = ${p.zero})`);
  const window = simWindowMicrobatches(p);
  const compute = p.dp * p.ranks * p.virtual * window * (kind.splitBackward ? 3 : 2);
  // ZeRO-2/3 run their collectives per action; 0/1 once per stage at the flush; a stream (2BW) once per stage and step.
  const perStep = p.zero >= 2 ? p.microbatches * (p.zero === 3 ? 3 : 1) : stream ? p.steps : 1;
  const exchanges = p.dp > 1 ? p.ranks * p.virtual * p.dp * 2 * (p.dp - 1) * perStep : 0;
  const tpColls = p.dp * p.ranks * window * simTpCollectivesPerMicrobatch(p);
  const actions = (compute + exchanges + tpColls) * p.tp;
  if (actions > SIM_LIMITS.actions) {
    const field = p.tp > 1 ? 'sim.tp' : p.dp > 1 ? 'sim.dp' : stream && p.steps > 1 ? 'sim.steps' : 'sim.microbatches';
    const terms =
      (p.dp > 1 ? 'dp · ranks · virtual · (microbatches · ops + all-reduce exchanges)' : `ranks · virtual · microbatches${stream ? ' · steps' : ''} · ops`) + (p.tp > 1 ? ' + the tp collectives, on each of tp workers' : '');
    const value = field === 'sim.tp' ? p.tp : field === 'sim.dp' ? p.dp : field === 'sim.steps' ? p.steps : p.microbatches;
    // The sizes it multiplies, so a link that gave only dp or tp sees the ranks and micro-batches it was drawn at.
    const sizes = `${p.dp > 1 ? `dp ${p.dp}, ` : ''}${p.ranks} ranks, ${p.microbatches} micro-batches${stream ? ` × ${p.steps} steps` : ''}${p.virtual > 1 ? `, v ${p.virtual}` : ''}${p.tp > 1 ? `, tp ${p.tp}` : ''}`;
    throw new ConfigError(field, value, `${terms} = ${actions} actions at ${sizes}; the page draws at most ${SIM_LIMITS.actions} (fewer ranks or micro-batches fit)`);
  }
  try {
    kind.validateParams(p.ranks, p.microbatches, p.virtual);
  } catch (e) {
    if (e instanceof ConfigError) throw new ConfigError(`sim.${e.field}`, e.value, e.rule);
    throw e;
  }
}

const NUMERIC = ['ranks', 'microbatches', 'steps', 'virtual', 'costF', 'costB', 'costI', 'costW', 'latency', 'dp', 'gradMB', 'arLatencyMs', 'arBandwidthMBs', 'zero', 'tp', 'tpLayers', 'tpActKB', 'tpLatencyMs', 'tpBandwidthMBs'] as const;
const BOOLEAN = ['overlap', 'sequenceParallel'] as const;
/** Keys whose value is a word. */
const WORDS = ['reshard'] as const;
/** The stream's steps and the data-parallel and tp keys, written only when they differ from their defaults (older links stay as they were). */
const MESH_KEYS: ReadonlySet<string> = new Set(['steps', 'dp', 'gradMB', 'arLatencyMs', 'arBandwidthMBs', 'overlap', 'zero', 'reshard', 'tp', 'tpLayers', 'tpActKB', 'tpLatencyMs', 'tpBandwidthMBs', 'sequenceParallel']);

export function simParamsToQuery(p: SimParams, params: URLSearchParams): void {
  params.set('sim.schedule', p.schedule);
  const d = defaultSimParams();
  for (const k of [...NUMERIC, ...BOOLEAN, ...WORDS]) if (!MESH_KEYS.has(k) || p[k] !== d[k]) params.set(`sim.${k}`, String(p[k]));
}

/** The `sim.*` keys a URL may hold. */
export const SIM_QUERY_KEYS: readonly string[] = ['sim.schedule', ...NUMERIC.map((k) => `sim.${k}`), ...BOOLEAN.map((k) => `sim.${k}`), ...WORDS.map((k) => `sim.${k}`)];

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
      out.schedule = requireOneOf('sim.schedule', sched, RUN_SCHEDULE_NAMES);
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
      // Links from before ZeRO-2/3 wrote sim.zero as true / false (ZeRO-1 or none).
      const legacy = k === 'zero' && (raw === 'true' || raw === 'false') ? (raw === 'true' ? 1 : 0) : null;
      (out as unknown as Record<string, number>)[k] = legacy ?? parseQueryNumber(`sim.${k}`, raw);
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
  for (const k of WORDS) {
    const raw = params.get(`sim.${k}`);
    if (raw === null) continue;
    // As the link gave it: the record check refuses a word other than the field's, naming it with the rule.
    (out as unknown as Record<string, unknown>)[k] = raw;
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
