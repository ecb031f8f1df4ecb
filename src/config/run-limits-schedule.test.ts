/**
 * The memory guard reads the run's own order: a rank's activations are the peak of what its micro-batches in
 * flight keep (peakMemory), so 1F1B's rank r holds p − r of them where GPipe's holds all m, and a run GPipe
 * cannot fit passes as 1F1B; DualPipe's ranks hold both copies' weights.
 */
import { describe, expect, it } from 'vitest';
import { defaultRunConfig, validateRunConfig, withDataset, type RunConfig } from './run-config.ts';
import { namesModelSwitch } from '../nn/train-config.ts';
import { rankMemory, stageMemory } from './run-limits.ts';

const gpt = (over: Partial<RunConfig> = {}): RunConfig => ({ ...withDataset(defaultRunConfig(), 'names'), ...namesModelSwitch('gpt', 3), blockSize: 64, heads: 32, width: 64, layers: 6, ranks: 4, microbatches: 16, batchSize: 512, ...over });

describe('the memory guard reads the schedule', () => {
  it('1F1B’s rank r holds p − r micro-batches, GPipe’s all m, each keeping what its stage keeps, plus one backward’s recomputation and working set', () => {
    for (const extra of [{}, { recomputeAttention: true }, { recompute: true }]) {
      const c = gpt(extra);
      const per = stageMemory(c);
      const gpipe = rankMemory({ ...c, schedule: 'gpipe' });
      const ofob = rankMemory({ ...c, schedule: '1f1b' });
      per.forEach((s, r) => {
        expect(gpipe[r].activations).toBeCloseTo(c.microbatches * s.kept + s.transient + s.working, 6);
        expect(gpipe[r].activations).toBeCloseTo(s.activations + s.working, 6);
        expect(ofob[r].activations).toBeCloseTo((c.ranks - r) * s.kept + s.transient + s.working, 6);
        expect(ofob[r].weights).toBe(s.weights);
      });
    }
  });

  it('a backward’s working set is the gradients its weight layers keep for W and one layer’s scratch, not their saved inputs again', () => {
    // Independently, per token of a micro-batch (C the width, V the vocabulary, H heads, T tokens, t = tp): a GPT block
    // keeps the gradients at ln_1's and ln_2's outputs, at x1 and at its output (4C) and its share of the MLP's
    // hidden gradient and dqkv (7C/t), and holds its attention probabilities' gradient (H·T/t) while it runs; the
    // embedding its output gradient (C); the head the gradient at its normalised input (C).
    for (const tp of [1, 2]) {
      const c = gpt({ ranks: 2, layers: 2, tp });
      const C = 64, T = 64, H = 32;
      const tokens = (c.batchSize / c.microbatches) * T;
      const block = 4 * C + (7 * C) / tp;
      // Stage 0: the embedding and block 0; stage 1: block 1 and the head (the cut by FLOPs).
      const expected = [tokens * (C + block + (H * T) / tp), tokens * (block + C + (H * T) / tp)].map((v) => 4 * v);
      const per = stageMemory(c);
      expect(per.map((s) => s.working)).toEqual(expected);
      // Less than what W reads (their saved inputs are the stash's).
      per.forEach((s) => expect(s.working).toBeLessThan(s.afterInput + 4 * tokens * H * T));
    }
  });

  it('lets 1F1B through where GPipe’s every micro-batch in flight does not fit', () => {
    const big = gpt({ layers: 4, heads: 64 });
    expect(() => validateRunConfig({ ...big, schedule: 'gpipe' })).toThrow(/^batchSize = 512: all ranks together would hold about \d+\.\d+ GiB/);
    expect(() => validateRunConfig({ ...big, schedule: '1f1b' })).not.toThrow();
  });

  it('counts both model copies’ weights on a DualPipe rank, and the interleaved order’s own peak', () => {
    const c = gpt({ batchSize: 64 });
    const per = stageMemory({ ...c, virtual: 1 });
    const dual = rankMemory({ ...c, schedule: 'dualpipe', virtual: 1 });
    // Rank r holds stage r of copy 0 and stage p − 1 − r of copy 1.
    dual.forEach((x, r) => expect(x.weights).toBe(per[r].weights + per[c.ranks - 1 - r].weights));
    const il = rankMemory({ ...c, layers: 14, schedule: 'interleaved-1f1b', virtual: 2 });
    const ilStages = stageMemory({ ...c, layers: 14, virtual: 2 });
    // Each rank's peak holds more than one micro-batch of its chunks and no more than all of them.
    il.forEach((x, r) => {
      const mine = [ilStages[r], ilStages[r + c.ranks]];
      expect(x.weights).toBe(mine[0].weights + mine[1].weights);
      expect(x.activations).toBeGreaterThan(mine[0].kept + mine[1].kept);
      expect(x.activations).toBeLessThanOrEqual(c.microbatches * (mine[0].kept + mine[1].kept) + Math.max(mine[0].transient, mine[1].transient) + 1e-6);
    });
  });
});
