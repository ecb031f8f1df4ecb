/**
 * The memory guard with tensor parallelism: each of a stage's tp workers holds its share of the weights the split
 * names (tp-params.ts) and of a GPT block's activations (qkv, the attention output, the MLP's hidden and GELU, the
 * attention probabilities), the rest whole; the machine holds all dp · tp · ranks workers'. So a stage too large for
 * one worker can run on two, and the refusal says which limit it passes.
 */
import { describe, expect, it } from 'vitest';
import { defaultRunConfig, validateRunConfig, withDataset, type RunConfig } from './run-config.ts';
import { namesModelSwitch } from '../nn/train-config.ts';
import { layerParamCount } from '../nn/model-spec.ts';
import { tpParams } from '../nn/tp-params.ts';
import { stageCut, stageMemory } from './run-limits.ts';

const gpt = (over: Partial<RunConfig> = {}): RunConfig => ({ ...withDataset(defaultRunConfig(), 'names'), ...namesModelSwitch('gpt', 3), blockSize: 64, heads: 32, width: 64, layers: 4, microbatches: 16, ...over });

describe('the memory guard with tensor parallelism', () => {
  it('counts one worker’s share: split weights over t, a GPT block’s qkv, attention output, MLP hidden, GELU and probabilities over t', () => {
    const cfg = { ...gpt({ batchSize: 384, ranks: 2 }), virtual: 1 };
    const rows = cfg.batchSize / cfg.microbatches;
    const one = stageMemory({ ...cfg, tp: 1 });
    const { spec, stageBlocks } = stageCut(cfg);
    for (const t of [2, 4]) {
      const mine = stageMemory({ ...cfg, tp: t });
      stageBlocks.forEach(([a, b], s) => {
        const blocks = spec.blocks.slice(a, b);
        const whole = blocks.flatMap((x) => x.layers).reduce((n, l) => n + layerParamCount(l), 0);
        const split = [...tpParams(spec).values()].filter((p) => p.block! >= a && p.block! < b).reduce((n, p) => n + p.shape.reduce((x, y) => x * y, 1), 0);
        expect(split).toBeGreaterThan(0);
        // Per parameter: the weight, its gradient and AdamW's two moments.
        expect(mine[s].weights).toBeCloseTo(4 * 4 * (whole - split + split / t), 6);
        const gptBlocks = blocks.flatMap((x) => x.layers).filter((l) => l.kind === 'gpt-block').length;
        // Each GPT block: T·(12C + H·T) of the T·(16C + 4) + H·T² a row keeps are split t ways.
        const saved = gptBlocks * (64 * 12 * 64 + 32 * 64 * 64) * (1 - 1 / t);
        expect(mine[s].activations).toBeCloseTo(one[s].activations - 4 * cfg.microbatches * rows * saved, 6);
      });
    }
  });

  it('lets a stage too large for one worker run on two, and names the limit each run passes', () => {
    // GPipe on one rank: all 16 micro-batches in flight at once.
    const single = gpt({ batchSize: 384, ranks: 1, schedule: 'gpipe' });
    expect(() => validateRunConfig(single)).toThrow(/^batchSize = 384: a rank would hold about 1\.\d+ GiB .*a rank may hold at most 1\.00 GiB$/);
    expect(() => validateRunConfig({ ...single, tp: 2 })).not.toThrow();
    expect(() => validateRunConfig({ ...single, batchSize: 640, tp: 2 })).toThrow(
      /^batchSize = 640: each of a rank's 2 tensor-parallel workers would hold about 1\.\d+ GiB .*a worker may hold at most 1\.00 GiB$/,
    );
    // Four workers each fit, but the replicated activations of all of them together do not fit this machine.
    expect(() => validateRunConfig({ ...single, batchSize: 640, tp: 4 })).toThrow(/^batchSize = 640: all workers together would hold about 2\.\d+ GiB/);
  });
});
