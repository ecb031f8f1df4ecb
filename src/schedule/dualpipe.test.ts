/**
 * DualPipe (generators/dualpipe.ts) against DeepSeek's own code. `DualPipeStep`
 * below is a transcription of dualpipe.py's DualPipe.step() (github.com/
 * deepseek-ai/DualPipe, dualpipe/dualpipe.py) that keeps its structure — the
 * eight phases with their loop counts, `phase ^= is_in_second_half`, the
 * per-phase chunk counters, WeightGradStore's FIFO of deferred weight
 * gradients and the middle ranks' un-overlapped first pair — and records the
 * compute calls only (communication does not change the order). An overlapped
 * F&B pair is written F then B, as dualpipe.py's own fallback without
 * `overlapped_forward_backward` runs it and dualpipe-v.ts writes its pairs.
 *
 * The mapping to our schedule (the representation of generators/dualpipe.ts):
 * rank r's module[0] is copy 0's stage r = our stage r, its module[1] is copy
 * 1's stage p − 1 − r = our stage 2p − 1 − r; dualpipe.py's chunk i of phase 0
 * (entering rank 0) is our micro-batch i, its chunk i of phase 1 (entering rank
 * p − 1) our micro-batch m/2 + i.
 */
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../util/errors.ts';
import { formatAction } from './action-text.ts';
import { generateSchedule, SCHEDULES } from './registry.ts';
import { peakMemory, simulate } from './simulate.ts';
import { closedForm, closedFormPeakActivations } from './theory.ts';
import type { Action, Schedule } from './types.ts';
import { validateSchedule } from './validate.ts';

/** One compute call of dualpipe.py: an action, or an overlapped F&B pair (`_forward_backward_compute_chunk`). */
type Call = { acts: Action[]; pair: boolean };

/** dualpipe.py's DualPipe.step() on one rank, compute calls only. */
class DualPipeStep {
  readonly calls: Call[] = [];
  private readonly isInSecondHalf: number;
  private readonly isMiddleRank: boolean;
  private readonly currentFChunkId = [0, 0];
  private readonly currentBChunkId = [0, 0];
  /** WeightGradStore.funcs_queue: one entry per backward run with enable_zb. */
  private readonly funcsQueue: Action[] = [];

  constructor(
    private readonly rank: number,
    private readonly numRanks: number,
    private readonly numChunks: number,
  ) {
    this.isInSecondHalf = rank >= numRanks / 2 ? 1 : 0;
    this.isMiddleRank = rank === numRanks / 2 - 1 || rank === numRanks / 2;
  }

  /** module[phase] on this rank as our stage, chunk `chunk` of that phase as our micro-batch. */
  private action(phase: number, op: Action['op'], chunk: number): Action {
    const p = this.numRanks;
    return phase === 0 ? { stage: this.rank, op, mb: chunk } : { stage: 2 * p - 1 - this.rank, op, mb: this.numChunks / 2 + chunk };
  }

  private forwardComputeChunk(phase: number): Action {
    phase ^= this.isInSecondHalf;
    const chunkId = this.currentFChunkId[phase]++;
    return this.action(phase, 'F', chunkId);
  }

  private backwardComputeChunk(phase: number, enableZb = false): Action {
    phase ^= this.isInSecondHalf;
    const chunkId = this.currentBChunkId[phase]++;
    if (!enableZb) return this.action(phase, 'B', chunkId);
    // WeightGradStore.enabled: the weight gradients are put aside, then flushed as one queue entry.
    this.funcsQueue.push(this.action(phase, 'W', chunkId));
    return this.action(phase, 'I', chunkId);
  }

  private forwardChunk(phase: number): void {
    this.calls.push({ acts: [this.forwardComputeChunk(phase)], pair: false });
  }

  private backwardChunk(phase: number, enableZb = false): void {
    this.calls.push({ acts: [this.backwardComputeChunk(phase, enableZb)], pair: false });
  }

  /** _forward_backward_chunk(phase0, phase1): pre-forward, then pre-backward, one overlapped call. */
  private forwardBackwardChunk(phase0: number, phase1: number): void {
    const f = this.forwardComputeChunk(phase0);
    const b = this.backwardComputeChunk(phase1);
    this.calls.push({ acts: [f, b], pair: true });
  }

  private weightChunk(): void {
    const w = this.funcsQueue.shift();
    if (!w) throw new Error('Pop empty queue.');
    this.calls.push({ acts: [w], pair: false });
  }

  step(): Call[] {
    const rank = this.rank;
    const numRanks = this.numRanks;
    const numChunks = this.numChunks;
    if (numRanks % 2 !== 0) throw new Error('assert num_ranks % 2 == 0');
    if (!(numChunks > 0 && numChunks % 2 === 0 && numChunks >= numRanks * 2)) throw new Error(`num_chunks=${numChunks}, num_ranks=${numRanks}`);
    const numHalfRanks = numRanks / 2;
    const halfRank = Math.min(rank, numRanks - 1 - rank);
    const halfNumChunks = numChunks / 2;

    // Step 1: nF0
    const step1 = (numHalfRanks - halfRank - 1) * 2;
    for (let i = 0; i < step1; i++) this.forwardChunk(0);

    // Step 2: nF0F1
    const step2 = halfRank + 1;
    for (let i = 0; i < step2; i++) {
      this.forwardChunk(0);
      this.forwardChunk(1);
    }

    // Step 3: nB1W1F1 (Use zero bubble)
    const step3 = numHalfRanks - halfRank - 1;
    for (let i = 0; i < step3; i++) {
      this.backwardChunk(1, true);
      this.weightChunk();
      this.forwardChunk(1);
    }

    // Step 4 (Main step): nF0B1F1B0
    const step4 = halfNumChunks - numRanks + halfRank + 1;
    for (let i = 0; i < step4; i++) {
      if (i === 0) {
        if (this.isMiddleRank) {
          // "We don't overlap these two chunks to further reduce bubble size."
          this.forwardChunk(0);
          this.backwardChunk(1);
        } else {
          this.forwardBackwardChunk(0, 1);
        }
      } else {
        this.forwardBackwardChunk(0, 1);
      }
      this.forwardBackwardChunk(1, 0);
    }

    // Step 5: nB1F1B0
    const step5 = numHalfRanks - halfRank - 1;
    for (let i = 0; i < step5; i++) {
      this.backwardChunk(1);
      this.forwardBackwardChunk(1, 0);
    }

    // Step 6: nB1B0 (The second half of the chunks use zero bubble)
    const step6 = halfRank + 1;
    let enableZb = false;
    for (let i = 0; i < step6; i++) {
      if (i === Math.floor(step6 / 2) && halfRank % 2 === 1) enableZb = true;
      this.backwardChunk(1, enableZb);
      if (i === Math.floor(step6 / 2) && halfRank % 2 === 0) enableZb = true;
      this.backwardChunk(0, enableZb);
    }

    // Step 7: nWB0 (Use zero bubble)
    const step7 = numHalfRanks - halfRank - 1;
    for (let i = 0; i < step7; i++) {
      this.weightChunk();
      this.backwardChunk(0, true);
    }

    // Step 8: nW
    const step8 = halfRank + 1;
    for (let i = 0; i < step8; i++) this.weightChunk();
    if (this.funcsQueue.length > 0) throw new Error('assert WeightGradStore.funcs_queue.empty()');
    return this.calls;
  }
}

const repoCalls = (p: number, m: number): Call[][] => Array.from({ length: p }, (_, r) => new DualPipeStep(r, p, m).step());
const repoOrder = (p: number, m: number): Action[][] => repoCalls(p, m).map((calls) => calls.flatMap((c) => c.acts));
const text = (s: Schedule, r: number) => s.order[r].map(formatAction).join(' ');

/**
 * Plays dualpipe.py's calls with every overlapped F&B pair as one block of time `FB` that starts when both
 * of its inputs are there (free links); returns each rank's idle time (makespan − its own compute).
 */
function playPairs(p: number, m: number, c: { F: number; B: number; I: number; W: number; FB: number }): number[] {
  const calls = repoCalls(p, m);
  const done = new Map<string, number>();
  const key = (stage: number, slot: 'F' | 'B', mb: number) => `${stage}:${slot}:${mb}`;
  const needs = (a: Action): string[] => {
    if (a.op === 'F') return a.stage % p !== 0 ? [key(a.stage - 1, 'F', a.mb)] : [];
    if (a.op === 'W') return [key(a.stage, 'B', a.mb)];
    return (a.stage + 1) % p !== 0 ? [key(a.stage, 'F', a.mb), key(a.stage + 1, 'B', a.mb)] : [key(a.stage, 'F', a.mb)];
  };
  const next = new Array<number>(p).fill(0);
  const free = new Array<number>(p).fill(0);
  const busy = new Array<number>(p).fill(0);
  for (let moved = true; moved; ) {
    moved = false;
    for (let r = 0; r < p; r++) {
      for (; next[r] < calls[r].length; next[r]++) {
        const call = calls[r][next[r]];
        let start = free[r];
        const inputs = call.acts.flatMap(needs).filter((k) => !call.acts.some((a) => key(a.stage, 'F', a.mb) === k && a.op === 'F'));
        if (inputs.some((k) => !done.has(k))) break;
        for (const k of inputs) start = Math.max(start, done.get(k) as number);
        const time = call.pair ? c.FB : c[call.acts[0].op];
        for (const a of call.acts) if (a.op !== 'W') done.set(key(a.stage, a.op === 'F' ? 'F' : 'B', a.mb), start + time);
        free[r] = start + time;
        busy[r] += time;
        moved = true;
      }
    }
  }
  expect(next.every((n, r) => n === calls[r].length)).toBe(true);
  const makespan = Math.max(...free);
  return busy.map((b) => makespan - b);
}

describe('dualpipe: DeepSeek’s DualPipe, two model copies', () => {
  const SIZES: [number, number][] = [
    [2, 4],
    [2, 6],
    [4, 8],
    [4, 10],
    [4, 12],
    [6, 12],
    [6, 18],
    [8, 16],
    [8, 20],
    [8, 32],
    [10, 20],
    [16, 32],
  ];

  it.each(SIZES)('p=%i m=%i: every rank’s order is dualpipe.py’s, and the schedule validates', (p, m) => {
    const s = generateSchedule('dualpipe', p, m);
    expect(s.order).toEqual(repoOrder(p, m));
    expect(validateSchedule(s)).toEqual({ ok: true });
  });

  it('places copy 0 down the ranks and copy 1 up them; each copy takes half of the micro-batches', () => {
    const s = generateSchedule('dualpipe', 4, 8);
    expect(s.stages).toBe(8);
    expect(s.copies).toBe(2);
    expect(s.stageToRank).toEqual([0, 1, 2, 3, 3, 2, 1, 0]);
    for (const a of s.order.flat()) expect(a.stage < 4).toBe(a.mb < 4);
    // Rank 0 (h = 0; near copy 0, far copy 1): F(0) F(0); F(0) F(1); I(1) W F(1); F(0) B(1) F(1) B(0); B(1) F(1) B(0); B(1) I(0); W I(0); W.
    expect(text(s, 0)).toBe('0F0 0F1 0F2 7F4 7I4 7W4 7F5 0F3 7B5 7F6 0B0 7B6 7F7 0B1 7B7 0I2 0W2 0I3 0W3');
    // Rank 1 (h = 1, a middle rank): F(0) F(1) twice; the steady state; B(1) B(0) twice, the second pair split.
    expect(text(s, 1)).toBe('1F0 6F4 1F1 6F5 1F2 6B4 6F6 1B0 1F3 6B5 6F7 1B1 6B6 1B2 6I7 1I3 6W7 1W3');
    // Rank 3 mirrors rank 0 with the copies swapped: its near copy is copy 1 (stage 4, micro-batches 4…7).
    expect(text(s, 3)).toBe('4F4 4F5 4F6 3F0 3I0 3W0 3F1 4F7 3B1 3F2 4B4 3B2 3F3 4B5 3B3 4I6 4W6 4I7 4W7');
  });

  it('simulated bubble (F=1, B=2, I=W=1): idle p/2 − 1 per rank, the closed form; p + 1 activations held (README: PP + 1)', () => {
    for (let p = 2; p <= 16; p += 2) {
      for (let m = 2 * p; m <= 64; m += 2) {
        const s = generateSchedule('dualpipe', p, m);
        const r = simulate(s);
        const cf = closedForm('dualpipe', p, m);
        expect(cf).not.toBeNull();
        expect(r.makespan).toBe(cf?.makespan);
        expect(r.bubble).toBeCloseTo(cf?.bubble ?? NaN, 12);
        for (const idle of r.idle) expect(idle).toBe(p / 2 - 1);
        for (const busy of r.busy) expect(busy).toBe(3 * m);
        expect(peakMemory(s).map((x) => x.peakMicrobatches)).toEqual(closedFormPeakActivations('dualpipe', p, m));
        expect(closedFormPeakActivations('dualpipe', p, m)).toEqual(new Array(p).fill(p + 1));
      }
    }
    // p = 8, m = 16: makespan 3·16 + 3 = 51, bubble 3/51.
    expect(closedForm('dualpipe', 8, 16)?.bubble).toBe(3 / 51);
    expect(closedForm('dualpipe', 3, 16)).toBeNull();
    expect(closedForm('dualpipe', 8, 14)).toBeNull();
  });

  it('README’s bubble (PP/2 − 1)(F&B + B − 3W): the order with its F&B pairs overlapped, F = I = W = 1, B = 2', () => {
    const F = 1, I = 1, W = 1, B = I + W;
    for (const FB of [2, 2.5, 3]) {
      for (let p = 2; p <= 12; p += 2) {
        for (const m of [2 * p, 2 * p + 2, 4 * p]) {
          const idle = playPairs(p, m, { F, B, I, W, FB });
          // The busiest-idle rank's bubble is the README's; the outer ranks idle less when F&B < F + B.
          expect(Math.max(...idle)).toBeCloseTo((p / 2 - 1) * (FB + B - 3 * W), 9);
        }
      }
    }
    // Run one after the other (our simulator: a pair's F does not wait for its B's gradient) the idle time is less:
    // p/2 − 1 per rank against the README's 2(p/2 − 1) with F&B = F + B = 3.
    const r = simulate(generateSchedule('dualpipe', 8, 16), { F, B, I, W });
    expect(r.idle).toEqual(new Array(8).fill(3));
    expect(Math.max(...playPairs(8, 16, { F, B, I, W, FB: F + B }))).toBe(6);
  });

  it('refuses odd p, odd m and m < 2p, naming the field (dualpipe.py’s asserts)', () => {
    const refusal = (p: number, m: number) => {
      try {
        generateSchedule('dualpipe', p, m);
      } catch (e) {
        expect(e).toBeInstanceOf(ConfigError);
        return `${(e as ConfigError).field} = ${String((e as ConfigError).value)}`;
      }
      return null;
    };
    expect(refusal(3, 12)).toBe('ranks = 3');
    expect(refusal(4, 9)).toBe('microbatches = 9');
    expect(refusal(4, 6)).toBe('microbatches = 6');
    expect(refusal(4, 8)).toBeNull();
    expect(() => generateSchedule('dualpipe', 4, 6)).toThrow(/even m ≥ 2p = 8/);
    expect(() => generateSchedule('dualpipe', 4, 8, 2)).toThrow(/^virtual = 2: /);
    expect(SCHEDULES.dualpipe.copies).toBe(2);
    expect(SCHEDULES['dualpipe-v'].copies).toBe(1);
  });

  it('the validator keeps each micro-batch in its copy and each copy’s dependencies inside it', () => {
    const s = generateSchedule('dualpipe', 2, 4);
    // A copy-1 stage running a copy-0 micro-batch.
    const moved: Schedule = { ...s, order: s.order.map((l) => l.map((a) => (a.stage === 3 && a.mb === 2 ? { ...a, mb: 0 } : a))) };
    const v = validateSchedule(moved);
    expect(v.ok).toBe(false);
    if (!v.ok) expect(v.rule).toMatch(/runs micro-batch 0 on stage 3 of model copy 1, which takes micro-batches 2 to 3/);
    // Without `copies` the same orders are incomplete (stage 2 never runs micro-batches 0 and 1).
    const { copies: _c, ...oneCopy } = s;
    expect(validateSchedule(oneCopy).ok).toBe(false);
    expect(validateSchedule({ ...s, copies: 3 })).toMatchObject({ ok: false, field: 'copies' });
    // Stage 2 (copy 1's first) reads data: its F waits for nothing, though stage 1 sits before it.
    expect(validateSchedule(s)).toEqual({ ok: true });
  });
});
