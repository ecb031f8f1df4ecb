/**
 * StreamCheckpoints: a step's states are handed on once every worker's is in and the losses of its steps are known,
 * oldest step first, each once; a step some worker never reached is never handed on; a failing join is kept for the
 * run to end with.
 */
import { describe, expect, it } from 'vitest';
import type { TrainProgress } from '../nn/train.ts';
import type { RankState } from './executor/rank-host.ts';
import { StreamCheckpoints } from './stream-checkpoint.ts';

const state = (tag: number): RankState & { readMs: number } => ({ params: { [`w${tag}`]: new Float64Array([tag]) }, optimizer: { name: 'sgd', steps: tag, pieces: [] }, readMs: tag + 1 });

function collector(readers: number, prior: number[] = [], fail = false) {
  const out: { stepsDone: number; losses: number[]; workers: string[] }[] = [];
  const c = new StreamCheckpoints({
    readers,
    prior,
    join: (states, stepsDone, losses) => {
      if (fail) throw new Error('the pieces do not fit');
      return { stepsDone, losses: losses.slice(0, stepsDone), params: Object.assign({}, ...states.map((s) => s.params)), optimizer: { name: 'sgd', steps: stepsDone, slots: {} }, evals: [] } as TrainProgress;
    },
    onProgress: (p) => out.push({ stepsDone: p.stepsDone, losses: p.losses, workers: Object.keys(p.params) }),
  });
  return { c, out };
}

describe('StreamCheckpoints', () => {
  it('hands a step on when every worker told its state and the losses of its steps are in, oldest first, once', () => {
    const { c, out } = collector(2);
    // The last stage (worker 1) ends the block first; stage 0 (worker 0) after it.
    c.state(1, { ...state(1), stepsDone: 2 });
    c.loss(0, 3.0);
    c.state(0, { ...state(0), stepsDone: 2 });
    expect(out).toEqual([]); // step 1's loss is not in yet
    c.state(1, { ...state(1), stepsDone: 4 });
    c.loss(1, 2.5);
    expect(out).toEqual([{ stepsDone: 2, losses: [3.0, 2.5], workers: ['w0', 'w1'] }]);
    c.loss(2, 2.0);
    c.loss(3, 1.5);
    // Step 4: worker 0 never told it (the stream ended first): never handed on.
    expect(out).toHaveLength(1);
    c.loss(5, 9); // out of order: ignored
    c.state(0, { ...state(0), stepsDone: 4 });
    expect(out.map((p) => p.stepsDone)).toEqual([2, 4]);
    // Each step's read: the longest of its workers'.
    expect(c.readMs).toEqual([2, 2]);
    expect(out[1].losses).toEqual([3.0, 2.5, 2.0, 1.5]);
    // A worker outside the readers is not one of them.
    c.state(2, { ...state(2), stepsDone: 6 });
    expect(out).toHaveLength(2);
    // After the window's end, a state still on its way is dropped.
    c.loss(4, 1.2);
    c.loss(5, 1.1);
    c.state(1, { ...state(1), stepsDone: 6 });
    c.close();
    c.state(0, { ...state(0), stepsDone: 6 });
    expect(out).toHaveLength(2);
  });

  it("a resumed stream's steps follow its checkpoint's losses; a failing join is kept, and nothing else is handed on", () => {
    const { c, out } = collector(1, [4, 3]);
    c.loss(2, 2);
    c.state(0, { ...state(0), stepsDone: 3 });
    expect(out).toEqual([{ stepsDone: 3, losses: [4, 3, 2], workers: ['w0'] }]);

    const bad = collector(1, [], true);
    bad.c.loss(0, 1);
    bad.c.state(0, { ...state(0), stepsDone: 1 });
    expect(bad.c.error?.message).toBe('the pieces do not fit');
    expect(bad.out).toEqual([]);
  });
});
