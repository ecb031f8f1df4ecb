/**
 * A pipeline run's configuration: the training configuration (model, data,
 * batch, optimizer, seed; src/nn/train-config.ts) plus the mesh: ranks (the
 * pipeline width p), virtual stages per rank (v), the schedule, and dp
 * data-parallel replicas of that pipeline (src/schedule/mesh.ts) with their
 * gradient all-reduce (overlapped or not) and ZeRO-1. Plain JSON, with the same
 * names as the CLI's flags; it lives in the page's URL query so a link
 * reproduces a run.
 */
import { ConfigError, requireInt, requireOneOf } from '../util/errors.ts';
import { defaultTrainConfig, validateTrainConfig, type TrainConfig } from '../nn/train-config.ts';
import { MAX_VIRTUAL, RUN_SCHEDULE_NAMES, scheduleKind, type RunScheduleName } from '../schedule/registry.ts';
import { streamMeshRefusal } from '../schedule/stream-replicas.ts';
import { checkFaultAction, FAULT_KINDS, type Fault } from './fault-spec.ts';
import { checkRunLimits, RUN_LIMITS } from './run-limits.ts';
import { parseCutText, validateCut } from './explicit-cut.ts';
import { parseSwapText, validateMemoryFields, validateSwap } from './memory-fields.ts';
import { parseQueryNumber, revertUntilValid } from '../util/query-values.ts';
import { unknownKeyRule } from '../util/nearest.ts';
import { DATASETS, isTwoD, type DatasetName } from '../data/datasets.ts';
import { TWO_D_DEFAULT_NOISE } from '../data/two-d.ts';
import { defaultModelConfig, modelFor } from '../nn/model-config.ts';
import { moeOf } from '../nn/moe/moe-config.ts';
import { validateExpertParallel } from './expert-parallel.ts';
import { namesModelSwitch, type GptSize } from '../nn/train-config.ts';

export type { RunScheduleName } from '../schedule/registry.ts';
/** Every schedule a run can use (the registry's, PipeDream's asynchronous 1F1B and PipeDream-2BW included). */
export const RUN_SCHEDULES: readonly RunScheduleName[] = RUN_SCHEDULE_NAMES;

/** How a run cuts its model into stages: balanced FLOPs (the default), equal block counts, or an explicit `cut`. */
export const PARTITIONS = ['flops', 'blocks', 'cut'] as const;
export type Partition = (typeof PARTITIONS)[number];

/**
 * ZeRO stage, sharding across the dp replicas of each stage: 0 off; 1 the
 * optimizer state; 2 and the gradients (reduce-scattered after every
 * micro-batch's weight gradient); 3 and the weights (FSDP: all-gathered before
 * a stage computes, freed after).
 */
export const ZERO_STAGES = [0, 1, 2, 3] as const;
export type ZeroStage = (typeof ZERO_STAGES)[number];
/** What ZeRO-3 says of each stage's gathered weights: kept for the whole step (FSDP's reshard_after_forward = false) or freed after every action (true). */
export const RESHARD_MODES = ['step', 'microbatch'] as const;
export type ReshardMode = (typeof RESHARD_MODES)[number];

export interface RunConfig extends Omit<TrainConfig, 'stages'> {
  /** Pipeline ranks per replica (pipeline width p). */
  ranks: number;
  /**
   * Data-parallel replicas of the pipeline (default 1): the run has dp × ranks
   * workers; replica d trains on rows [d·B/dp, (d+1)·B/dp) of every step's batch
   * of B = batchSize rows, cut into `microbatches` micro-batches.
   */
  dp: number;
  /**
   * Tensor-parallel workers per pipeline stage (Megatron's t, default 1): the run
   * has dp × tp × ranks workers; each stage's transformer blocks (GPT: heads and
   * MLP columns, Megatron's column/row pairs) or hidden linears (the MLPs: column-
   * parallel, outputs gathered) are split over the stage's tp workers.
   */
  tp: number;
  /**
   * Expert parallelism (default 1; absent: 1): ep workers per pipeline stage, each holding experts / ep of every
   * MoE layer's experts and its own slice of each micro-batch's sequences for the dense layers (Megatron's and
   * DeepSpeed's expert grid: the ep workers are data-parallel for everything but the experts). The run has
   * dp × ep × tp × ranks workers. Tokens reach their experts' workers by an all-to-all and come back by another.
   */
  ep?: number;
  /**
   * Sequence parallelism (Korthikanti et al. 2022), with tp ≥ 2 and the GPT: between a stage's layers and from
   * stage to stage each tp worker holds its block of the micro-batch's token rows instead of all of them; the
   * all-reduces become reduce-scatters and all-gathers. Absent: off.
   */
  sequenceParallel?: boolean;
  /** ZeRO: 1 each stage's optimizer state sharded across its dp replicas, 2 its gradients too, 3 its weights too (FSDP); 0: every replica holds all of it. */
  zero: ZeroStage;
  /** ZeRO-3: gathered weights kept for the step ('step', the default with a pipeline) or re-gathered for every action ('microbatch'). */
  reshard: ReshardMode;
  /** ZeRO-3: gather the next action's weights while the current one computes (FSDP's prefetch); false gathers just before each. */
  prefetch: boolean;
  /**
   * Whether a stage's all-reduce starts as soon as its last backward of the step
   * is done (true, as DDP overlaps it), or only once every worker of the mesh has
   * finished its actions (false).
   */
  overlap: boolean;
  /** Stages per rank (v); the model is cut into ranks × virtual stages. */
  virtual: number;
  schedule: RunScheduleName;
  /** How the model is cut into stages (src/plan compares these with a measured cut). */
  partition: Partition;
  /** Blocks per stage, one entry per stage; present exactly when partition = 'cut' (explicit-cut.ts). */
  cut?: number[];
  /** The auto schedule's cap on live activations per rank, in micro-batches; 0: 1F1B's memory (as many as ranks). */
  memCap: number;
  /**
   * Save the run's state into the browser's checkpoints every this many steps
   * (and at stop); 0: never. Absent: CHECKPOINT_EVERY_DEFAULT. How often a run
   * is saved is not part of what it trains: a checkpoint does not keep it.
   */
  checkpointEvery?: number;
  /**
   * How a run that fails after a step restarts from its last checkpoint:
   * 'fresh' (the default) on fresh workers in place of the dead one, the same
   * mesh; 'fewer' on the workers that remain, re-cut onto a smaller mesh
   * (smallerMesh in src/run-state/recut.ts). Not part of what the run trains:
   * a checkpoint does not keep it.
   */
  recovery?: RecoveryMode;
  /**
   * Each worker's memory budget in MiB (absent: none). A run whose planned per-worker peak passes it is refused
   * before any worker starts (config/memory-budget.ts); a run that starts ends at the first step whose measured
   * high-water mark passes it (runtime/budget-check.ts). Not part of what the run trains.
   */
  memoryBudget?: number;
  /**
   * ZeRO-Offload: each worker's optimizer state lives in its host memory, not on its device; at the step's end the
   * final gradients come down, the update runs on the CPU in float32 and the weights go back up (flush schedules).
   * Absent: off. The same arithmetic as on the device.
   */
  offloadOptimizer?: boolean;
  /**
   * Activation swapping (vDNN): the stages (of the ranks × virtual cut; 'all': every one) whose stashed activations
   * go to the worker's host memory after their forward and come back before their backward, the copy back issued
   * before the action ahead of it (vDNN's prefetch). Absent: none. The same numbers as without it.
   */
  swap?: 'all' | number[];
  /** Tests only: inject one fault. */
  fault?: Fault;
}

/** How a failed run restarts: on fresh workers in the same mesh, or on the workers that remain (fewer). */
export const RECOVERY_MODES = ['fresh', 'fewer'] as const;
export type RecoveryMode = (typeof RECOVERY_MODES)[number];

/** How `cfg` recovers from a failure (absent: 'fresh'). */
export function recoveryOf(cfg: Pick<RunConfig, 'recovery'>): RecoveryMode {
  return cfg.recovery ?? 'fresh';
}

/** Steps between a run's saves when its configuration does not say. */
export const CHECKPOINT_EVERY_DEFAULT = 50;

/** How often `cfg` saves its state (0: never). */
export function checkpointEveryOf(cfg: Pick<RunConfig, 'checkpointEvery'>): number {
  return cfg.checkpointEvery ?? CHECKPOINT_EVERY_DEFAULT;
}

/** The largest checkpointEvery (a run's steps are bounded far below it). */
export const MAX_CHECKPOINT_EVERY = 1_000_000;

/** Workers a run may start: dp × tp × ranks at most this. */
export const MAX_RUN_RANKS = 16;

/** The page's default: 4 ranks, 8 micro-batches, 1F1B, on the spiral MLP (4 blocks). */
export function defaultRunConfig(): RunConfig {
  const { stages: _stages, ...train } = defaultTrainConfig('spiral');
  return { ...train, layers: 3, microbatches: 8, batchSize: 64, steps: 300, evalEvery: 50, ranks: 4, dp: 1, tp: 1, zero: 0, reshard: 'step', prefetch: true, overlap: true, virtual: 1, schedule: '1f1b', partition: 'flops', memCap: 0 };
}

/**
 * A new data set brings its model (2-D sets: the MLP; names: the character MLP;
 * a text: the GPT, with its block size), batch, lr and a fitting noise level.
 * A text run names its text by `textHash` (the one given, else the one it had);
 * any other data set has none.
 */
export function withDataset(cfg: RunConfig, dataset: DatasetName, textHash?: string, gptSize: GptSize = 'small'): RunConfig {
  const crossed = isTwoD(dataset) !== isTwoD(cfg.dataset) || (dataset === 'text') !== (cfg.dataset === 'text');
  const { textHash: had, ...rest } = cfg;
  let next: RunConfig = { ...rest, dataset };
  const hash = textHash ?? had;
  if (dataset === 'text' && hash !== undefined) next.textHash = hash;
  if (crossed) {
    const m = defaultModelConfig(dataset);
    const t = defaultTrainConfig(dataset);
    const layers = Math.max(m.layers, cfg.ranks * cfg.virtual - 1);
    next = { ...next, ...m, layers, batchSize: t.batchSize, lr: t.lr, weightDecay: t.weightDecay };
    if (dataset === 'text') next = { ...next, ...namesModelSwitch('gpt', layers, 'text', gptSize) };
    if (next.batchSize % next.microbatches !== 0) next.batchSize = next.microbatches * Math.max(1, Math.round(next.batchSize / next.microbatches));
  }
  if (isTwoD(dataset)) next.noise = TWO_D_DEFAULT_NOISE[dataset];
  // Selective recomputation is the GPT's (its attention): a model without attention leaves it off.
  if (next.model !== 'gpt') next.recomputeAttention = false;
  // Experts are the GPT's too.
  if (next.model !== 'gpt') for (const f of MOE_FIELDS) delete next[f];
  return next;
}

/**
 * The configuration without its explicit cut (partition 'cut' becomes 'flops'):
 * for runs derived from it with other stages or depth (the profiling pass, Compare).
 */
export function withoutCut(cfg: RunConfig): RunConfig {
  const { cut: _cut, ...rest } = cfg;
  return rest.partition === 'cut' ? { ...rest, partition: 'flops' } : rest;
}

/** Stages of a run: ranks × virtual. */
export function runStages(cfg: Pick<RunConfig, 'ranks' | 'virtual'>): number {
  return cfg.ranks * cfg.virtual;
}

/** The training configuration the single-device reference runs for the same model cut the same way. */
export function toTrainConfig(cfg: RunConfig): TrainConfig {
  const { ranks: _r, dp: _dp, tp: _tp, ep: _ep, sequenceParallel: _sp, zero: _z, reshard: _rs, prefetch: _pf, overlap: _o, virtual: _v, schedule: _s, fault: _f, partition: _p, cut: _cut, memCap: _c, checkpointEvery: _ce, recovery: _rec, memoryBudget: _mb, offloadOptimizer: _oo, swap: _sw, ...train } = cfg;
  return { ...train, stages: runStages(cfg) };
}

/** Throws a ConfigError naming the first bad field, its value and the rule. */
export function validateRunConfig(cfg: RunConfig): void {
  if (cfg === null || typeof cfg !== 'object') throw new ConfigError('config', cfg, 'must be an object');
  const schedule = requireOneOf('schedule', cfg.schedule, RUN_SCHEDULES);
  requireInt('ranks', cfg.ranks, 1, MAX_RUN_RANKS);
  validateMeshFields(cfg, schedule);
  requireInt('virtual', cfg.virtual, 1, MAX_VIRTUAL);
  requireOneOf('partition', cfg.partition, PARTITIONS);
  requireInt('memCap', cfg.memCap, 0, RUN_LIMITS.microbatches);
  if (cfg.checkpointEvery !== undefined) requireInt('checkpointEvery', cfg.checkpointEvery, 0, MAX_CHECKPOINT_EVERY);
  if (cfg.recovery !== undefined && !(RECOVERY_MODES as readonly unknown[]).includes(cfg.recovery)) {
    throw new ConfigError('recovery', cfg.recovery, "must be 'fresh' (a failed run restarts from its last checkpoint on fresh workers, the same mesh) or 'fewer' (on the workers that remain, a smaller mesh)");
  }
  validateMemoryFields(cfg, schedule);
  const blocks = (typeof cfg.layers === 'number' ? cfg.layers : 0) + 1;
  if (Number.isInteger(cfg.layers) && cfg.layers >= 1 && runStages(cfg) > blocks) {
    throw new ConfigError(
      cfg.virtual > 1 ? 'virtual' : 'ranks',
      cfg.virtual > 1 ? cfg.virtual : cfg.ranks,
      `ranks × virtual = ${runStages(cfg)} stages, but the model has only ${blocks} blocks (layers + 1) and a stage holds at least one block`,
    );
  }
  validateTrainConfig(toTrainConfig(cfg));
  validateExpertParallel(cfg, scheduleKind(schedule).update === 'flush', MAX_RUN_RANKS);
  validateCut(cfg);
  scheduleKind(schedule).validateParams(cfg.ranks, cfg.microbatches, cfg.virtual);
  if (cfg.fault !== undefined) {
    if (cfg.fault === null || typeof cfg.fault !== 'object') throw new ConfigError('fault', cfg.fault, 'must be an object {kind, action, step?, replica?} or absent');
    requireOneOf('fault.kind', cfg.fault.kind, FAULT_KINDS);
    if (typeof cfg.fault.action !== 'string') throw new ConfigError('fault.action', cfg.fault.action, 'must be an action such as "1F2", or "AR1" for stage 1\'s all-reduce');
    if (cfg.fault.step !== undefined) requireInt('fault.step', cfg.fault.step, 0, cfg.steps - 1);
    if (cfg.fault.replica !== undefined) requireInt('fault.replica', cfg.fault.replica, 0, cfg.dp - 1);
    checkFaultAction(cfg.fault.action, { kind: scheduleKind(schedule), ranks: cfg.ranks, virtual: cfg.virtual, microbatches: cfg.microbatches, steps: cfg.steps, dp: cfg.dp });
    if (cfg.fault.kind === 'skip-gather' && (cfg.zero !== 3 || !/^\d+[FBI]\d+$/.test(cfg.fault.action))) {
      throw new ConfigError('fault', `${cfg.fault.kind} at ${cfg.fault.action}`, 'skip-gather needs zero = 3 and an action that reads the weights (F, B or I): only ZeRO-3 gathers them');
    }
  }
  checkRunLimits(cfg);
  validateSwap(cfg);
}

/**
 * The second axis: dp a whole number ≥ 1 with dp × ranks workers within the
 * limit, the global batch divisible by dp × microbatches, zero ∈ {0, 1, 2, 3} and only
 * with dp > 1 (reshard other than 'step' only with ZeRO-3), overlap a boolean; PipeDream is refused with dp > 1 (its
 * weights change after every backward: nowhere for replicas to sum their gradients); PipeDream-2BW takes replicas
 * (each block's gradients all-reduced before its update) without ZeRO and with overlap on (there is no flush);
 * DualPipe takes replicas with any ZeRO stage (its copies are summed after the replicas' sum, before the update: copy-sum.ts).
 */
function validateMeshFields(cfg: RunConfig, schedule: RunScheduleName): void {
  const dp = requireInt('dp', cfg.dp, 1, MAX_RUN_RANKS);
  if (dp * cfg.ranks > MAX_RUN_RANKS) {
    throw new ConfigError('dp', dp, `dp × ranks = ${dp} × ${cfg.ranks} = ${dp * cfg.ranks} workers; at most ${MAX_RUN_RANKS} workers run in one tab`);
  }
  validateTensorParallel(cfg, schedule);
  if (!(ZERO_STAGES as readonly unknown[]).includes(cfg.zero)) {
    throw new ConfigError('zero', cfg.zero, 'must be 0 (off), 1 (optimizer state sharded across the dp replicas), 2 (and gradients) or 3 (and weights: FSDP)');
  }
  if (cfg.zero !== 0 && dp === 1) throw new ConfigError('zero', cfg.zero, `ZeRO-${cfg.zero} shards across data-parallel replicas; it needs dp ≥ 2 (dp = 1)`);
  requireOneOf('reshard', cfg.reshard, RESHARD_MODES);
  if (cfg.reshard !== 'step' && cfg.zero !== 3) throw new ConfigError('reshard', cfg.reshard, `re-gathering weights for every action is ZeRO-3's (zero = ${cfg.zero}); leave reshard = step`);
  if (typeof cfg.prefetch !== 'boolean') throw new ConfigError('prefetch', cfg.prefetch, 'must be true or false');
  if (typeof cfg.overlap !== 'boolean') throw new ConfigError('overlap', cfg.overlap, 'must be true or false');
  const streamRefused = streamMeshRefusal(schedule, { dp, zero: cfg.zero, overlap: cfg.overlap });
  if (streamRefused) {
    const { key, want, rule } = streamRefused;
    throw new ConfigError(key, cfg[key], `${rule} (${key} = ${want}${key === 'dp' ? ' here' : ` with ${schedule}`})`);
  }
  if (dp > 1 && Number.isInteger(cfg.batchSize) && Number.isInteger(cfg.microbatches) && cfg.microbatches >= 1 && cfg.batchSize % (dp * cfg.microbatches) !== 0) {
    throw new ConfigError(
      'batchSize',
      cfg.batchSize,
      `must be divisible by dp × microbatches = ${dp} × ${cfg.microbatches} = ${dp * cfg.microbatches} (each replica takes batchSize / dp rows, cut into ${cfg.microbatches} micro-batches)`,
    );
  }
}

/**
 * The third axis: tp a whole number ≥ 1 with dp × tp × ranks workers within the limit; the GPT's heads
 * (and so its width and MLP) and the MLPs' hidden width divisible by tp (DualPipe's copies: each tp worker sums
 * its pieces with its partner rank's same tp worker, copy-sum.ts). PipeDream's and 2BW's weight versions are per worker: each tp worker
 * keeps its own pieces' versions.
 */
function validateTensorParallel(cfg: RunConfig, schedule: RunScheduleName): void {
  const tp = requireInt('tp', cfg.tp, 1, MAX_RUN_RANKS);
  validateSequenceParallel(cfg, tp);
  if (tp === 1) return;
  if (moeOf(cfg)) throw new ConfigError('tp', tp, `must be 1 with experts = ${cfg.experts}: an MoE block is not split over tp workers here`);
  const workers = cfg.dp * tp * cfg.ranks;
  if (workers > MAX_RUN_RANKS) {
    throw new ConfigError('tp', tp, `dp × tp × ranks = ${cfg.dp} × ${tp} × ${cfg.ranks} = ${workers} workers; at most ${MAX_RUN_RANKS} workers run in one tab`);
  }
  if (cfg.model === 'gpt') {
    if (typeof cfg.heads === 'number' && Number.isInteger(cfg.heads) && cfg.heads % tp !== 0) {
      throw new ConfigError('tp', tp, `must divide the GPT's heads = ${cfg.heads}: each of a stage's tp workers holds heads / tp whole heads (Megatron's column-parallel c_attn)`);
    }
  } else if (Number.isInteger(cfg.hidden) && cfg.hidden % tp !== 0) {
    throw new ConfigError('tp', tp, `must divide the hidden width = ${cfg.hidden}: each of a stage's tp workers holds hidden / tp columns of every hidden linear`);
  }
}

/**
 * Sequence parallelism: a boolean; on only with tp ≥ 2 and the GPT (its LayerNorms and residuals are what it
 * splits), and with each micro-batch's token rows (batchSize / (dp · microbatches) sequences of blockSize
 * tokens) divisible by tp.
 */
function validateSequenceParallel(cfg: RunConfig, tp: number): void {
  if (cfg.sequenceParallel === undefined || cfg.sequenceParallel === false) return;
  if (cfg.sequenceParallel !== true) throw new ConfigError('sequenceParallel', cfg.sequenceParallel, 'must be true or false');
  if (tp < 2) throw new ConfigError('sequenceParallel', true, `splits the token rows over a stage's tp workers; it needs tp ≥ 2 (tp = ${tp})`);
  if (cfg.model !== 'gpt') throw new ConfigError('sequenceParallel', true, `splits a transformer's LayerNorms and residuals by token; it needs the GPT (model = ${cfg.model})`);
  const perMb = cfg.batchSize / (cfg.dp * cfg.microbatches);
  const rows = perMb * (cfg.blockSize ?? 0);
  if (Number.isInteger(perMb) && Number.isInteger(rows) && rows > 0 && rows % tp !== 0) {
    throw new ConfigError('sequenceParallel', true, `splits each micro-batch's ${perMb} × ${cfg.blockSize} = ${rows} token rows over tp = ${tp} workers; they must divide evenly`);
  }
}

type Field = keyof RunConfig;
/** The MoE fields (src/nn/moe/moe-config.ts): optional, absent for a dense model. */
export const MOE_FIELDS = ['experts', 'topK', 'capacityFactor', 'moeEvery', 'auxLossWeight'] as const;
/** The fields that travel in a URL, in a stable order. */
export const URL_FIELDS: readonly Field[] = [
  'dataset', 'textHash', 'model', 'layers', 'hidden', 'activation', 'context', 'embedDim', 'heads', 'width', 'blockSize', 'points', 'noise',
  'experts', 'topK', 'capacityFactor', 'moeEvery', 'auxLossWeight',
  'ranks', 'dp', 'tp', 'ep', 'sequenceParallel', 'zero', 'reshard', 'prefetch', 'overlap', 'virtual', 'schedule', 'partition', 'cut', 'memCap', 'microbatches', 'batchSize', 'recompute', 'recomputeAttention',
  'optimizer', 'lr', 'momentum', 'weightDecay', 'lrSchedule', 'steps', 'seed', 'evalEvery', 'checkpointEvery', 'recovery', 'memoryBudget', 'offloadOptimizer', 'swap',
];

/** A query as text, commas kept as they are (`cut=1,1,2`, not `cut=1%2C1%2C2`; both read back the same). */
export function readableQuery(q: URLSearchParams): string {
  return q.toString().replace(/%2C/gi, ',');
}

/** The mesh fields a link leaves out when they hold their default (a one-pipeline link reads as it always did). */
const OMITTED_AT_DEFAULT: Partial<Record<Field, unknown>> = { experts: 0, recomputeAttention: false, sequenceParallel: false, dp: 1, tp: 1, ep: 1, zero: 0, reshard: 'step', prefetch: true, overlap: true, checkpointEvery: CHECKPOINT_EVERY_DEFAULT, recovery: 'fresh', offloadOptimizer: false };

export function configToQuery(cfg: RunConfig): string {
  const q = new URLSearchParams();
  // Optional fields (cut) are written only when present; a list is written as 1,1,2.
  for (const f of URL_FIELDS) {
    if (cfg[f] === undefined || (f in OMITTED_AT_DEFAULT && OMITTED_AT_DEFAULT[f] === cfg[f])) continue;
    q.set(f, String(cfg[f]));
  }
  return readableQuery(q);
}

function parseValue(field: string, raw: string, like: unknown): unknown {
  if (field === 'cut') return parseCutText(raw);
  if (field === 'swap') return parseSwapText(raw);
  if (field === 'checkpointEvery' || field === 'memoryBudget' || field === 'ep' || (MOE_FIELDS as readonly string[]).includes(field)) return parseQueryNumber(field, raw);
  if (field === 'sequenceParallel' || field === 'offloadOptimizer') return raw === 'true' || raw === '1' ? true : raw === 'false' || raw === '0' ? false : raw;
  if (typeof like === 'number') return parseQueryNumber(field, raw);
  if (typeof like === 'boolean') return raw === 'true' || raw === '1' ? true : raw === 'false' || raw === '0' ? false : raw;
  return raw;
}

export interface QueryReadOptions {
  /** Keys of the query that belong to someone else (the page's `view`, `sim.*`, ...): not reported as unknown. */
  otherKeys?: readonly string[];
}

/**
 * Reads a configuration from a URL query. Values that fail validation are
 * reported (field, value, rule) and replaced by their defaults; the rest stays.
 * Keys that are neither run fields nor `otherKeys` are reported with the nearest known key.
 */
export function configFromQuery(search: string, givenBase?: RunConfig, opts: QueryReadOptions = {}): { config: RunConfig; errors: ConfigError[] } {
  const q = new URLSearchParams(search.startsWith('?') ? search.slice(1) : search);
  // Without a given base, a link that names a data set starts from what choosing it in the page's menu gives (its model, batch, lr, noise).
  const ds = q.get('dataset');
  const base = givenBase ?? (ds !== null && (DATASETS as readonly string[]).includes(ds) ? withDataset(defaultRunConfig(), ds as DatasetName) : defaultRunConfig());
  const baseRecord = base as unknown as Record<string, unknown>;
  const cfg = { ...base } as Record<string, unknown>;
  const given = new Set<string>();
  const errors: ConfigError[] = [];
  const others = opts.otherKeys ?? [];
  for (const [k, v] of q) {
    if (!(URL_FIELDS as readonly string[]).includes(k)) {
      if (!others.includes(k)) errors.push(new ConfigError(k, v, unknownKeyRule(k, [...URL_FIELDS, ...others], 'URL key')));
      continue;
    }
    try {
      cfg[k] = parseValue(k, v, baseRecord[k]);
      given.add(k);
    } catch (e) {
      if (!(e instanceof ConfigError)) throw e;
      errors.push(e);
    }
  }
  // A data set implies its model unless the link says otherwise.
  if (given.has('dataset') && !given.has('model')) cfg.model = (DATASETS as readonly unknown[]).includes(cfg.dataset) ? modelFor(cfg.dataset as DatasetName) : 'mlp';
  // A cut implies partition = 'cut' unless the link says otherwise.
  if (given.has('cut') && !given.has('partition')) {
    cfg.partition = 'cut';
    given.add('partition');
  }
  const ok = revertUntilValid(
    cfg,
    given,
    (k) => baseRecord[k],
    () => validateRunConfig(cfg as unknown as RunConfig),
    (field) => field.split(/[.[]/)[0],
    (k) => k,
    errors,
  );
  // A reverted optional field is absent, not undefined (a configuration is plain JSON).
  if (cfg.cut === undefined) delete cfg.cut;
  if (cfg.textHash === undefined) delete cfg.textHash;
  if (cfg.checkpointEvery === undefined) delete cfg.checkpointEvery;
  for (const f of MOE_FIELDS) if (cfg[f] === undefined) delete cfg[f];
  if (cfg.recovery === undefined) delete cfg.recovery;
  if (cfg.memoryBudget === undefined) delete cfg.memoryBudget;
  if (cfg.ep === undefined) delete cfg.ep;
  if (cfg.offloadOptimizer === undefined) delete cfg.offloadOptimizer;
  if (cfg.swap === undefined) delete cfg.swap;
  return { config: ok ? (cfg as unknown as RunConfig) : base, errors };
}
