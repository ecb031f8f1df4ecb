/**
 * The MoE fields refused before any worker starts, each by field, value and rule: through the automation entry's
 * snapshot and validation, the URL (the bad value reported and reverted, the rest kept) and the CLI's flags; a
 * good MoE configuration read back from its link unchanged.
 */
import { describe, expect, it } from 'vitest';
import { run } from '../cli/cli-test-support.ts';
import { snapshotRunConfig } from './config-snapshot.ts';
import { namesModelSwitch } from '../nn/train-config.ts';
import { configFromQuery, configToQuery, defaultRunConfig, validateRunConfig, withDataset, type RunConfig } from './run-config.ts';

const gpt: RunConfig = { ...withDataset(defaultRunConfig(), 'names'), model: 'gpt', layers: 3, heads: 2, width: 8, ranks: 2, batchSize: 8, microbatches: 4 };

function refusal(over: Record<string, unknown>): string {
  try {
    validateRunConfig(snapshotRunConfig({ ...gpt, ...over }));
  } catch (e) {
    return (e as Error).message;
  }
  return 'accepted';
}

describe('MoE fields: bad input named by field, value and rule', () => {
  it.each([
    [{ experts: -1 }, 'experts = -1: must be an integer'],
    [{ experts: 2.5 }, 'experts = 2.5: must be an integer'],
    [{ experts: 65 }, 'experts = 65: must be an integer'],
    [{ experts: 4, topK: 0 }, 'topK = 0: must be an integer'],
    [{ experts: 4, topK: 3 }, 'topK = 3: must be an integer'],
    [{ experts: 1, topK: 2 }, 'topK = 2: must be at most experts = 1 (each token picks topK different experts)'],
    [{ experts: 4, capacityFactor: -0.5 }, 'capacityFactor = -0.5: must be a number ≥ 0 (0: dropless, every token kept)'],
    [{ experts: 4, capacityFactor: 'x' }, 'capacityFactor = "x": must be a number ≥ 0 (0: dropless, every token kept)'],
    [{ experts: 4, moeEvery: 3 }, 'moeEvery = 3: must be 1 (every block’s MLP is a mixture of experts) or 2 (every other block’s)'],
    [{ experts: 4, moeEvery: 2, layers: 1, ranks: 1 }, 'moeEvery = 2: puts experts in every other block (blocks 1, 3, …); with layers = 1 no block would have them'],
    [{ experts: 4, auxLossWeight: -1 }, 'auxLossWeight = -1: must be at least 0'],
    [{ experts: 4, tp: 2 }, 'tp = 2: must be 1 with experts = 4: an MoE block is not split over tp workers here'],
    [{ experts: 4, recomputeAttention: true }, 'recomputeAttention = true: is not implemented for an MoE block (experts = 4); leave it off, or recompute the whole forward'],
    [{ experts: 4, ep: 0 }, 'ep = 0: must be an integer between 1 and 16'],
    [{ experts: 4, ep: 1.5 }, 'ep = 1.5: must be an integer'],
    [{ experts: 3, ep: 2 }, 'ep = 2: must divide experts = 3: each of a stage’s ep workers holds experts / ep whole experts'],
    [{ ep: 2 }, 'ep = 2: shards a model’s experts over ep workers; this model has none (set experts ≥ 2, or ep = 1)'],
    [{ experts: 4, ep: 2, tp: 2 }, 'tp = 2: must be 1 with experts = 4'],
    [{ experts: 4, ep: 4, dp: 2, ranks: 4, batchSize: 32, microbatches: 2 }, 'ep = 4: dp × ep × tp × ranks = 2 × 4 × 1 × 4 = 32 workers; at most 16 workers run in one tab'],
    [{ experts: 4, ep: 4 }, "ep = 4: must divide each micro-batch's 2 sequences (batchSize / (dp × microbatches)): each ep worker takes its slice of them"],
    [{ experts: 4, ep: 2, schedule: 'pipedream' }, 'ep = 2: needs a synchronous schedule (one update per step); pipedream updates otherwise, which ep does not support yet'],
    [{ experts: 4, ep: 2, dp: 2, zero: 1, batchSize: 16 }, 'ep = 2: needs zero = 0 (zero = 1): ZeRO beside ep is not built yet'],
    [{ model: 'char-mlp', experts: 4 }, 'experts = 4: mixture-of-experts MLPs are the GPT’s; the char-mlp model has none (choose the GPT, or experts = 0)'],
  ])('automation refuses %j', (over, message) => {
    expect(refusal(over)).toContain(message);
  });

  it('accepts top-1, top-2, dropless and every other block', () => {
    for (const over of [{ experts: 4, ep: 2 }, { experts: 4, ep: 2, dp: 2, batchSize: 16, topK: 2 }, { experts: 4 }, { experts: 4, topK: 2, capacityFactor: 0 }, { experts: 2, topK: 2, moeEvery: 2, auxLossWeight: 0 }, { experts: 0 }]) expect(refusal(over)).toBe('accepted');
  });

  it('the URL: a good MoE link reads back unchanged; a bad value is reported by field and reverted', () => {
    const cfg = { ...gpt, experts: 4, topK: 2, capacityFactor: 1.5, moeEvery: 2, auxLossWeight: 0.02 };
    const q = configToQuery(cfg);
    expect(q).toContain('experts=4&topK=2&capacityFactor=1.5&moeEvery=2&auxLossWeight=0.02');
    const back = configFromQuery(q);
    expect(back.errors).toEqual([]);
    expect(back.config).toEqual(cfg);
    const bad = configFromQuery(`${q.replace('topK=2', 'topK=5')}`);
    expect(bad.errors.map((e) => e.message)).toEqual(['topK = 5: must be an integer between 1 and 2']);
    expect(bad.config.topK).toBeUndefined();
    expect(bad.config.experts).toBe(4);
    expect(configFromQuery(q.replace('capacityFactor=1.5', 'capacityFactor=-1')).errors[0]?.message).toBe('capacityFactor = -1: must be a number ≥ 0 (0: dropless, every token kept)');
  });

  it('the machine’s memory counts every ep worker (each as if it held its whole stage and micro-batch: an upper bound)', () => {
    const big: RunConfig = { ...withDataset(defaultRunConfig(), 'names'), ...namesModelSwitch('gpt', 3), blockSize: 64, heads: 32, width: 64, layers: 4, microbatches: 16, ranks: 2, batchSize: 384, experts: 8, schedule: 'gpipe' };
    expect(() => validateRunConfig(big)).not.toThrow();
    expect(() => validateRunConfig({ ...big, ep: 2 })).toThrow(/^batchSize = 384: all workers together would hold about 2\.\d+ GiB/);
  });

  it('the URL: ep travels and reads back; a bad ep is reported by field and rule and reverted to 1', () => {
    const cfg = { ...gpt, experts: 4, ep: 2 };
    const q = configToQuery(cfg);
    expect(q).toContain('ep=2');
    expect(configFromQuery(q).config).toEqual(cfg);
    expect(configToQuery({ ...cfg, ep: 1 })).not.toMatch(/(^|&)ep=/);
    const bad = configFromQuery(q.replace('ep=2', 'ep=3'));
    expect(bad.errors.map((e) => e.message)).toEqual(['ep = 3: must divide experts = 4: each of a stage’s ep workers holds experts / ep whole experts']);
    expect(bad.config.ep).toBeUndefined();
  });

  it('a dense link carries no MoE key; choosing a 2-D set drops the experts', () => {
    expect(configToQuery(gpt)).not.toMatch(/experts|topK|capacityFactor|moeEvery|auxLossWeight/);
    expect(withDataset({ ...gpt, experts: 4, topK: 2 }, 'spiral').experts).toBeUndefined();
  });

  it('the CLI names the flag, its value and the rule, and the PyTorch export carries the experts', () => {
    expect(run('export-torch', '--dataset', 'names', '--model', 'gpt', '--experts', '4', '--topK', '9', '--out', '/nonexistent-never-written').err).toContain('--topK = 9: must be an integer between 1 and 2');
    expect(run('export-torch', '--dataset', 'names', '--model', 'gpt', '--experts', '4', '--ep', '3', '--out', '/nonexistent-never-written').err).toContain('--ep = 3: must divide experts = 4');
    expect(run('export-torch', '--dataset', 'names', '--model', 'gpt', '--ep', '2', '--out', '/nonexistent-never-written').err).toContain('--ep = 2: shards a model’s experts over ep workers; this model has none');
    const moe = run('export-torch', '--dataset', 'names', '--model', 'gpt', '--ranks', '1', '--layers', '2', '--experts', '4', '--topK', '2', '--moeEvery', '2', '--steps', '1', '--out', '/tmp/never-written');
    expect(moe.code, moe.err).toBe(0);
    const file = (name: string) => moe.files.get(`/tmp/never-written/${name}`) as string;
    const bundle = JSON.parse(file('config.json')) as { run: RunConfig; model: { blocks: { layers: { kind: string; experts?: number; topK?: number }[] }[] } };
    expect(bundle.run).toMatchObject({ experts: 4, topK: 2, moeEvery: 2 });
    // Blocks 0 and 1 after the embedding: every other block's MLP is a mixture (block 1).
    expect(bundle.model.blocks.flatMap((b) => b.layers).filter((l) => l.kind.startsWith('gpt-') && l.kind.endsWith('block')).map((l) => [l.kind, l.experts, l.topK])).toEqual([
      ['gpt-block', undefined, undefined], ['gpt-moe-block', 4, 2],
    ]);
    expect(file('moe.py')).toContain('class MoeMlp');
    expect(file('README.md')).toContain('## Mixture of experts');
  });
});
