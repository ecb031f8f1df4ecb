/**
 * The price of expert parallelism's all-to-all (GShard, Lepikhin et al. 2020; DeepSeek-V3, arXiv:2412.19437
 * §3.2): an MoE layer sends each token's hidden vector to the workers holding its k experts (dispatch) and
 * brings the experts' outputs back (combine), in the forward and again in the backward.
 *
 * One all-to-all over an ep group of n workers, `local` of them (the sender included) on the sender's node:
 * each worker sends `bytes` in all, spread evenly over the n members (balanced routing), so (local − 1)/n of
 * them to its node's peers over the node's links and (n − local)/n to other nodes over its NIC, both at once
 * (NCCL posts every peer's part together). Its time is one α (the fixed cost of a round; the inter-node α
 * when any part leaves the node) plus the slower of the two parts: α + max(bytes·(local − 1)/n / β_intra,
 * bytes·(n − local)/n / β_inter). The part a worker keeps (1/n) moves nothing. 0 with n ≤ 1.
 */
import { ConfigError, requireFinite } from '../util/errors.ts';
import type { Op } from './types.ts';

/** The links an all-to-all runs on: inside a node and across nodes, α in time units, β in bytes per time unit. */
export interface AllToAllLink {
  latencyIntra: number;
  bandwidthIntra: number;
  latencyInter: number;
  bandwidthInter: number;
}

/** One all-to-all of `bytes` a worker sends over n workers, `local` of them on its node (1 ≤ local ≤ n). */
export function allToAllTime(bytes: number, n: number, local: number, link: AllToAllLink): number {
  if (!Number.isInteger(n) || n < 1) throw new ConfigError('ep', n, 'must be a whole number ≥ 1 (workers sharing the experts)');
  if (!Number.isInteger(local) || local < 1 || local > n) throw new ConfigError('local', local, `must be a whole number between 1 and ep = ${n} (the ep group's workers on the sender's node)`);
  requireFinite('bytes', bytes, { min: 0 });
  if (n === 1) return 0;
  const intra = (bytes * (local - 1)) / n / link.bandwidthIntra;
  const inter = local < n ? (bytes * (n - local)) / n / link.bandwidthInter : 0;
  return (local < n ? link.latencyInter : link.latencyIntra) + Math.max(intra, inter);
}

/** One action kind's times: F, I (the backward's input half), W, B (the whole backward). */
export type OpTimes = Record<Op, number>;

/**
 * An action's times with its all-to-alls τ (τF the forward's, τI the backward's, which runs in I, or in B when the
 * backward is whole). Played after the compute: F + τF, I + τI, B + τI, W. Overlapped (DualPipe: a forward and a
 * backward chunk of two micro-batches at once, one's all-to-all under the other's compute): a forward and backward
 * pair costs max(F + B, τF + τI), so each op's compute is scaled by k = max(1, (τF + τI) / (F + B)).
 */
export function withAllToAll(op: OpTimes, tau: { F: number; I: number }, overlap: boolean): OpTimes {
  if (!overlap) return { F: op.F + tau.F, I: op.I + tau.I, B: op.B + tau.I, W: op.W };
  const pair = op.F + op.B;
  const k = tau.F + tau.I > 0 ? Math.max(1, (tau.F + tau.I) / pair) : 1;
  return { F: op.F * k, I: op.I * k, B: op.B * k, W: op.W * k };
}

/** The simulator's ep input (cost-model.ts `ep`): the group, its links, each stage's all-to-alls. */
export interface EpCosts {
  /** Workers sharing each stage's experts (n ≥ 1). */
  n: number;
  /** Of them, how many share a node (1 ≤ local ≤ n; n: the group is inside one node). */
  local: number;
  link: AllToAllLink;
  /**
   * Per stage, the bytes one worker sends in each all-to-all of one micro-batch (a dispatch or a combine of one of
   * its MoE layers): F's, and the backward's (in I, or in B when the backward is whole); W runs none.
   */
  messages: readonly { F: readonly number[]; I: readonly number[] }[];
  /** DualPipe's overlap (withAllToAll); default false: played after the compute. */
  overlap?: boolean;
}

/** Each stage's all-to-all time per op and micro-batch (τF, τI); checks the costs, throwing ConfigError naming costs.ep.<field>. */
export function epOpTimes(c: EpCosts, stages: number): { F: Float64Array; I: Float64Array } {
  const f = 'costs.ep';
  if (typeof c !== 'object' || c === null) throw new ConfigError(f, c, 'must be an object {n, local, link, messages}');
  if (!Number.isInteger(c.n) || c.n < 1) throw new ConfigError(`${f}.n`, c.n, 'must be a whole number ≥ 1 (workers sharing the experts)');
  if (!Number.isInteger(c.local) || c.local < 1 || c.local > c.n) throw new ConfigError(`${f}.local`, c.local, `must be a whole number between 1 and n = ${c.n} (the group's workers on one node)`);
  if (typeof c.link !== 'object' || c.link === null) throw new ConfigError(`${f}.link`, c.link, 'must be an object {latencyIntra, bandwidthIntra, latencyInter, bandwidthInter}');
  for (const k of ['latencyIntra', 'latencyInter'] as const) requireFinite(`${f}.link.${k}`, c.link[k], { min: 0 });
  for (const k of ['bandwidthIntra', 'bandwidthInter'] as const) {
    const b = c.link[k];
    if (typeof b !== 'number' || Number.isNaN(b) || b <= 0) throw new ConfigError(`${f}.link.${k}`, b, 'must be a number greater than 0 (bytes per time unit; Infinity for free links)');
  }
  if (c.overlap !== undefined && typeof c.overlap !== 'boolean') throw new ConfigError(`${f}.overlap`, c.overlap, 'must be true or false');
  if (!Array.isArray(c.messages) || c.messages.length !== stages) throw new ConfigError(`${f}.messages`, c.messages, `must list ${stages} stages' all-to-alls, one per stage`);
  const out = { F: new Float64Array(stages), I: new Float64Array(stages) };
  c.messages.forEach((m, s) => {
    for (const op of ['F', 'I'] as const) {
      const list = m?.[op];
      if (!Array.isArray(list)) throw new ConfigError(`${f}.messages[${s}].${op}`, list, 'must be a list of byte counts (one per all-to-all)');
      for (const bytes of list) out[op][s] += allToAllTime(requireFinite(`${f}.messages[${s}].${op}`, bytes, { min: 0 }), c.n, c.local, c.link);
    }
  });
  return out;
}

/**
 * The closed form of 1F1B (or GPipe) on p ranks of equal stages, m micro-batches, with each op's all-to-alls
 * τ (τF the forward's dispatch and combine, τB the backward's): played after the compute, the step is
 * (m + p − 1)·(F + τF + B + τB); overlapped (DualPipe's pairs of a forward and a backward chunk, one's
 * all-to-all under the other's compute), a forward and backward pair takes max(F + B, τF + τB), so the step
 * is (m + p − 1)·max(F + B, τF + τB). exposed: the all-to-all time a rank waits for in the step.
 */
export function epClosedForm(p: number, m: number, op: { F: number; B: number }, tau: { F: number; B: number }, overlap: boolean): { step: number; exposedPerRank: number } {
  const pair = overlap ? Math.max(op.F + op.B, tau.F + tau.B) : op.F + op.B + tau.F + tau.B;
  return { step: (m + p - 1) * pair, exposedPerRank: m * (pair - op.F - op.B) };
}
