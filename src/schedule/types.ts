/**
 * The schedule as data: the one value that generators produce and the
 * validator, simulator, runtime and views read. It is the same shape as
 * torch.distributed.pipelining's compute-only pipeline order.
 */

/** F forward, B full backward, I backward for the input only, W backward for the weights only. */
export type Op = 'F' | 'B' | 'I' | 'W';

export const OPS: readonly Op[] = ['F', 'B', 'I', 'W'];

/** One unit of work: `op` of micro-batch `mb` on pipeline stage `stage`. Written `2F0` as text. */
export interface Action {
  stage: number;
  op: Op;
  mb: number;
}

/**
 * A whole pipeline step. `stages` = copies · ranks · v (v stages per rank),
 * `stageToRank[s]` is the rank that holds stage s, and `order[r]` the
 * actions rank r runs, in order.
 *
 * `copies` (absent: 1) is for schedules that run several copies of the whole
 * model at once (DualPipe: 2). The stages are then cut into `copies` runs of
 * stages / copies each, copy c being stages [c·k, (c+1)·k), k = stages / copies:
 * each run is a whole model (its first stage takes the data, its last computes
 * the loss; stage c·k + j holds the same blocks as stage j), and copy c takes
 * the micro-batches [c·n, (c+1)·n), n = microbatches / copies. Dependencies stay
 * within a copy (copies.ts); at the flush the copies' gradients of each stage
 * are summed, so every copy takes the same update.
 */
export interface Schedule {
  name: string;
  stages: number;
  ranks: number;
  microbatches: number;
  stageToRank: number[];
  order: Action[][];
  copies?: number;
}

