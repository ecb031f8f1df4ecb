/**
 * `pipelab simulate`'s expert-parallel flags: their parsing and refusals, the cost model's `ep` they build
 * (schedule/ep-cost.ts), and their line of text and JSON.
 */
import { allToAllTime, epClosedForm, type EpCosts, type Schedule, type SimulationResult } from '../schedule/index.ts';
import { boolFlag, intFlag, numberFlag, stringFlag, UsageError, type FlagSpec, type ParsedArgs } from './args.ts';
import { count, fmt } from './format.ts';
import { MAX_TP_LAYERS } from './simulate-mesh-flags.ts';

/** Most ep workers the CLI takes. */
export const MAX_CLI_EP = 4096;

export const EP_FLAGS: FlagSpec[] = [
  { name: 'ep', value: 'E', help: `expert-parallel workers sharing each stage's experts (default 1, at most ${MAX_CLI_EP}), among its dp × tp workers (E must divide dp · tp, Megatron's expert grid)` },
  { name: 'ep-layers', value: 'L', help: `MoE layers per stage (default 1, at most ${MAX_TP_LAYERS}): each runs a dispatch and a combine all-to-all in F and again in B (or I)` },
  { name: 'ep-bytes', value: 'BYTES', help: 'bytes one worker sends in one dispatch (or combine): its routed rows × hidden × bytes per element (default 0)' },
  { name: 'ep-per-node', value: 'K', help: 'workers of an ep group on one node (default E: the group inside a node); 1 ≤ K ≤ E' },
  { name: 'ep-latency', value: 'T', help: 'ep: fixed time of an all-to-all inside a node (α, default 0)' },
  { name: 'ep-bandwidth', value: 'BYTES', help: 'ep: bytes per time unit a worker sends inside a node (β, default inf: free)' },
  { name: 'ep-latency-inter', value: 'T', help: 'ep: α of an all-to-all that leaves the node (default: --ep-latency)' },
  { name: 'ep-bandwidth-inter', value: 'BYTES', help: 'ep: bytes per time unit a worker sends to other nodes (default: --ep-bandwidth); an all-to-all takes α + max(bytes·(K − 1)/E / β, bytes·(E − K)/E / β_inter)' },
  { name: 'ep-overlap', boolean: true, help: 'overlap the all-to-alls with compute as DualPipe does: a forward and backward pair costs max(compute, all-to-all)' },
];

const EP_DETAIL_FLAGS = ['ep-layers', 'ep-bytes', 'ep-per-node', 'ep-latency', 'ep-bandwidth', 'ep-latency-inter', 'ep-bandwidth-inter', 'ep-overlap'] as const;

export interface EpFlags {
  ep: number;
  perNode: number;
  layers: number;
  bytes: number;
  latency: number;
  bandwidth: number;
  latencyInter: number;
  bandwidthInter: number;
  overlap: boolean;
}

/** The ep flags, checked against each other and against dp × tp; null without --ep (or --ep 1). Throws UsageError naming the flag, the value and the rule. */
export function parseEpFlags(a: ParsedArgs, dp: number, tp: number): EpFlags | null {
  const ep = intFlag(a, 'ep', 1, MAX_CLI_EP) ?? 1;
  if (ep === 1) {
    for (const f of EP_DETAIL_FLAGS) {
      if (a.flags.has(f)) throw new UsageError(`--${f}`, a.flags.get(f), "prices expert parallelism's all-to-alls: it needs --ep 2 or more (got --ep 1)");
    }
    return null;
  }
  if ((dp * tp) % ep !== 0) throw new UsageError('--ep', stringFlag(a, 'ep'), `must divide dp · tp = ${dp} · ${tp} = ${dp * tp}: the ep workers are a stage's data- and tensor-parallel workers (Megatron's expert grid)`);
  const perNode = intFlag(a, 'ep-per-node', 1, ep) ?? ep;
  const latency = numberFlag(a, 'ep-latency', 0) ?? 0;
  const bandwidth = numberFlag(a, 'ep-bandwidth', Number.MIN_VALUE, true) ?? Infinity;
  return {
    ep,
    perNode,
    layers: intFlag(a, 'ep-layers', 1, MAX_TP_LAYERS) ?? 1,
    bytes: numberFlag(a, 'ep-bytes', 0) ?? 0,
    latency,
    bandwidth,
    latencyInter: numberFlag(a, 'ep-latency-inter', 0) ?? latency,
    bandwidthInter: numberFlag(a, 'ep-bandwidth-inter', Number.MIN_VALUE, true) ?? bandwidth,
    overlap: boolFlag(a, 'ep-overlap'),
  };
}

/** costs.ep: every stage's L MoE layers, each a dispatch and a combine of BYTES in F and in the backward. */
export function epCostsOf(f: EpFlags, stages: number): EpCosts {
  const twice = Array.from({ length: 2 * f.layers }, () => f.bytes);
  return {
    n: f.ep,
    local: f.perNode,
    link: { latencyIntra: f.latency, bandwidthIntra: f.bandwidth, latencyInter: f.latencyInter, bandwidthInter: f.bandwidthInter },
    overlap: f.overlap,
    messages: Array.from({ length: stages }, () => ({ F: [...twice], I: [...twice] })),
  };
}

/** One all-to-all's time. */
export function epEach(f: EpFlags): number {
  return allToAllTime(f.bytes, f.ep, f.perNode, epCostsOf(f, 1).link);
}

const num = (x: number) => (Number.isFinite(x) ? fmt(x) : 'inf');

/**
 * epClosedForm for GPipe and 1F1B with one stage per rank, free point-to-point links, a device per worker, no tp
 * collectives and nothing holding the compute back: the compute's step (replicas play in lock step, their all-reduce
 * after it) and its formula; null elsewhere.
 */
export function epClosed(s: Schedule, virtual: number, plain: boolean, f: EpFlags, op: { F: number; B: number }): { step: number; formula: string } | null {
  if (!plain || virtual !== 1 || (s.name !== 'gpipe' && s.name !== '1f1b')) return null;
  const tau = 2 * f.layers * epEach(f);
  const cf = epClosedForm(s.ranks, s.microbatches, op, { F: tau, B: tau }, f.overlap);
  const n = s.microbatches + s.ranks - 1;
  const formula = f.overlap ? `(m + p − 1)·max(F + B, τF + τB) = ${n}·max(${num(op.F)} + ${num(op.B)}, ${num(tau)} + ${num(tau)})` : `(m + p − 1)·(F + τF + B + τB) = ${n}·(${num(op.F)} + ${num(tau)} + ${num(op.B)} + ${num(tau)})`;
  return { step: cf.step, formula };
}

/** The text line of ep. */
export function epLine(f: EpFlags, closed: { step: number; formula: string } | null): string {
  const where = f.perNode === f.ep ? 'inside a node' : `${f.perNode} a node`;
  const how = f.overlap ? 'overlapped with the compute (a forward and backward pair costs max(compute, all-to-all))' : 'played after the compute';
  return (
    `ep         ${count(f.ep, 'worker')} share each stage's experts (${where}), ${count(f.layers, 'MoE layer')} per stage: ${2 * f.layers} all-to-alls in F and ${2 * f.layers} in B (or I), each ${num(epEach(f))}; ${how}` +
    (closed ? `; closed form of the compute ${num(closed.step)} = ${closed.formula}` : '')
  );
}

/** The JSON of ep. */
export function epJson(f: EpFlags, closed: { step: number; formula: string } | null, r: SimulationResult): Record<string, unknown> {
  return { ep: f.ep, perNode: f.perNode, layers: f.layers, bytes: f.bytes, each: epEach(f), overlap: f.overlap, allToAlls: r.timeline.intervals.filter((iv) => iv.coll === 'ep-all-to-all').length, closedForm: closed };
}
