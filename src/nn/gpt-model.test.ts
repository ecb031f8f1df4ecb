/**
 * The 'gpt' model on the names: the sequence data (makemore's x/y with padded
 * targets), the configuration rules, the spec (makemore's parameter names and
 * count), and the loss normalisation that makes micro-batch accumulation equal
 * the full-batch gradient (float64 CPU reference, 1e-12).
 */
import { describe, expect, it } from 'vitest';
import { splitMicrobatches, BatchSampler } from '../data/batches.ts';
import { createDataset } from '../data/datasets.ts';
import { IGNORE_LABEL, targetCount } from '../data/examples.ts';
import { minBlockSize, nameSequences } from '../data/name-sequences.ts';
import { encodeName } from '../data/names.ts';
import type { Backend, Tensor } from './backend.ts';
import { CpuBackend } from './cpu-backend.ts';
import { buildModelSpec, defaultGptConfig, MAKEMORE_GPT, type ModelConfig } from './model-config.ts';
import { blockCosts, paramCount } from './model-spec.ts';
import { partitionBlocks } from './partition.ts';
import { StageChain } from './stage-chain.ts';
import { compareGrads } from './testing/gradcheck.ts';
import { trackingBackend } from './testing/tracking-backend.ts';
import { trainSingleDevice } from './train.ts';
import { nextCharLogits, samplingWindow } from './sample.ts';
import { sampleNames } from '../data/sample-names.ts';
import { defaultTrainConfig, namesModelSwitch, validateTrainConfig, type TrainConfig } from './train-config.ts';

const be = new CpuBackend();
const tiny: ModelConfig = { ...defaultGptConfig(), layers: 3, heads: 2, width: 6 };

const relErr = (a: ArrayLike<number>, b: ArrayLike<number>): number => compareGrads(a, b).relErr;

async function read(be: Backend, t: Tensor): Promise<number> {
  const v = (await be.read(t))[0];
  be.dispose(t);
  return v;
}

describe('names as sequences', () => {
  it('x = [0, name] and y = [name, 0], padded to the block size with −1 targets', async () => {
    const ex = nameSequences(['emma', 'bo'], 6);
    const e = encodeName('emma'), b = encodeName('bo');
    expect(Array.from(ex.inputs)).toEqual([0, ...e, 0, 0, ...b, 0, 0, 0]);
    expect(Array.from(ex.labels)).toEqual([...e, 0, -1, ...b, 0, -1, -1, -1]);
    expect(ex.labelCols).toBe(6);
    expect(targetCount(ex)).toBe(5 + 3);
    expect(() => nameSequences(['emma'], 4)).toThrow('blockSize = 4: must be at least the longest name + 1 = 5');
  });

  it('the longest name + 1 is 16 (makemore block size), and every name fits', async () => {
    expect(minBlockSize()).toBe(16);
    const ds = createDataset({ ...defaultTrainConfig('names'), ...defaultGptConfig() });
    expect(ds.train.inputCols).toBe(16);
    expect(ds.train.labels.length).toBe(16 * ds.train.n);
    expect(ds.val.n + ds.train.n).toBeGreaterThan(8000);
  });
});

describe("the 'gpt' configuration", () => {
  const base: TrainConfig = { ...defaultTrainConfig('names'), ...tiny };
  it.each([
    [{ heads: 4 }, 'heads = 4: must divide width = 6 (each head takes width / heads columns)'],
    [{ blockSize: 12 }, 'blockSize = 12: must be at least the longest name + 1 = 16 (the start mark and every character)'],
    [{ width: 0 }, 'width = 0: must be an integer between 1 and 1024'],
    [{ stages: 5 }, 'stages = 5: must be an integer from 1 to the number of blocks, 4'],
    [{ dataset: 'spiral' }, 'dataset = "spiral": must be "names" or "text" for model "gpt"'],
  ] as [Partial<TrainConfig>, string][])('refuses %j', (patch, msg) => {
    expect(() => validateTrainConfig({ ...base, ...patch })).toThrow(msg);
  });

  it('the page\'s switch to the GPT brings a valid configuration, deep enough for the stages', () => {
    for (const minLayers of [1, 7]) {
      const cfg = { ...defaultTrainConfig('names'), ...namesModelSwitch('gpt', minLayers) };
      expect(() => validateTrainConfig(cfg)).not.toThrow();
      expect([cfg.model, cfg.layers, cfg.heads, cfg.width, cfg.blockSize]).toEqual(['gpt', Math.max(2, minLayers), 4, 32, 16]);
    }
    expect(namesModelSwitch('char-mlp', 1).model).toBe('char-mlp');
  });

  it("makemore's size: its names and PyTorch shapes, 204,672 parameters (4 layers, 4 heads, 64 wide, block 16)", async () => {
    const spec = buildModelSpec({ ...defaultGptConfig(), ...MAKEMORE_GPT });
    expect(spec.blocks.map((b) => b.name)).toEqual(['block0', 'block1', 'block2', 'block3', 'head']);
    expect(paramCount(spec)).toBe(204_672);
    const chain = new StageChain(be, spec, 1, 1);
    const shapes = Object.fromEntries(chain.params.map((p) => [p.name, p.value.shape]));
    expect(chain.params.reduce((s, p) => s + p.value.size, 0)).toBe(204_672);
    expect(shapes['transformer.wte.weight']).toEqual([28, 64]);
    expect(shapes['transformer.wpe.weight']).toEqual([16, 64]);
    expect(shapes['transformer.h.3.attn.c_attn.weight']).toEqual([192, 64]);
    expect(shapes['transformer.h.0.mlp.c_proj.weight']).toEqual([64, 256]);
    expect(shapes['lm_head.weight']).toEqual([28, 64]);
    expect(Object.keys(shapes)).not.toContain('lm_head.bias');
    expect(Object.keys(shapes)).toHaveLength(2 + 4 * 12 + 3);
  });
});

describe('GPT training step on the CPU reference', () => {
  const cfg: TrainConfig = { ...defaultTrainConfig('names'), ...tiny, batchSize: 8 };
  const ds = createDataset(cfg);
  const batch = new BatchSampler(ds.train, 8, 3).batch(0);
  const scale = 1 / targetCount(batch);

  async function grads(stages: number, microbatches: number, recompute = false): Promise<{ loss: number; g: Record<string, Float64Array | Float32Array> }> {
    const chain = new StageChain(be, buildModelSpec(cfg), stages, 5, { recompute });
    let loss = 0;
    for (const [i, mb] of splitMicrobatches(batch, microbatches).entries()) loss += await read(be, await chain.forwardBackward(i, mb, scale));
    const g = await chain.readGrads();
    chain.dispose();
    return { loss, g };
  }

  it('selective recomputation (the attention probabilities recomputed in the backward): the same bits, the stash less by B·H·T² a block, nothing left behind', async () => {
    const { be: tracked, live } = trackingBackend(new CpuBackend());
    const spec = buildModelSpec(cfg);
    const run = async (recomputeAttention: boolean) => {
      const chain = new StageChain(tracked, spec, 2, 5, { recomputeAttention });
      const baseline = live.size;
      const mbs = splitMicrobatches(batch, 2);
      // Both micro-batches forward, then both backward (1F1B's warm-up): the stash peaks with two held.
      let held = 0;
      const outs: Tensor[] = [];
      for (const [i, mb] of mbs.entries()) {
        let x = chain.inputTensor(mb);
        const labels = tracked.tensor(mb.labels, [mb.labels.length], 'i32');
        for (const st of chain.stages) x = await st.forward(i, x, st.isLast ? labels : undefined, scale);
        tracked.dispose(labels);
        outs.push(x);
      }
      for (const st of chain.stages) held += st.stashBytes();
      let loss = 0;
      for (const x of outs) loss += await read(tracked, x);
      for (const i of [1, 0]) {
        let d: Tensor | null = null;
        for (let k = chain.stages.length - 1; k >= 0; k--) d = await chain.stages[k].backward(i, d);
      }
      expect(live.size, 'every stash freed').toBe(baseline);
      const g = await chain.readGrads();
      chain.dispose();
      return { loss, held, g };
    };
    const full = await run(false);
    const selective = await run(true);
    expect(selective.loss).toBe(full.loss);
    for (const n of Object.keys(full.g)) expect(Array.from(selective.g[n]), n).toEqual(Array.from(full.g[n]));
    // Each block kept P [B·H·T, T] per micro-batch: 8 rows of T = 16 over 2 micro-batches, 2 heads, 3 blocks.
    const T = cfg.blockSize ?? 0, H = cfg.heads ?? 0;
    expect(T * H).toBeGreaterThan(0);
    expect(full.held - selective.held).toBe(4 * 8 * H * T * T * cfg.layers);
    expect(live.size).toBe(0);
  });

  it('starts near ln 28 nats/char', async () => {
    const { loss } = await grads(1, 1);
    expect(Math.abs(loss - Math.log(28))).toBeLessThan(0.05);
  });

  it('micro-batches (padded targets normalised over the whole batch) give the full-batch loss and gradient; so do 4 stages and recomputation', async () => {
    // Names differ in length, so micro-batches hold different numbers of targets.
    const counts = splitMicrobatches(batch, 4).map(targetCount);
    expect(new Set(counts).size).toBeGreaterThan(1);
    expect(Array.from(batch.labels).filter((l) => l === IGNORE_LABEL).length).toBeGreaterThan(0);
    const full = await grads(1, 1);
    for (const [stages, m, recompute] of [[1, 4, false], [4, 4, false], [2, 8, true]] as const) {
      const r = await grads(stages, m, recompute);
      expect(Math.abs(r.loss - full.loss), `loss, ${stages} stages, ${m} micro-batches`).toBeLessThan(1e-12 * full.loss);
      for (const n of Object.keys(full.g)) expect(relErr(r.g[n], full.g[n]), `${n}, ${stages} stages, ${m} mbs, recompute ${recompute}`).toBeLessThan(1e-12);
    }
  });

  it("the training loop's step loss is the mean over the batch's non-padded targets (an independent per-target count), with 4 micro-batches", async () => {
    const run = { ...cfg, microbatches: 4, steps: 1, lr: 0.01, seed: 3, evalEvery: 0 };
    const r = await trainSingleDevice(be, run);
    const b = new BatchSampler(createDataset(run).train, run.batchSize, run.seed).batch(0);
    const chain = new StageChain(be, buildModelSpec(run), 1, run.seed);
    const L = (await be.read(await chain.logits(chain.inputTensor(b)))) as Float64Array;
    let sum = 0, n = 0;
    b.labels.forEach((y, i) => {
      if (y < 0) return;
      const row = L.subarray(i * 28, (i + 1) * 28);
      const mx = Math.max(...row);
      sum += mx + Math.log(row.reduce((s, v) => s + Math.exp(v - mx), 0)) - row[y];
      n++;
    });
    expect(n).toBeLessThan(b.labels.length);
    expect(Math.abs(r.losses[0] - sum / n)).toBeLessThan(1e-12);
  });
});

describe('sampling names from the GPT', () => {
  it("the next-character logits are the model's logits at the name's last position, and sampled names fit the block", async () => {
    const spec = buildModelSpec(tiny);
    const chain = new StageChain(be, spec, 1, 4);
    const T = 16;
    const e = encodeName('emma');
    const window = new Int32Array(T);
    window.set(e, T - e.length); // left-padded with end marks, as sampleNames keeps it
    const got = await nextCharLogits(be, chain)(window, 1);
    const seq = new Int32Array(T);
    seq.set(e, 1);
    const all = await be.read(await chain.logits(be.tensor(seq, [1, T], 'i32')));
    expect(Array.from(got)).toEqual(Array.from(all.subarray(4 * 28, 5 * 28)));
    expect(samplingWindow(spec, 3)).toEqual({ context: 16, maxLength: 15 });
    const names = await sampleNames(nextCharLogits(be, chain), { count: 6, seed: 1, ...samplingWindow(spec, 3) });
    expect(names).toHaveLength(6);
    for (const n of names) expect(n).toMatch(/^[a-z-]{0,15}$/);
  });
});

describe('what the partition counts for the GPT', () => {
  const costs = (over: Partial<ModelConfig>) => blockCosts(buildModelSpec({ ...defaultGptConfig(), ...MAKEMORE_GPT, ...over }));

  it("a block's cost holds its matmuls (2·T·12C² from its weight shapes) plus attention terms that grow as T²", async () => {
    const spec = buildModelSpec({ ...defaultGptConfig(), ...MAKEMORE_GPT });
    const chain = new StageChain(be, spec, 1, 1);
    const T = 16;
    const weights = chain.params.filter((p) => p.name.startsWith('transformer.h.1.') && p.value.shape.length === 2);
    const matmul = 2 * T * weights.reduce((s, p) => s + p.value.size, 0);
    const c16 = costs({ blockSize: 16 })[1], c32 = costs({ blockSize: 32 })[1], c64 = costs({ blockSize: 64 })[1];
    expect(c16).toBeGreaterThan(matmul);
    // Per token, the rest grows with T (the causal T² terms); the matmuls per token do not.
    const restPerToken = (c: number, t: number) => (c - (matmul / T) * t) / t;
    expect(restPerToken(c32, 32) - restPerToken(c16, 16)).toBeGreaterThan(0);
    expect(restPerToken(c64, 64) - restPerToken(c32, 32)).toBeCloseTo(2 * (restPerToken(c32, 32) - restPerToken(c16, 16)), 6);
  });

  it('the first block adds the embedding (gather and add), the head counts the vocab-wide matmul; equal blocks get one stage each', async () => {
    const c = costs({ layers: 4 });
    expect(c[1]).toBe(c[2]);
    expect(c[0] - c[1]).toBe(2 * 16 * 64);
    expect(c[4]).toBeGreaterThan(2 * 16 * 64 * 28);
    const wide = costs({ layers: 4, width: 128, heads: 4 });
    expect(wide[4] / c[4]).toBeGreaterThan(1.9);
    expect(partitionBlocks(5, costs({ layers: 4 }), 4)).toEqual([[0, 1], [1, 2], [2, 3], [3, 5]]);
  });
});

describe('attention patterns of one name', () => {
  it('per layer and head, causal rows that sum to 1, equal to an independent softmax of q·k from the weights', async () => {
    const { attentionPatterns } = await import('./attention-patterns.ts');
    const cfg = { ...tiny, layers: 1, heads: 2, width: 6 };
    const chain = new StageChain(be, buildModelSpec(cfg), 1, 8);
    const r = await attentionPatterns(be, chain, 'anna');
    expect(r.tokens).toEqual(['.', 'a', 'n', 'n', 'a']);
    expect(r.probs).toHaveLength(1);
    expect(r.probs[0]).toHaveLength(2);
    for (const head of r.probs[0]) {
      head.forEach((row, t) => {
        expect(row.reduce((a, b) => a + b, 0)).toBeCloseTo(1, 12);
        for (let j = t + 1; j < row.length; j++) expect(row[j]).toBe(0);
      });
    }
    // Independently: x = wte[tok] + wpe[t]; LayerNorm (gain 1, shift 0 at init); qkv = x·Wᵀ + b; softmax over j ≤ t of q·k / sqrt(D).
    const w = await chain.readParams();
    const C = 6, D = 3, toks = [0, ...encodeName('anna')];
    const xs = toks.map((tok, t) => Array.from({ length: C }, (_, c) => w['transformer.wte.weight'][tok * C + c] + w['transformer.wpe.weight'][t * C + c]));
    const ln = xs.map((row) => {
      const mu = row.reduce((a, b) => a + b, 0) / C;
      const v = row.reduce((a, b) => a + (b - mu) ** 2, 0) / C;
      return row.map((x) => (x - mu) / Math.sqrt(v + 1e-5));
    });
    const W = w['transformer.h.0.attn.c_attn.weight'], bias = w['transformer.h.0.attn.c_attn.bias'];
    const qkv = ln.map((row) => Array.from({ length: 3 * C }, (_, o) => bias[o] + row.reduce((s, x, i) => s + x * W[o * C + i], 0)));
    for (let h = 0; h < 2; h++) {
      const t = 4;
      const s = Array.from({ length: t + 1 }, (_, j) => Array.from({ length: D }, (_, d) => qkv[t][h * D + d] * qkv[j][C + h * D + d]).reduce((a, b) => a + b, 0) / Math.sqrt(D));
      const mx = Math.max(...s);
      const e = s.map((v) => Math.exp(v - mx));
      const z = e.reduce((a, b) => a + b, 0);
      e.forEach((v, j) => expect(r.probs[0][h][t][j]).toBeCloseTo(v / z, 12));
    }
  });
});
