/**
 * `pipelab simulate`'s ZeRO and tensor-parallel flags: their parsing and
 * refusals, the cost model's fields they build (allReduce.zero / reshard,
 * costs.tp), and their lines of text and JSON. The dp flags stay in
 * simulate-command.ts.
 */
import { abstractTpCosts, tpClosedForm, tpExchangeTime, tpGradSumTime, type AllReduceCosts, type Schedule, type SimulationResult, type TpCosts } from '../schedule/index.ts';
import { boolFlag, intFlag, numberFlag, oneOfFlag, stringFlag, UsageError, type FlagSpec, type ParsedArgs } from './args.ts';
import { count, fmt } from './format.ts';

/** Most tp workers per stage the CLI takes. */
export const MAX_CLI_TP = 64;
/** Most transformer layers per stage --tp-layers takes (each adds 4 collectives to every action's drawing). */
export const MAX_TP_LAYERS = 256;

/** --zero and --reshard, which `pipelab simulate` and `pipelab plan --profile` share. */
export const ZERO_FLAGS: FlagSpec[] = [
  {
    name: 'zero',
    value: 'Z',
    help:
      'ZeRO stage 0, 1, 2 or 3 (default 0; 1 or more needs --dp 2 or more). 1: reduce-scatter and all-gather at the flush (the all-reduce\'s time); ' +
      '2: reduce-scatter each stage\'s gradients after every B and W, all-gather its weights at the end; 3: also all-gather a stage\'s weights before the actions that read them',
  },
  { name: 'reshard', value: 'step|microbatch', help: 'ZeRO-3 only: keep a stage\'s gathered weights from its first action of the step to its last (step, default), or free them after every action and gather them again before the next (microbatch); the run configuration\'s reshard' },
];

export const MESH_FLAGS: FlagSpec[] = [
  ...ZERO_FLAGS,
  { name: 'tp', value: 'T', help: `tensor-parallel workers per stage (default 1, at most ${MAX_CLI_TP}): dp × ranks × T workers; --costs then give one tp worker's compute, collectives excluded` },
  { name: 'tp-layers', value: 'L', help: `transformer layers per stage (default 1, at most ${MAX_TP_LAYERS}): each runs 2 tp all-reduces in F and 2 in B (or I), Megatron's g and f` },
  { name: 'tp-bytes', value: 'BYTES', help: 'bytes of one tp all-reduce (a layer\'s activations for one micro-batch; default 0)' },
  {
    name: 'sequence-parallel',
    boolean: true,
    help: 'sequence parallelism (Korthikanti et al. 2022) on every layer: 4 collectives in F (all-gather, reduce-scatter, twice) and 4 in B (or I), each gather or scatter posting BYTES / T, the first gather of B 3·BYTES / T; and each stage\'s LayerNorm gradients summed (α) where its update reads them, once a step under a flush',
  },
  { name: 'tp-latency', value: 'T', help: 'tp: fixed time of one collective (α, default 0)' },
  { name: 'tp-bandwidth', value: 'BYTES', help: 'tp: bytes per time unit one worker sends (β, default inf: free); a collective takes α + (T − 1)·bytes/β' },
];

const TP_DETAIL_FLAGS = ['tp-layers', 'tp-bytes', 'tp-latency', 'tp-bandwidth', 'sequence-parallel'] as const;

export interface MeshFlags {
  zero: 0 | 1 | 2 | 3;
  /** The run configuration's word: 'microbatch' gathers before every action. */
  reshard: 'step' | 'microbatch';
  tp: number;
  layers: number;
  bytes: number;
  latency: number;
  bandwidth: number;
  sequenceParallel: boolean;
}

/** The ZeRO flags, checked against each other and against dp; throws UsageError naming the flag, the value and the rule. */
export function parseZeroFlags(a: ParsedArgs, dp: number): Pick<MeshFlags, 'zero' | 'reshard'> {
  const zero = (intFlag(a, 'zero', 0, 3) ?? 0) as MeshFlags['zero'];
  if (zero >= 1 && dp < 2) throw new UsageError('--zero', stringFlag(a, 'zero'), `ZeRO-${zero} shards over the data-parallel replicas: it needs --dp 2 or more (got --dp ${dp})`);
  const reshard = oneOfFlag(a, 'reshard', ['step', 'microbatch'] as const);
  if (reshard !== undefined && zero !== 3) throw new UsageError('--reshard', reshard, `applies to ZeRO-3 only: it needs --zero 3 (got --zero ${zero})`);
  return { zero, reshard: reshard ?? 'step' };
}

/** The ZeRO and tp flags, checked against each other and against dp; throws UsageError naming the flag, the value and the rule. */
export function parseMeshFlags(a: ParsedArgs, dp: number): MeshFlags {
  const { zero, reshard } = parseZeroFlags(a, dp);
  const tp = intFlag(a, 'tp', 1, MAX_CLI_TP) ?? 1;
  if (tp === 1) {
    for (const f of TP_DETAIL_FLAGS) {
      if (a.flags.has(f)) throw new UsageError(`--${f}`, a.flags.get(f), 'prices tensor parallelism\'s collectives: it needs --tp 2 or more (got --tp 1)');
    }
  }
  return {
    zero,
    reshard,
    tp,
    layers: intFlag(a, 'tp-layers', 1, MAX_TP_LAYERS) ?? 1,
    bytes: numberFlag(a, 'tp-bytes', 0) ?? 0,
    latency: numberFlag(a, 'tp-latency', 0) ?? 0,
    bandwidth: numberFlag(a, 'tp-bandwidth', Number.MIN_VALUE, true) ?? Infinity,
    sequenceParallel: boolFlag(a, 'sequence-parallel'),
  };
}

/** The ZeRO fields of costs.allReduce (nothing for ZeRO-0, so a plain dp run is what it was). */
export function zeroCosts(f: Pick<MeshFlags, 'zero' | 'reshard'>): Pick<AllReduceCosts, 'zero' | 'reshard'> {
  return f.zero === 0 ? {} : { zero: f.zero, reshard: f.reshard };
}

/**
 * costs.tp: every stage runs L GPT blocks whose activation is BYTES, one byte per element (abstractTpCosts); with
 * sequence parallelism each stage's LayerNorm gradient sum ends its backward `every` (gradSumEvery; absent: once a
 * step). Undefined with t = 1.
 */
export function tpCosts(f: MeshFlags, stages: number, every?: number): TpCosts | undefined {
  if (f.tp <= 1) return undefined;
  return abstractTpCosts({ t: f.tp, layers: f.layers, bytes: f.bytes, latency: f.latency, bandwidth: f.bandwidth, sequenceParallel: f.sequenceParallel, ...(every === undefined ? {} : { every }) }, stages);
}

const num = (x: number) => (Number.isFinite(x) ? fmt(x) : 'inf');

/** One tp all-reduce's time, α + (t − 1)·bytes/β; with sequence parallelism one gather's or scatter's, α + (t − 1)·(bytes / t)/β. */
export function tpEach(f: MeshFlags): number {
  return tpExchangeTime(f.sequenceParallel ? f.bytes / f.tp : f.bytes, f.tp, f.latency, f.bandwidth);
}

export interface TpClosed {
  step: number;
  tpPerRank: number;
  share: number;
  formula: string;
}

/**
 * tpClosedForm for GPipe and 1F1B with one stage per rank, free point-to-point links, a device per worker and
 * ZeRO 0/1 (whose collectives wait for the compute): the compute makespan; null elsewhere.
 */
export function tpClosed(s: Schedule, virtual: number, freeLinks: boolean, f: MeshFlags, r: SimulationResult, op: { F: number; B: number }): TpClosed | null {
  if (!r.tp || !freeLinks || virtual !== 1 || f.zero >= 2 || (s.name !== 'gpipe' && s.name !== '1f1b')) return null;
  const G = f.sequenceParallel ? tpGradSumTime(tpCosts(f, 1) as TpCosts, 0) : 0;
  const tau = { F: r.tp.opTime[0].F, B: r.tp.opTime[0].B, G };
  const cf = tpClosedForm(s.ranks, s.microbatches, op, tau);
  const sum = G > 0 ? ` + p·τG = ${s.microbatches + s.ranks - 1}·(${num(op.F)} + ${num(tau.F)} + ${num(op.B)} + ${num(tau.B)}) + ${s.ranks}·${num(G)}` : '';
  const formula = G > 0 ? `(m + p − 1)·(F + τF + B + τB)${sum}` : `(m + p − 1)·(F + τF + B + τB) = ${s.microbatches + s.ranks - 1}·(${num(op.F)} + ${num(tau.F)} + ${num(op.B)} + ${num(tau.B)})`;
  return { ...cf, formula };
}

/** The text lines of tp and ZeRO (none when neither is on). */
export function meshLines(s: Schedule, f: MeshFlags, r: SimulationResult, closed: TpClosed | null): string[] {
  const lines: string[] = [];
  if (r.tp) {
    const dp = r.dp?.dp ?? 1;
    const per = tpCosts(f, 1)!.messages[0];
    const each = f.sequenceParallel
      ? `each gather or scatter α + (t − 1)·(bytes/t)/β = ${num(f.latency)} + ${f.tp - 1}·${num(f.bytes / f.tp)}/${num(f.bandwidth)} = ${num(tpEach(f))}, B's first gather 3·bytes/t; each stage's LayerNorm gradients summed (4 bytes a layer: α) where the update reads them, once a step under a flush`
      : `each α + (t − 1)·bytes/β = ${num(f.latency)} + ${f.tp - 1}·${num(f.bytes)}/${num(f.bandwidth)} = ${num(tpEach(f))}`;
    lines.push(
      `tp         t = ${r.tp.t} workers per stage (${dp > 1 ? `${dp} replicas × ` : ''}${count(s.ranks, 'rank')} × ${r.tp.t} = ${dp * s.ranks * r.tp.t} workers), ${count(f.layers, 'layer')} per stage${f.sequenceParallel ? ' with sequence parallelism' : ''}, --costs per tp worker; ` +
        `tp collectives ${per.F.length} per F, ${per.B.length} per B (or I), ${each}; share of the step ${fmt(100 * r.tp.share, 3)}%`,
    );
    if (closed) {
      const what = r.dp ? 'the compute; the step adds the exposed all-reduce' : 'the step';
      lines.push(`tp closed form ${closed.formula} = ${num(closed.step)} (${what}); m·(τF + τB) = ${num(closed.tpPerRank)} per rank in tp collectives, ${fmt(100 * closed.share, 3)}% of it`);
    }
  }
  if (f.zero >= 2) {
    const gathers = f.zero === 2 ? 'its updated weights all-gathered at the end of the step' : `its weights all-gathered before the actions that read them (reshard ${f.reshard}: ${f.reshard === 'step' ? 'kept from a stage\'s first action of the step to its last' : 'gathered again before every action'}, one action ahead)`;
    lines.push(`zero       ZeRO-${f.zero}: its collectives are played between the actions, not at the flush: each stage's gradients reduce-scattered after every B and W, ${gathers}`);
  } else if (f.zero === 1) {
    lines.push('zero       ZeRO-1: reduce-scatter, shard update, all-gather at the flush: the same volume and time as the all-reduce');
  }
  return lines;
}

/** The JSON of tp: the result's r.tp, the flags' values and the closed form. */
export function tpJson(f: MeshFlags, r: SimulationResult, closed: TpClosed | null): Record<string, unknown> {
  return {
    ...r.tp,
    layers: f.layers,
    bytes: f.bytes,
    latency: f.latency,
    bandwidth: Number.isFinite(f.bandwidth) ? f.bandwidth : 'inf',
    sequenceParallel: f.sequenceParallel,
    collectiveTime: tpEach(f),
    closedForm: closed ? { step: closed.step, tpPerRank: closed.tpPerRank, share: closed.share, formula: closed.formula } : null,
  };
}
