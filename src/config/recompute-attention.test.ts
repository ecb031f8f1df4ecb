/**
 * Selective recomputation in the run configuration: GPT only, refused by
 * field, value and rule for a model without attention, the same from a URL,
 * written into links only when on, left off by a switch to such a model, and
 * counted by the memory guard (as full recomputation is).
 */
import { describe, expect, it } from 'vitest';
import { configFromQuery, configToQuery, defaultRunConfig, validateRunConfig, withDataset, type RunConfig } from './run-config.ts';
import { namesModelSwitch } from '../nn/train-config.ts';
import { layerActivationsPerRow, layerInCols } from '../nn/model-spec.ts';
import { stageCut, stageMemory } from './run-limits.ts';

const gpt = (): RunConfig => ({ ...withDataset(defaultRunConfig(), 'names'), ...namesModelSwitch('gpt', 3) });

describe('recomputeAttention (selective recomputation)', () => {
  it('is the GPT’s: accepted there, refused for a model without attention, naming the field, the value and the rule', () => {
    expect(() => validateRunConfig({ ...gpt(), recomputeAttention: true })).not.toThrow();
    expect(() => validateRunConfig({ ...defaultRunConfig(), recomputeAttention: true })).toThrow(
      "recomputeAttention = true: recomputes a GPT block's attention probabilities; the mlp model has no attention (choose the GPT, or leave it off)",
    );
    expect(() => validateRunConfig({ ...gpt(), recomputeAttention: 'yes' as never })).toThrow('recomputeAttention = "yes": must be true or false');
    // A configuration from before the field (a saved run, an old checkpoint) reads as off.
    const { recomputeAttention: _r, ...old } = gpt();
    expect(() => validateRunConfig(old as RunConfig)).not.toThrow();
  });

  it('travels in a link only when on, and reads back', () => {
    const on = { ...gpt(), recomputeAttention: true };
    const q = configToQuery(on);
    expect(q).toContain('recomputeAttention=true');
    const back = configFromQuery(`?${q}`);
    expect(back.errors).toEqual([]);
    expect(back.config.recomputeAttention).toBe(true);
    expect(configToQuery(gpt())).not.toContain('recomputeAttention');
    const bad = configFromQuery('?recomputeAttention=true');
    expect(bad.errors.map((e) => e.message).join('\n')).toContain('recomputeAttention = true: recomputes a GPT block');
  });

  it('goes off with a switch to a model without attention', () => {
    const on = { ...gpt(), recomputeAttention: true };
    expect(withDataset(on, 'spiral').recomputeAttention).toBe(false);
    expect({ ...on, ...namesModelSwitch('char-mlp', 3) }.recomputeAttention).toBe(false);
    expect(withDataset(on, 'text').recomputeAttention).toBe(true);
  });

  it('is counted by the memory guard: each micro-batch in flight keeps all but its blocks’ probabilities, one micro-batch’s live again in its backward; full recomputation keeps the stage input', () => {
    // Sixty-four heads on 64 positions: the probabilities (H·T² a row and block) are most of a block's activations.
    // GPipe: every micro-batch in flight at once, the rank bound the stage estimate gives.
    const big: RunConfig = { ...gpt(), schedule: 'gpipe', blockSize: 64, heads: 64, width: 64, layers: 4, batchSize: 512, microbatches: 16 };
    const rows = big.batchSize / big.microbatches;
    const { spec, stageBlocks } = stageCut({ ...big, virtual: 1 });
    const plain = stageMemory({ ...big, virtual: 1 });
    const selective = stageMemory({ ...big, virtual: 1, recomputeAttention: true });
    const full = stageMemory({ ...big, virtual: 1, recompute: true });
    stageBlocks.forEach(([a, b], s) => {
      const layers = spec.blocks.slice(a, b).flatMap((x) => x.layers);
      const widths = layers.reduce((t, l) => t + layerActivationsPerRow(l, 1, 64), 0);
      const probs = layers.filter((l) => l.kind === 'gpt-block').length * 64 * 64 * 64;
      expect(plain[s].activations).toBe(4 * rows * big.microbatches * widths);
      expect(selective[s].activations).toBe(plain[s].activations - 4 * rows * (big.microbatches - 1) * probs);
      // The stage's input (after the embedding, its 64 tokens' rows), and on the last stage the targets, one a token.
      const input = layerInCols(layers[0]) * (a === 0 ? 1 : 64) + (b === spec.blocks.length ? 64 : 0);
      expect(full[s].activations).toBe(4 * rows * (big.microbatches * input + widths - input));
      expect(selective[s].weights).toBe(plain[s].weights);
    });
    // One micro-batch: nothing to save.
    const one = { ...big, virtual: 1, microbatches: 1 };
    expect(stageMemory({ ...one, recomputeAttention: true }).map((x) => x.total)).toEqual(stageMemory(one).map((x) => x.total));
    // A run refused for its activations fits with either recomputation.
    expect(() => validateRunConfig(big)).toThrow(/^batchSize = 512: all ranks together would hold about 2\.\d+ GiB/);
    expect(() => validateRunConfig({ ...big, recomputeAttention: true })).not.toThrow();
    expect(() => validateRunConfig({ ...big, recompute: true })).not.toThrow();
  });
});
