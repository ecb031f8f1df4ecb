/**
 * Selective recomputation in the run configuration: GPT only, refused by
 * field, value and rule for a model without attention, the same from a URL,
 * written into links only when on, and left off by a switch to such a model.
 */
import { describe, expect, it } from 'vitest';
import { configFromQuery, configToQuery, defaultRunConfig, validateRunConfig, withDataset, type RunConfig } from './run-config.ts';
import { namesModelSwitch } from '../nn/train-config.ts';

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
});
