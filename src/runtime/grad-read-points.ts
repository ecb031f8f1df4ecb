/**
 * After which of a worker's actions its update policy next reads a stage's weight gradients (to sum them over
 * the replicas, shard them or step the optimizer): where gradients a worker holds in part must be whole.
 * Sequence parallelism's LayerNorm gradients are such (each tp worker's cover its block of the token rows), and
 * the executor sums them over the tp group there (Stage.sumGradsOverTp), as Megatron all-reduces them once
 * before the optimizer rather than after every micro-batch; the simulator plays the sum at the same actions
 * (tp-cost.ts gradSumActions, TpCosts.gradSum):
 *
 * - 'flush' (every synchronous schedule, ZeRO 0 and 1): after the stage's last B or W of the step (flush.ts
 *   starts its replicas' all-reduce there, or the update reads them at the step's end);
 * - 'flush' with ZeRO-2 or 3 beside replicas: after every B and W (sharded-step.ts reduce-scatters each);
 * - 'stash-and-update-after-backward' (PipeDream): after every B (its update);
 * - 'double-buffered' (PipeDream-2BW): after every m-th B of a stage, the last of each block of m.
 */
import { gradSumEvery, type UpdatePolicyName } from '../schedule/registry.ts';
import { gradSumActions, gradSumKey } from '../schedule/tp-cost.ts';
import type { Action } from '../schedule/types.ts';

/** Whether the policy reads the stage's gradients after action `a` of a worker running `order` each step. */
export function gradReadPoints(update: UpdatePolicyName, sharded: boolean, order: readonly Action[], microbatches: number): (a: Action) => boolean {
  const at = gradSumActions([order], gradSumEvery(update, sharded, microbatches));
  return (a) => at.has(gradSumKey(a));
}
