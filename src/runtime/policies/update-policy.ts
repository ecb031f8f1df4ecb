/**
 * How a rank updates its weights, as its schedule's registry entry says
 * (src/schedule/registry.ts, `update`): the policy's contract is policy.ts.
 *
 * - 'flush': gradients accumulate over the step's micro-batches; at the end of
 *   the step the flush (flush.ts) sums each stage's gradients over its dp
 *   replicas (a ring all-reduce, or ZeRO-1's sharded update) and steps the
 *   optimizer; with ZeRO-2 or 3 (sharded-step.ts) the gradients are
 *   reduce-scattered after each backward and, with ZeRO-3, the weights
 *   all-gathered before each use.
 * - 'stash-and-update-after-backward' (PipeDream, pipedream-policy.ts): each
 *   stage applies its optimizer after every backward; a backward runs with the
 *   weight version its forward used.
 * - 'double-buffered' (PipeDream-2BW, double-buffer-policy.ts): each stage
 *   applies a block of m micro-batches' gradients, computed on the version
 *   before its latest, to its latest weights; two versions at most; with dp
 *   replicas the block's gradients are all-reduced over them first.
 */
import type { Backend } from '../../nn/backend.ts';
import type { TrainConfig } from '../../nn/train-config.ts';
import type { UpdatePolicyName } from '../../schedule/registry.ts';
import { Flush, type DataParallelParts, type SumCopies } from './flush.ts';
import { ShardedStep } from './sharded-step.ts';
import { StashPolicy } from './pipedream-policy.ts';
import { DoubleBufferPolicy, type StreamStart } from './double-buffer-policy.ts';
import type { UpdatableStage, UpdatePolicy } from './policy.ts';

export function createUpdatePolicy(
  name: UpdatePolicyName,
  be: Backend,
  stages: ReadonlyMap<number, UpdatableStage>,
  train: TrainConfig,
  dataParallel?: DataParallelParts,
  /** A schedule with model copies (DualPipe): the flush's sum over them before its update (copy-sum.ts sumCopies). */
  sumCopies?: SumCopies,
  /** A stream's start (a resumed one's first step) and its block-end hook (double-buffered only). */
  stream?: StreamStart,
  /** ZeRO-Offload: the flush's optimizer state on the host, its step on the CPU (flush.ts; ZeRO 0 and 1; sharded-step.ts: ZeRO-2). */
  offload = false,
): UpdatePolicy {
  if (offload && (name !== 'flush' || (dataParallel && dataParallel.dp > 1 && dataParallel.zero >= 3))) throw new Error(`optimizer offload runs at a flush with ZeRO 0, 1 or 2; the ${name} policy has none`);
  if (sumCopies && name !== 'flush') throw new Error(`model copies are summed at a flush; the ${name} policy has none`);
  switch (name) {
    case 'flush':
      if (dataParallel && dataParallel.dp > 1 && dataParallel.zero >= 2) return new ShardedStep(be, stages, train, dataParallel, sumCopies ?? null, offload);
      return new Flush(be, stages, train, dataParallel && dataParallel.dp > 1 ? dataParallel : null, sumCopies ?? null, offload);
    case 'stash-and-update-after-backward':
      return new StashPolicy(be, stages, train, train.microbatches);
    case 'double-buffered':
      return new DoubleBufferPolicy(be, stages, train, train.microbatches, dataParallel && dataParallel.dp > 1 ? dataParallel : null, stream);
  }
}
