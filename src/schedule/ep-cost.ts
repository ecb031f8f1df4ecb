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
