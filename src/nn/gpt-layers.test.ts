/**
 * The GPT's layers (token + position embedding, pre-LN transformer block with
 * causal multi-head attention, ln_f + lm_head) against central finite
 * differences on the float64 CPU reference: dx and every parameter's gradient,
 * through the split backward (backwardInput, then backwardWeight on what it left).
 */
import { describe, expect, it } from 'vitest';
import { Rng } from '../util/rng.ts';
import { GptBlock } from './layers/gpt-block.ts';
import { GptEmbedding } from './layers/gpt-embedding.ts';
import { GptHead } from './layers/gpt-head.ts';
import { cpuData } from './testing/gradcheck.ts';
import { be, checkLayer, jitter, randomTensor } from './testing/layer-check.ts';

const init = { kind: 'normal', std: 0.5 } as const;

describe('GPT layers match finite differences', () => {
  it.each([
    // B, T, heads, head width
    [2, 5, 2, 3],
    [1, 7, 3, 1],
    [3, 3, 1, 4],
  ])('block B=%i T=%i heads=%i D=%i: dx and all 12 parameters', async (B, T, heads, D) => {
    const C = heads * D;
    const rng = new Rng(100 + T);
    const spec = { kind: 'gpt-block', name: 'block', prefix: 'transformer.h.0', dim: C, heads, blockSize: T, init, projInit: init } as const;
    const layer = new GptBlock(be, 'h0.block', spec, 11);
    jitter(layer, rng, 0.2);
    expect(layer.params.map((p) => p.name)).toEqual([
      'transformer.h.0.ln_1.weight', 'transformer.h.0.ln_1.bias',
      'transformer.h.0.attn.c_attn.weight', 'transformer.h.0.attn.c_attn.bias',
      'transformer.h.0.attn.c_proj.weight', 'transformer.h.0.attn.c_proj.bias',
      'transformer.h.0.ln_2.weight', 'transformer.h.0.ln_2.bias',
      'transformer.h.0.mlp.c_fc.weight', 'transformer.h.0.mlp.c_fc.bias',
      'transformer.h.0.mlp.c_proj.weight', 'transformer.h.0.mlp.c_proj.bias',
    ]);
    expect(layer.params[2].value.shape).toEqual([3 * C, C]);
    expect(layer.params[10].value.shape).toEqual([C, 4 * C]);
    await checkLayer(layer, randomTensor(rng, [B * T, C], 1.5), 12);
  });

  it('block is causal: changing a later token leaves earlier outputs unchanged', async () => {
    const rng = new Rng(5);
    const T = 6, C = 4;
    const layer = new GptBlock(be, 'b', { kind: 'gpt-block', name: 'block', prefix: 'p', dim: C, heads: 2, blockSize: T, init, projInit: init }, 3);
    const x = randomTensor(rng, [T, C]);
    const y0 = Array.from(cpuData((await layer.forward(x, false)).y));
    cpuData(x)[4 * C + 1] += 1; // token 4
    const y1 = Array.from(cpuData((await layer.forward(x, false)).y));
    for (let i = 0; i < 4 * C; i++) expect(y1[i]).toBe(y0[i]);
    expect(Math.abs(y1[4 * C] - y0[4 * C])).toBeGreaterThan(1e-6);
  });

  it('token + position embedding: wte and wpe gradients, repeated tokens accumulating', async () => {
    const layer = new GptEmbedding(be, 'embed.embedding', { kind: 'gpt-embedding', name: 'embedding', vocab: 6, dim: 3, blockSize: 4, init }, 7);
    expect(layer.params.map((p) => [p.name, p.value.shape])).toEqual([
      ['transformer.wte.weight', [6, 3]],
      ['transformer.wpe.weight', [4, 3]],
    ]);
    const idx = be.tensor([0, 2, 2, 5, 0, 0, 1, 3], [2, 4], 'i32');
    const { y } = await layer.forward(idx, false);
    expect(y.shape).toEqual([8, 3]);
    // Row b·T + t = wte[idx] + wpe[t], from the tables directly.
    const wte = cpuData(layer.wte.value), wpe = cpuData(layer.wpe.value), Y = cpuData(y);
    expect(Y[5 * 3 + 2]).toBe(wte[0 * 3 + 2] + wpe[1 * 3 + 2]);
    await checkLayer(layer, idx, 8);
    expect(Array.from(cpuData(layer.wte.grad).slice(12, 15))).toEqual([0, 0, 0]); // token 4 never appears
  });

  it('head: ln_f and lm_head (no bias) gradients and dx', async () => {
    const rng = new Rng(9);
    const layer = new GptHead(be, 'head.head', { kind: 'gpt-head', name: 'head', dim: 5, vocab: 7, blockSize: 3, init }, 7);
    jitter(layer, rng, 0.3);
    expect(layer.params.map((p) => [p.name, p.value.shape])).toEqual([
      ['transformer.ln_f.weight', [5]],
      ['transformer.ln_f.bias', [5]],
      ['lm_head.weight', [7, 5]],
    ]);
    await checkLayer(layer, randomTensor(rng, [6, 5], 2), 10);
  });
});
