/**
 * The one playing engine behind the simulator and the validator's deadlock
 * check. Every rank runs its actions in order; an action starts when its rank
 * is free and every input has arrived (its producer's end, plus the link's
 * delay when the producer sits on another rank). Sends never block; receives
 * do. A schedule deadlocks exactly when this play gets stuck.
 *
 * Dependencies of (stage s, op, micro-batch i), with S stages:
 *   F  needs F(s−1, i)                           (the activation), for s > 0
 *   B  needs F(s, i), and B or I of (s+1, i)      (the output gradient), for s < S−1
 *   I  same as B
 *   W  needs I(s, i)
 * With model copies (types.ts `copies`, copies.ts) "s > 0" and "s < S−1" are
 * within the stage's copy: a copy's first stage reads data, its last the loss.
 *
 * Cost: O(actions). Each rank is resumed only when the single input it is
 * blocked on completes, so every action is examined a bounded number of times.
 * The caller guarantees a structurally sound schedule (stages, micro-batches
 * in range, each stage on the rank that runs it, no duplicates).
 */
import type { Action, Schedule } from './types.ts';

export interface PlayCosts {
  /** Duration of `a` on its rank. */
  duration(a: Action): number;
  /** Delay of a message from `fromRank` to `toRank` carrying the tensor at the boundary after stage `boundary`. */
  linkDelay(fromRank: number, toRank: number, boundary: number): number;
  /** Called when `a` starts on `rank` with an input that crossed from `fromRank` with a nonzero delay. */
  onTransfer?(a: Action, rank: number, fromRank: number, sentAt: number, arrivedAt: number): void;
  /**
   * The start of order[rank][index] = `a`, once its inputs are in: at least `ready`; `free` is when its rank
   * finished the action before (ZeRO-3's weight gathers and ZeRO-2/3's collectives on the rank's link may hold
   * it back: simulate-zero.ts). Called once per action, in each rank's order; `onEnd` right after.
   */
  startAt?(rank: number, index: number, a: Action, free: number, ready: number): number;
  onEnd?(rank: number, index: number, a: Action, start: number, end: number): void;
}

/** What a blocked rank is waiting for: the F (slot 0) or the B/I (slot 1) of (stage, mb). */
export interface Wait {
  rank: number;
  /** Index in order[rank] of the blocked action. */
  index: number;
  stage: number;
  slot: 0 | 1;
  mb: number;
}

export interface Play {
  /** start[r][i], end[r][i]: times of order[r][i]; NaN where it never ran. */
  start: Float64Array[];
  end: Float64Array[];
  /** The ranks that could not finish, each with what it waits for; empty when the play completed. */
  stuck: Wait[];
}

export function play(s: Schedule, costs: PlayCosts): Play {
  const S = s.stages;
  const m = s.microbatches;
  const R = s.ranks;
  const keys = S * m;
  // Stages per model copy: F of a copy's first stage and B/I of its last need no neighbour (copies.ts).
  const perCopy = S / (s.copies ?? 1);
  // finish[slot*keys + stage*m + mb]: end time of the F (slot 0) or B/I (slot 1) of (stage, mb); −1 until it ran.
  const finish = new Float64Array(2 * keys).fill(-1);
  const waitHead = new Int32Array(2 * keys).fill(-1);
  const waitNext = new Int32Array(R).fill(-1);
  const waitKey = new Int32Array(R).fill(-1);
  const ptr = new Int32Array(R);
  const free = new Float64Array(R);
  const start: Float64Array[] = [];
  const end: Float64Array[] = [];
  for (let r = 0; r < R; r++) {
    const n = s.order[r].length;
    start.push(new Float64Array(n).fill(NaN));
    end.push(new Float64Array(n).fill(NaN));
  }
  const stack: number[] = [];
  for (let r = R - 1; r >= 0; r--) stack.push(r);
  const s2r = s.stageToRank;

  while (stack.length > 0) {
    const r = stack.pop() as number;
    waitKey[r] = -1;
    const list = s.order[r];
    let t = free[r];
    let i = ptr[r];
    run: for (; i < list.length; i++) {
      const a = list[i];
      const base = a.stage * m + a.mb;
      let ready = t;
      let blockedOn = -1;
      let sentFrom = -1;
      let sentAt = 0;
      let arrivedAt = 0;
      if (a.op === 'F') {
        if (a.stage % perCopy !== 0) {
          const k = base - m;
          const f = finish[k];
          if (f < 0) blockedOn = k;
          else {
            const from = s2r[a.stage - 1];
            const arrive = from === r ? f : f + costs.linkDelay(from, r, a.stage - 1);
            if (arrive > f) {
              sentFrom = from;
              sentAt = f;
              arrivedAt = arrive;
            }
            if (arrive > ready) ready = arrive;
          }
        }
      } else if (a.op === 'W') {
        const k = keys + base;
        const f = finish[k];
        if (f < 0) blockedOn = k;
        else if (f > ready) ready = f;
      } else {
        const f = finish[base];
        if (f < 0) blockedOn = base;
        else {
          if (f > ready) ready = f;
          if ((a.stage + 1) % perCopy !== 0) {
            const k = keys + base + m;
            const g = finish[k];
            if (g < 0) blockedOn = k;
            else {
              const from = s2r[a.stage + 1];
              const arrive = from === r ? g : g + costs.linkDelay(from, r, a.stage);
              if (arrive > g) {
                sentFrom = from;
                sentAt = g;
                arrivedAt = arrive;
              }
              if (arrive > ready) ready = arrive;
            }
          }
        }
      }
      if (blockedOn >= 0) {
        waitKey[r] = blockedOn;
        waitNext[r] = waitHead[blockedOn];
        waitHead[blockedOn] = r;
        break run;
      }
      if (costs.startAt) ready = costs.startAt(r, i, a, t, ready);
      const e = ready + costs.duration(a);
      costs.onEnd?.(r, i, a, ready, e);
      if (sentFrom >= 0 && costs.onTransfer) costs.onTransfer(a, r, sentFrom, sentAt, arrivedAt);
      start[r][i] = ready;
      end[r][i] = e;
      t = e;
      if (a.op !== 'W') {
        const k = a.op === 'F' ? base : keys + base;
        finish[k] = e;
        let w = waitHead[k];
        waitHead[k] = -1;
        while (w >= 0) {
          const next = waitNext[w];
          waitNext[w] = -1;
          if (w !== r) stack.push(w);
          w = next;
        }
      }
    }
    ptr[r] = i;
    free[r] = t;
  }

  const stuck: Wait[] = [];
  for (let r = 0; r < R; r++) {
    if (ptr[r] < s.order[r].length) {
      const k = waitKey[r];
      const slot = k >= keys ? 1 : 0;
      const rest = k - slot * keys;
      stuck.push({ rank: r, index: ptr[r], stage: Math.floor(rest / m), slot, mb: rest % m });
    }
  }
  return { start, end, stuck };
}
