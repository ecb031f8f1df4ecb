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
 * A whole pipeline step. `stages` = ranks · v (v stages per rank),
 * `stageToRank[s]` is the rank that holds stage s, and `order[r]` the
 * actions rank r runs, in order.
 */
export interface Schedule {
  name: string;
  stages: number;
  ranks: number;
  microbatches: number;
  stageToRank: number[];
  order: Action[][];
}

