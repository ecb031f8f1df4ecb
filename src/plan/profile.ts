/**
 * The Profile: what one micro-batch costs, block by block. It is plain data
 * (JSON in, JSON out) so a profile measured on the page, typed in by hand, or
 * taken on a real cluster is planned the same way.
 *
 *   blocks[i].F, .I, .W   time of the forward, the input-gradient backward and
 *                         the weight-gradient backward of block i for one
 *                         micro-batch (B, the full backward, is I + W unless
 *                         given);
 *   blocks[i].heldBytes   bytes block i keeps alive from its forward until its
 *                         backward (W) for one micro-batch;
 *   blocks[i].heldBytesRecompute   the same when the block recomputes its
 *                         activations in the backward (it keeps its input only);
 *   blocks[i].paramBytes  (optional) bytes of block i's weights, which its
 *                         gradients match: what a data-parallel plan all-reduces
 *                         (train.py --profile writes it);
 *   blocks[i].workBytes   (optional) the temporaries block i's worker held at its most (a backward's
 *                         received gradient and working set: the allocator's count, measure-profile.ts);
 *                         the planner's per-worker peak adds it;
 *   comm[i]               time to send the activation across the boundary after
 *                         block i (and its gradient back), n − 1 entries;
 *   lanes                 (optional) the effective parallel lanes of the device
 *                         the profile was taken on, when all ranks share it (a
 *                         browser's one GPU, a small machine's cores): n ranks
 *                         computing at once each run at min(1, lanes / n). The
 *                         simulator's shared-device mode takes it.
 *   model                 (optional) the model the profile was measured on:
 *                         its name, a digest of its spec and its block count
 *                         (profile-model.ts). A profile whose blocks fall short
 *                         of its model's (a truncated file) is refused naming
 *                         the missing blocks; planning another model with it
 *                         is refused by checkProfileModel.
 *   allReduce             (optional) the data-parallel gradient all-reduce as
 *                         measured over `replicas` processes (train.py
 *                         --profile): each measured sample (bytes, time) and
 *                         the α–β fit of the ring all-reduce, time =
 *                         2(n − 1)·latency + 2(n − 1)/n · bytes / bandwidth
 *                         (src/schedule's ring cost; bandwidth in bytes per
 *                         time unit).
 *   tpAllReduce           (optional) the same for the activation all-reduce of
 *                         a tensor-parallel group (train.py --profile with
 *                         tp ≥ 2): `replicas` is the group's processes, the
 *                         samples each block input's activation of one
 *                         micro-batch and two probe sizes.
 *   tp                    (optional, with tpAllReduce) {t, blocks}: each block
 *                         as one of the t workers of a tp group computes it
 *                         (its pieces of the split layers), the fields of a
 *                         block above plus `forward` and `backward`, the
 *                         collectives that worker waits for in one forward and
 *                         one backward ({coll: tp-all-reduce | tp-all-gather |
 *                         tp-reduce-scatter, bytes: the whole tensor's});
 *                         with sequence parallelism (`sequenceParallel`: true)
 *                         also `comm`, each boundary's time for the block of
 *                         token rows one tp worker sends; `pipelab plan --tp t`
 *                         plans from it (profile-tp.ts).
 *
 * `parseProfile` checks an unknown value and throws a ConfigError naming the
 * field (`profile.blocks[2].F`), the value and the rule.
 */
import { ConfigError, formatValue } from '../util/errors.ts';

export const PROFILE_VERSION = 1;
export const MAX_PROFILE_BLOCKS = 4096;

export interface BlockProfile {
  name: string;
  F: number;
  I: number;
  W: number;
  /** Full backward (I and W in one pass); I + W when not measured. */
  B: number;
  heldBytes: number;
  heldBytesRecompute: number;
  /** Bytes of the block's weights (= its gradients'); absent when not measured. */
  paramBytes?: number;
  /** The temporaries its worker held at its most (a backward's received gradient and working set); absent when not measured. */
  workBytes?: number;
}

export interface Profile {
  version: typeof PROFILE_VERSION;
  /** Unit of every time in the profile. */
  unit: 'ms' | 'unit';
  /** Where the numbers come from, for people (e.g. "measured on SwiftShader", "FLOPs estimate"). */
  source: string;
  blocks: BlockProfile[];
  /** Time across the boundary after block i, for i = 0 … n − 2. */
  comm: number[];
  /** Effective lanes of the shared device the profile was measured on; absent: independent devices. */
  lanes?: number;
  /** The model the profile was measured on; absent in hand-written and FLOPs profiles. */
  model?: ProfileModel;
  /** The all-reduce as measured on the cluster (train.py --profile with dp ≥ 2). */
  allReduce?: AllReduceProfile;
  /** A tp group's activation all-reduce as measured on the cluster (train.py --profile with tp ≥ 2). */
  tpAllReduce?: AllReduceProfile;
  /** The blocks as one worker of a tp group computes them, with its collectives (train.py --profile with tp ≥ 2). */
  tp?: TpProfile;
}

export type TpCollectiveKind = 'tp-all-reduce' | 'tp-all-gather' | 'tp-reduce-scatter';

/** One collective a tp worker waits for: its kind and the bytes of the whole tensor (summed or gathered). */
export interface TpCollectiveProfile {
  coll: TpCollectiveKind;
  bytes: number;
}

/** A block as one tp worker computes it: its times, held and weight bytes, and its collectives per micro-batch. */
export interface TpBlockProfile extends BlockProfile {
  forward: TpCollectiveProfile[];
  backward: TpCollectiveProfile[];
}

export interface TpProfile {
  /** Workers of the tp group the blocks were measured for. */
  t: number;
  /** One per block of the profile, in order. */
  blocks: TpBlockProfile[];
  /** Measured with sequence parallelism: each tp worker holds its block of the token rows between layers and stages. */
  sequenceParallel?: boolean;
  /** With sequence parallelism: comm[i], the time across boundary i for one tp worker's block of the rows. */
  comm?: number[];
}

export interface ProfileModel {
  /** For people: the model's name and size. */
  name: string;
  /** Identifies the model spec (profile-model.ts). */
  digest: string;
  /** Blocks of the model: the profile has one entry per block. */
  blocks: number;
}

export interface AllReduceProfile {
  /** Processes the all-reduces ran over (the data-parallel degree). */
  replicas: number;
  /** α: time per ring exchange. */
  latency: number;
  /** β: bytes per time unit. */
  bandwidth: number;
  /** What was measured: each all-reduce's size and mean time. */
  samples: { bytes: number; time: number }[];
}

const BLOCK_KEYS = ['name', 'F', 'I', 'W', 'B', 'heldBytes', 'heldBytesRecompute', 'paramBytes', 'workBytes'] as const;
const PROFILE_KEYS = ['version', 'unit', 'source', 'blocks', 'comm', 'lanes', 'model', 'allReduce', 'tpAllReduce', 'tp'] as const;
const TP_KEYS = ['t', 'blocks', 'sequenceParallel', 'comm'] as const;
const TP_BLOCK_KEYS = [...BLOCK_KEYS, 'forward', 'backward'] as const;
const TP_COLLECTIVES: readonly TpCollectiveKind[] = ['tp-all-reduce', 'tp-all-gather', 'tp-reduce-scatter'];
const MODEL_KEYS = ['name', 'digest', 'blocks'] as const;
const ALL_REDUCE_KEYS = ['replicas', 'latency', 'bandwidth', 'samples'] as const;

function isRecord(x: unknown): x is Record<string, unknown> {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}

function rejectUnknown(field: string, x: Record<string, unknown>, known: readonly string[], what = field === 'profile' ? 'profile' : 'block profile'): void {
  for (const k of Object.keys(x)) {
    if (!known.includes(k)) throw new ConfigError(`${field}.${k}`, x[k], `is not a field of a ${what}; known fields are ${known.join(', ')}`);
  }
}

function cost(field: string, x: unknown): number {
  if (x === undefined) throw new ConfigError(field, x, 'is missing: every block needs F, I and W times');
  if (typeof x !== 'number' || !Number.isFinite(x)) throw new ConfigError(field, x, 'must be a finite number');
  if (x < 0) throw new ConfigError(field, x, 'must be at least 0 (a time or a size cannot be negative)');
  return x;
}

function optionalCost(field: string, x: unknown, fallback: number): number {
  return x === undefined ? fallback : cost(field, x);
}

function parseBlock(i: number, x: unknown, field = `profile.blocks[${i}]`, known: readonly string[] = BLOCK_KEYS): BlockProfile {
  if (!isRecord(x)) throw new ConfigError(field, x, 'must be an object {F, I, W, heldBytes, ...}');
  rejectUnknown(field, x, known);
  const name = x.name ?? `block${i}`;
  if (typeof name !== 'string') throw new ConfigError(`${field}.name`, name, 'must be a string');
  const F = cost(`${field}.F`, x.F);
  const I = cost(`${field}.I`, x.I);
  const W = cost(`${field}.W`, x.W);
  const B = optionalCost(`${field}.B`, x.B, I + W);
  const heldBytes = optionalCost(`${field}.heldBytes`, x.heldBytes, 0);
  const heldBytesRecompute = optionalCost(`${field}.heldBytesRecompute`, x.heldBytesRecompute, heldBytes);
  if (heldBytesRecompute > heldBytes) {
    throw new ConfigError(`${field}.heldBytesRecompute`, heldBytesRecompute, `must be at most heldBytes (${heldBytes}): recomputation keeps less, not more`);
  }
  const out: BlockProfile = { name, F, I, W, B, heldBytes, heldBytesRecompute };
  if (x.paramBytes !== undefined) out.paramBytes = cost(`${field}.paramBytes`, x.paramBytes);
  if (x.workBytes !== undefined) out.workBytes = cost(`${field}.workBytes`, x.workBytes);
  return out;
}

function parseModel(x: unknown): ProfileModel {
  const field = 'profile.model';
  if (!isRecord(x)) throw new ConfigError(field, x, 'must be an object {name, digest, blocks}');
  rejectUnknown(field, x, MODEL_KEYS, "profile's model");
  if (typeof x.name !== 'string') throw new ConfigError(`${field}.name`, x.name, 'must be a string');
  if (typeof x.digest !== 'string' || x.digest === '') throw new ConfigError(`${field}.digest`, x.digest, 'must be a non-empty string');
  if (typeof x.blocks !== 'number' || !Number.isInteger(x.blocks) || x.blocks < 1) throw new ConfigError(`${field}.blocks`, x.blocks, 'must be a whole number ≥ 1');
  return { name: x.name, digest: x.digest, blocks: x.blocks };
}

function parseAllReduce(x: unknown, field = 'profile.allReduce'): AllReduceProfile {
  if (!isRecord(x)) throw new ConfigError(field, x, 'must be an object {replicas, latency, bandwidth, samples}');
  rejectUnknown(field, x, ALL_REDUCE_KEYS, "profile's all-reduce");
  if (typeof x.replicas !== 'number' || !Number.isInteger(x.replicas) || x.replicas < 2) throw new ConfigError(`${field}.replicas`, x.replicas, 'must be a whole number ≥ 2');
  const latency = cost(`${field}.latency`, x.latency);
  const bandwidth = cost(`${field}.bandwidth`, x.bandwidth);
  if (bandwidth === 0) throw new ConfigError(`${field}.bandwidth`, bandwidth, 'must be greater than 0 (bytes per time unit)');
  if (!Array.isArray(x.samples)) throw new ConfigError(`${field}.samples`, x.samples, 'must be a list of {bytes, time}');
  const samples = x.samples.map((e, i) => {
    if (!isRecord(e)) throw new ConfigError(`${field}.samples[${i}]`, e, 'must be an object {bytes, time}');
    return { bytes: cost(`${field}.samples[${i}].bytes`, e.bytes), time: cost(`${field}.samples[${i}].time`, e.time) };
  });
  return { replicas: x.replicas, latency, bandwidth, samples };
}

function parseCollectives(field: string, x: unknown): TpCollectiveProfile[] {
  if (!Array.isArray(x)) throw new ConfigError(field, x, 'must be a list of {coll, bytes} (empty when the block runs none)');
  return x.map((c, i) => {
    const f = `${field}[${i}]`;
    if (!isRecord(c)) throw new ConfigError(f, c, 'must be an object {coll, bytes}');
    rejectUnknown(f, c, ['coll', 'bytes'], 'tp collective');
    if (!TP_COLLECTIVES.includes(c.coll as TpCollectiveKind)) throw new ConfigError(`${f}.coll`, c.coll, `must be one of ${TP_COLLECTIVES.join(', ')}`);
    return { coll: c.coll as TpCollectiveKind, bytes: cost(`${f}.bytes`, c.bytes) };
  });
}

function parseTp(x: unknown, blocks: readonly BlockProfile[], fit: AllReduceProfile | undefined): TpProfile {
  const field = 'profile.tp';
  if (!isRecord(x)) throw new ConfigError(field, x, 'must be an object {t, blocks}');
  rejectUnknown(field, x, TP_KEYS, "profile's tp part");
  if (typeof x.t !== 'number' || !Number.isInteger(x.t) || x.t < 2) throw new ConfigError(`${field}.t`, x.t, 'must be a whole number ≥ 2 (the workers of a tp group)');
  if (fit && fit.replicas !== x.t) throw new ConfigError(`${field}.t`, x.t, `must be the tp group tpAllReduce was measured over (replicas = ${fit.replicas})`);
  if (!Array.isArray(x.blocks) || x.blocks.length !== blocks.length) {
    throw new ConfigError(`${field}.blocks.length`, Array.isArray(x.blocks) ? x.blocks.length : x.blocks, `must list one entry per block of the profile, ${blocks.length}`);
  }
  const tpBlocks = x.blocks.map((b, i): TpBlockProfile => {
    const f = `${field}.blocks[${i}]`;
    const blk = parseBlock(i, b, f, TP_BLOCK_KEYS);
    const r = b as Record<string, unknown>;
    return { ...blk, name: r.name === undefined ? blocks[i].name : blk.name, forward: parseCollectives(`${f}.forward`, r.forward), backward: parseCollectives(`${f}.backward`, r.backward) };
  });
  const out: TpProfile = { t: x.t, blocks: tpBlocks };
  if (x.sequenceParallel !== undefined) {
    if (typeof x.sequenceParallel !== 'boolean') throw new ConfigError(`${field}.sequenceParallel`, x.sequenceParallel, 'must be true or false');
    out.sequenceParallel = x.sequenceParallel;
  }
  if (x.comm !== undefined) {
    if (!out.sequenceParallel) throw new ConfigError(`${field}.comm`, x.comm, 'is for sequence parallelism (a tp worker sends its block of the rows): it needs sequenceParallel: true');
    if (!Array.isArray(x.comm) || x.comm.length !== blocks.length - 1) {
      throw new ConfigError(`${field}.comm.length`, Array.isArray(x.comm) ? x.comm.length : x.comm, `must list one time per boundary between blocks, ${blocks.length - 1} for ${blocks.length} blocks`);
    }
    out.comm = x.comm.map((c, i) => cost(`${field}.comm[${i}]`, c));
  }
  return out;
}

/** Checks `x` is a profile; fills defaults (B = I + W, names, comm 0, heldBytesRecompute = heldBytes). */
export function parseProfile(x: unknown): Profile {
  if (!isRecord(x)) throw new ConfigError('profile', x, 'must be an object {version, unit, blocks, comm}');
  rejectUnknown('profile', x, PROFILE_KEYS);
  const version = x.version ?? PROFILE_VERSION;
  if (version !== PROFILE_VERSION) throw new ConfigError('profile.version', version, `must be ${PROFILE_VERSION}`);
  const unit = x.unit ?? 'ms';
  if (unit !== 'ms' && unit !== 'unit') throw new ConfigError('profile.unit', unit, 'must be one of ms, unit');
  const source = x.source ?? '';
  if (typeof source !== 'string') throw new ConfigError('profile.source', source, 'must be a string');
  if (!Array.isArray(x.blocks) || x.blocks.length === 0) {
    throw new ConfigError('profile.blocks', x.blocks, 'must be a non-empty list of block profiles, one per model block');
  }
  if (x.blocks.length > MAX_PROFILE_BLOCKS) throw new ConfigError('profile.blocks.length', x.blocks.length, `must be at most ${MAX_PROFILE_BLOCKS}`);
  const blocks = x.blocks.map((b, i) => parseBlock(i, b));
  const n = blocks.length;
  const model = x.model === undefined ? undefined : parseModel(x.model);
  if (model && model.blocks !== n) {
    throw new ConfigError(
      'profile.blocks.length',
      n,
      n < model.blocks
        ? `profile.model says ${model.name} has ${model.blocks} blocks; blocks ${n}–${model.blocks - 1} are missing (a truncated profile?)`
        : `profile.model says ${model.name} has ${model.blocks} blocks; the profile lists more`,
    );
  }
  let comm: number[];
  if (x.comm === undefined) comm = new Array<number>(n - 1).fill(0);
  else {
    if (!Array.isArray(x.comm) || x.comm.length !== n - 1) {
      const len = Array.isArray(x.comm) ? x.comm.length : x.comm;
      throw new ConfigError('profile.comm.length', len, `must list one time per boundary between blocks, ${n - 1} for ${n} blocks`);
    }
    comm = x.comm.map((c, i) => cost(`profile.comm[${i}]`, c));
  }
  const out: Profile = { version: PROFILE_VERSION, unit, source, blocks, comm };
  if (x.lanes !== undefined) {
    if (typeof x.lanes !== 'number' || !Number.isFinite(x.lanes) || x.lanes <= 0) {
      throw new ConfigError('profile.lanes', x.lanes, 'must be a finite number greater than 0 (the device’s effective parallel lanes)');
    }
    out.lanes = x.lanes;
  }
  if (model) out.model = model;
  if (x.allReduce !== undefined) out.allReduce = parseAllReduce(x.allReduce);
  if (x.tpAllReduce !== undefined) out.tpAllReduce = parseAllReduce(x.tpAllReduce, 'profile.tpAllReduce');
  if (x.tp !== undefined) out.tp = parseTp(x.tp, blocks, out.tpAllReduce);
  return out;
}

/** Parses profile JSON text; malformed JSON is a ConfigError on `profile`. */
export function profileFromJson(text: string): Profile {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    throw new ConfigError('profile', text.length > 40 ? `${text.slice(0, 40)}…` : text, `is not valid JSON (${(e as Error).message})`);
  }
  return parseProfile(value);
}

/** The tp part's sequence-parallel fields as JSON members (empty without them). */
function tpExtras(tp: TpProfile): string {
  return `${tp.sequenceParallel === undefined ? '' : `, "sequenceParallel": ${tp.sequenceParallel}`}${tp.comm === undefined ? '' : `, "comm": ${JSON.stringify(tp.comm)}`}`;
}

/** JSON with one line per block, readable in a terminal or a diff; profileFromJson reads it back. */
export function profileToJson(p: Profile): string {
  const rows = p.blocks.map((b) => `    ${JSON.stringify(Object.fromEntries(BLOCK_KEYS.map((k) => [k, b[k]])))}`);
  return [
    '{',
    `  "version": ${p.version},`,
    `  "unit": ${JSON.stringify(p.unit)},`,
    `  "source": ${JSON.stringify(p.source)},`,
    '  "blocks": [',
    rows.join(',\n'),
    '  ],',
    `  "comm": ${JSON.stringify(p.comm)}${p.lanes === undefined ? '' : `,\n  "lanes": ${p.lanes}`}` +
      `${p.model === undefined ? '' : `,\n  "model": ${JSON.stringify(p.model)}`}${p.allReduce === undefined ? '' : `,\n  "allReduce": ${JSON.stringify(p.allReduce)}`}` +
      `${p.tpAllReduce === undefined ? '' : `,\n  "tpAllReduce": ${JSON.stringify(p.tpAllReduce)}`}` +
      `${p.tp === undefined ? '' : `,\n  "tp": {"t": ${p.tp.t}${tpExtras(p.tp)}, "blocks": [\n${p.tp.blocks.map((b) => `    ${JSON.stringify(Object.fromEntries(TP_BLOCK_KEYS.map((k) => [k, b[k]])))}`).join(',\n')}\n  ]}`}`,
    '}',
    '',
  ].join('\n');
}

/** Per-stage costs of a contiguous split: what the simulator and the schedule builder take. */
export interface StageCosts {
  F: number[];
  I: number[];
  W: number[];
  B: number[];
  heldBytes: number[];
  /** comm[s]: time across the boundary after stage s (s = 0 … stages − 2). */
  comm: number[];
}

/** Sums a profile over stage ranges [start, end) of blocks; `recompute` takes heldBytesRecompute. */
export function stageCosts(p: Profile, ranges: readonly (readonly [number, number])[], recompute = false): StageCosts {
  const out: StageCosts = { F: [], I: [], W: [], B: [], heldBytes: [], comm: [] };
  let expect = 0;
  ranges.forEach(([a, b], s) => {
    if (a !== expect || b <= a || b > p.blocks.length) {
      throw new ConfigError(`ranges[${s}]`, [a, b], `must be a non-empty block range starting at ${expect} and ending by ${p.blocks.length}`);
    }
    expect = b;
    let F = 0;
    let I = 0;
    let W = 0;
    let B = 0;
    let held = 0;
    for (let i = a; i < b; i++) {
      const blk = p.blocks[i];
      F += blk.F;
      I += blk.I;
      W += blk.W;
      B += blk.B;
      held += recompute ? blk.heldBytesRecompute : blk.heldBytes;
    }
    out.F.push(F);
    out.I.push(I);
    out.W.push(W);
    out.B.push(B);
    out.heldBytes.push(held);
    if (s < ranges.length - 1) out.comm.push(p.comm[b - 1]);
  });
  if (expect !== p.blocks.length) throw new ConfigError('ranges', formatValue(ranges), `must cover all ${p.blocks.length} blocks`);
  return out;
}

/** A profile with every block costing the same: F = I = W = 1, no memory, free links (the textbook case). */
export function uniformProfile(blocks: number): Profile {
  return {
    version: PROFILE_VERSION,
    unit: 'unit',
    source: 'uniform',
    blocks: Array.from({ length: blocks }, (_, i) => ({ name: `block${i}`, F: 1, I: 1, W: 1, B: 2, heldBytes: 0, heldBytesRecompute: 0 })),
    comm: new Array<number>(Math.max(0, blocks - 1)).fill(0),
  };
}
