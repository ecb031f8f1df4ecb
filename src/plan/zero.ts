/**
 * ZeRO stages 0–3 in the planner (Rajbhandari et al. 2020, "ZeRO: Memory
 * Optimizations Toward Training Trillion Parameter Models", arXiv:1910.02054).
 *
 * Memory (§5, Figure 1): Ψ parameters, N_d data-parallel replicas, e bytes a
 * weight and a gradient (2 in mixed precision, 4 in fp32) and K bytes of
 * optimizer state a parameter (Adam: 12 in mixed precision, the fp32 master
 * copy, m and v; 8 in fp32, m and v), per device:
 *   stage 0 (baseline)  (e + e + K)·Ψ
 *   stage 1 (P_os)      e·Ψ + e·Ψ + K·Ψ/N_d
 *   stage 2 (P_os+g)    e·Ψ + (e + K)·Ψ/N_d
 *   stage 3 (P_os+g+p)  (e + e + K)·Ψ/N_d
 * The paper's Figure 1 (Ψ = 7.5B, N_d = 64, K = 12, e = 2): 120 GB, 31.4 GB,
 * 16.6 GB, 1.9 GB (zero-paper.test.ts). Stage 3 also holds, transiently, the
 * full weights of what it has gathered: mesh-costs.ts adds one block's (a
 * transformer layer, or the embedding or the head, whichever of the rank's is
 * largest), as FSDP wraps each transformer layer; like the paper's model
 * states, the gradient buckets waiting for their reduce-scatter and the next
 * unit a prefetch gathers early are not counted.
 *
 * Communication per stage per step (§7), a reduce-scatter or an all-gather of
 * a stage's G bytes over a ring of n = N_d workers sending (n − 1)/n · G each
 * (half an all-reduce), with m micro-batches under gradient accumulation, as
 * this repo's runtime runs them (src/runtime/policies/flush.ts, sharded-step.ts):
 *   stage 0  one all-reduce at the flush                       2·G·(n − 1)/n
 *   stage 1  one reduce-scatter, shard update, one all-gather  2·G·(n − 1)/n
 *   stage 2  a reduce-scatter after every backward, one
 *            all-gather of the updated weights at the end      (m + 1)·G·(n − 1)/n
 *   stage 3  `reshard: 'step'`: one all-gather before the stage's first
 *            forward, m reduce-scatters                        (m + 1)·G·(n − 1)/n
 *            `reshard: 'microbatch'`: an all-gather before every forward
 *            and every backward, m reduce-scatters             3m·G·(n − 1)/n
 * At m = 1 stages 1 and 2 move what the all-reduce moves and stage 3 1.5 times
 * it, the paper's §7 numbers. The planner's stage 3 is `reshard: 'microbatch'`
 * (FSDP's reshard_after_forward = True): kept for the whole step, the gathered
 * weights would hold as much as stage 2 and more, so only re-gathering saves.
 *
 * Time (mesh-costs.ts applies it; H is one reduce-scatter or all-gather of
 * the stage, half the ring all-reduce the simulator prices, on the same
 * link). Assumptions, kept simple:
 *  - stage 1: the all-reduce's time at the flush (the same volume);
 *  - stage 2: the flush runs the last micro-batch's reduce-scatter and the
 *    all-gather, again one all-reduce's time; the m − 1 earlier reduce-scatters
 *    run on the link behind the later micro-batches' compute;
 *  - stage 3: the gather before a forward or a backward is prefetched during
 *    the rank's previous action (FSDP's and the runtime's default), so an F, B
 *    or I that reads the weights takes max(its compute, H): exposed only where
 *    the link is slower than the compute; W reads no weights. The step's
 *    first gather has nothing before it to hide behind: it is counted at the
 *    flush, after the last reduce-scatter (steps follow one another), so the
 *    flush is again RS + AG, one all-reduce's time, and stage 3 is never
 *    priced faster than stage 1;
 *  - stages 2 and 3: however well they overlap, a rank's link must carry all
 *    of them, so the step lasts at least the rank's link time, the sum over its
 *    stages of (m + 1)·H resp. 3m·H (zeroLinkBoundMs), the step taken as the
 *    later of that and the simulated step.
 */
import { ConfigError } from '../util/errors.ts';

export const ZERO_STAGES = [0, 1, 2, 3] as const;
export type ZeroStage = (typeof ZERO_STAGES)[number];
/**
 * What a plan request says of ZeRO: 'auto' (default) the least stage that fits, tried 0 → 1 → 2 → 3; a
 * stage fixes it for every layout with dp > 1. Booleans, as the planner took them before stages 2 and 3:
 * false is stage 0, true the old default (ZeRO-1 where nothing fits without it).
 */
export type ZeroChoice = ZeroStage | 'auto' | boolean;
export type ReshardMode = 'step' | 'microbatch';

export function checkZeroChoice(x: unknown): void {
  if (x === undefined || x === 'auto' || typeof x === 'boolean' || (ZERO_STAGES as readonly unknown[]).includes(x)) return;
  throw new ConfigError('zero', x, 'must be 0, 1, 2, 3 (the ZeRO stage) or auto (the least sharding that fits)');
}

/** The stages a layout with dp replicas tries, in order (dp = 1 has nothing to shard across). */
export function zeroStagesToTry(choice: ZeroChoice | undefined, dp: number): ZeroStage[] {
  if (dp <= 1 || choice === false || choice === 0) return [0];
  if (choice === undefined || choice === 'auto') return [0, 1, 2, 3];
  if (choice === true) return [0, 1];
  return [choice];
}

/** The highest stage a request lets a layout with replicas try. */
export function highestZero(choice: ZeroChoice | undefined): ZeroStage {
  const s = zeroStagesToTry(choice, 2);
  return s[s.length - 1];
}

/** A boolean stage (the planner's before stages 2 and 3) as a stage: true is ZeRO-1. */
export function asZeroStage(zero: ZeroStage | boolean): ZeroStage {
  return zero === true ? 1 : zero === false ? 0 : zero;
}

/** Bytes of model states a parameter on one device: e a weight, e a gradient, K the optimizer's, at `zero` over dp replicas. */
export function modelStateBytesPerParam(e: number, K: number, zero: ZeroStage | boolean, dp: number): number {
  const z = asZeroStage(zero);
  const n = z > 0 ? dp : 1;
  return e / (z >= 3 ? n : 1) + e / (z >= 2 ? n : 1) + K / (z >= 1 ? n : 1);
}

/** Collectives one stage runs over its dp group per step (each all-gather and reduce-scatter moves the stage's G bytes). */
export interface ZeroCollectives {
  allReduces: number;
  reduceScatters: number;
  allGathers: number;
}

export function zeroCollectives(zero: ZeroStage, m: number, reshard: ReshardMode = 'microbatch'): ZeroCollectives {
  if (zero === 0) return { allReduces: 1, reduceScatters: 0, allGathers: 0 };
  if (zero === 1) return { allReduces: 0, reduceScatters: 1, allGathers: 1 };
  if (zero === 2 || reshard === 'step') return { allReduces: 0, reduceScatters: m, allGathers: 1 };
  return { allReduces: 0, reduceScatters: m, allGathers: 2 * m };
}

/** Reduce-scatters and all-gathers (halves of an all-reduce) of one stage per step. */
export function zeroHalves(zero: ZeroStage, m: number, reshard: ReshardMode = 'microbatch'): number {
  const c = zeroCollectives(zero, m, reshard);
  return 2 * c.allReduces + c.reduceScatters + c.allGathers;
}

/** Bytes one worker sends per step for a stage of G bytes over a ring of n: (n − 1)/n · G per half. */
export function zeroSentBytes(zero: ZeroStage, m: number, G: number, n: number, reshard: ReshardMode = 'microbatch'): number {
  return n <= 1 ? 0 : (zeroHalves(zero, m, reshard) * G * (n - 1)) / n;
}

/**
 * The least step a rank's link allows at ZeRO-2 or 3: for each rank, the sum over its stages of every
 * half (reduce-scatter or all-gather) the stage runs in a step, each `halfMs[stage]`; 0 at stages 0 and 1,
 * whose one all-reduce the simulator already places after the compute.
 */
export function zeroLinkBoundMs(halfMs: readonly number[], stageToRank: readonly number[], zero: ZeroStage, m: number): number {
  if (zero < 2) return 0;
  const perRank = new Map<number, number>();
  const k = zeroHalves(zero, m);
  halfMs.forEach((h, s) => perRank.set(stageToRank[s], (perRank.get(stageToRank[s]) ?? 0) + k * h));
  return Math.max(0, ...perRank.values());
}
