/** Model configs → block specs: structure, shapes, parameter names and counts, init determinism, validation. */
import { describe, expect, it } from 'vitest';
import { initValues } from './param.ts';
import { buildModelSpec, defaultModelConfig, validateModelConfig } from './model-config.ts';
import type { ModelConfig } from './model-config.ts';
import { paramCount, validateModelSpec } from './model-spec.ts';
import type { ModelSpec } from './model-spec.ts';

describe('model specs', () => {
  it('mlp: L blocks of (Linear → activation), then the head (Linear → loss)', () => {
    const spec = buildModelSpec({ ...defaultModelConfig('spiral'), hidden: 8, layers: 3, activation: 'tanh' });
    expect(spec.blocks.map((b) => b.name)).toEqual(['block0', 'block1', 'block2', 'head']);
    expect(spec.blocks.map((b) => b.layers.map((l) => l.kind))).toEqual([
      ['linear', 'activation'],
      ['linear', 'activation'],
      ['linear', 'activation'],
      ['linear', 'softmax-cross-entropy'],
    ]);
    expect(spec.input).toEqual({ dtype: 'f32', cols: 2 });
    expect(spec.classes).toBe(3);
    expect(paramCount(spec)).toBe(2 * 8 + 8 + 2 * (8 * 8 + 8) + 8 * 3 + 3);
  });

  it('char-mlp: Embedding + Linear + LayerNorm + act, then Linear + LayerNorm + act blocks, then the 28-way head', () => {
    const spec = buildModelSpec({ ...defaultModelConfig('names'), hidden: 10, layers: 2, context: 3, embedDim: 4 });
    expect(spec.blocks.map((b) => b.layers.map((l) => l.kind))).toEqual([
      ['embedding', 'linear', 'layernorm', 'activation'],
      ['linear', 'layernorm', 'activation'],
      ['linear', 'softmax-cross-entropy'],
    ]);
    expect(spec.input).toEqual({ dtype: 'i32', cols: 3 });
    expect(spec.classes).toBe(28);
    expect(paramCount(spec)).toBe(28 * 4 + (12 * 10 + 10) + 20 + (10 * 10 + 10) + 20 + (10 * 28 + 28));
  });

  it('moons, circles and xor have two classes', () => {
    for (const ds of ['moons', 'circles', 'xor'] as const) expect(buildModelSpec(defaultModelConfig(ds)).classes).toBe(2);
  });

  it('initial values depend only on (seed, parameter name)', () => {
    const a = initValues('block1.linear.W', 50, { kind: 'normal', std: 0.5 }, 7);
    expect(initValues('block1.linear.W', 50, { kind: 'normal', std: 0.5 }, 7)).toEqual(a);
    expect(initValues('block2.linear.W', 50, { kind: 'normal', std: 0.5 }, 7)).not.toEqual(a);
    expect(initValues('block1.linear.W', 50, { kind: 'normal', std: 0.5 }, 8)).not.toEqual(a);
    // float32-exact, so CPU and GPU start equal
    for (const v of a) expect(Math.fround(v)).toBe(v);
    const mean = a.reduce((s, v) => s + v, 0) / a.length;
    const sd = Math.sqrt(a.reduce((s, v) => s + (v - mean) ** 2, 0) / a.length);
    expect(sd).toBeGreaterThan(0.35);
    expect(sd).toBeLessThan(0.65);
  });
});

describe('validateModelConfig names the field, the value and the rule', () => {
  const base = defaultModelConfig('spiral');
  const cases: [Partial<ModelConfig>, string][] = [
    [{ hidden: 0 }, 'hidden = 0: must be an integer between 1 and 4096'],
    [{ hidden: -8 }, 'hidden = -8: must be an integer between 1 and 4096'],
    [{ layers: 0 }, 'layers = 0: must be an integer between 1 and 64'],
    [{ context: -1 }, 'context = -1: must be an integer between 1 and 16'],
    [{ embedDim: 0 }, 'embedDim = 0: must be an integer between 1 and 512'],
    [{ activation: 'swish' as never }, 'activation = "swish": must be one of relu, gelu, tanh'],
    [{ activation: 'identity' as never }, 'activation = "identity": must be one of relu, gelu, tanh'],
    [{ model: 'cnn' as never }, 'model = "cnn": must be one of mlp, char-mlp'],
    [{ dataset: 'cifar' as never }, 'dataset = "cifar": must be one of spiral, moons, circles, xor, names'],
    [{ model: 'char-mlp' }, 'dataset = "spiral": must be "names" or "text" for model "char-mlp"'],
  ];
  for (const [patch, msg] of cases) it(msg, () => expect(() => validateModelConfig({ ...base, ...patch })).toThrow(msg));
});

describe('validateModelSpec catches inconsistent hand-written specs', () => {
  const good = (): ModelSpec => buildModelSpec({ ...defaultModelConfig('spiral'), hidden: 4, layers: 1 });
  it('a width mismatch between layers', () => {
    const s = good();
    const bad: ModelSpec = { ...s, blocks: [s.blocks[0], { ...s.blocks[1], layers: [{ kind: 'linear', name: 'linear', in: 5, out: 3, init: { kind: 'const', value: 0 } }, s.blocks[1].layers[1]] }] };
    expect(() => validateModelSpec(bad)).toThrow('model.blocks[1].layers[0].in = 5: must equal the width of what comes before it, 4');
  });
  it('a zero size', () => {
    const s = good();
    const bad: ModelSpec = { ...s, blocks: [{ ...s.blocks[0], layers: [{ kind: 'linear', name: 'linear', in: 2, out: 0, init: { kind: 'const', value: 0 } }] }, s.blocks[1]] };
    expect(() => validateModelSpec(bad)).toThrow('model.blocks[0].layers[0].out = 0: must be a positive integer');
  });
  it('a missing loss', () => {
    const s = good();
    expect(() => validateModelSpec({ ...s, blocks: [s.blocks[0]] })).toThrow('model.blocks[0].layers[1].kind = "activation": the loss must be the last layer of the last block, and only there');
  });
});
