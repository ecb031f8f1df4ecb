/** The run field `ep` (expert parallelism, run-config.ts): its value and its rules. */
import { ConfigError, requireInt } from '../util/errors.ts';
import { moeOf, type MoeFields } from '../nn/moe/moe-config.ts';

/** What the ep rules read of a run configuration. */
export interface EpFields extends MoeFields {
  readonly ep?: number;
  readonly tp: number;
  readonly dp: number;
  readonly ranks: number;
  readonly zero: number;
  readonly schedule: string;
  readonly batchSize: number;
  readonly microbatches: number;
}

/** ep of a configuration (absent: 1). */
export function epOf(cfg: { readonly ep?: number }): number {
  return cfg.ep ?? 1;
}

/**
 * The fourth axis: ep a whole number ≥ 1; above 1 only on a model with experts that ep divides, with tp = 1 (an MoE
 * block split over tp workers is not built), with a synchronous schedule without ZeRO (the expert shards' ZeRO and
 * PipeDream's per-backward updates are not built for ep yet), each micro-batch's sequences divisible by ep (each ep
 * worker takes its slice), and dp × ep × tp × ranks workers within the limit.
 */
export function validateExpertParallel(cfg: EpFields, synchronous: boolean, maxWorkers: number): void {
  if (cfg.ep === undefined) return;
  const ep = requireInt('ep', cfg.ep, 1, maxWorkers);
  if (ep === 1) return;
  const moe = moeOf(cfg);
  if (!moe) throw new ConfigError('ep', ep, 'shards a model’s experts over ep workers; this model has none (set experts ≥ 2, or ep = 1)');
  if (moe.experts % ep !== 0) throw new ConfigError('ep', ep, `must divide experts = ${moe.experts}: each of a stage’s ep workers holds experts / ep whole experts`);
  if (cfg.tp !== 1) throw new ConfigError('ep', ep, `needs tp = 1 (tp = ${cfg.tp}): ep beside tp is not built yet (an MoE block is not split over tp workers here)`);
  const workers = cfg.dp * ep * cfg.tp * cfg.ranks;
  if (workers > maxWorkers) {
    throw new ConfigError('ep', ep, `dp × ep × tp × ranks = ${cfg.dp} × ${ep} × ${cfg.tp} × ${cfg.ranks} = ${workers} workers; at most ${maxWorkers} workers run in one tab`);
  }
  if (!synchronous) throw new ConfigError('ep', ep, `needs a synchronous schedule (one update per step); ${cfg.schedule} updates otherwise, which ep does not support yet`);
  if (cfg.zero !== 0) throw new ConfigError('ep', ep, `needs zero = 0 (zero = ${cfg.zero}): ZeRO beside ep is not built yet`);
  const perMb = cfg.batchSize / (cfg.dp * cfg.microbatches);
  if (Number.isInteger(perMb) && perMb % ep !== 0) {
    throw new ConfigError('ep', ep, `must divide each micro-batch's ${perMb} sequences (batchSize / (dp × microbatches)): each ep worker takes its slice of them`);
  }
}

