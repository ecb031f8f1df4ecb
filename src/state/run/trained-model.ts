/**
 * The trained model, rebuilt on the float64 CPU reference from the weights a
 * run read back: the decision boundary of a 2-D set on a grid, freshly
 * sampled names, and the parameter shapes the safetensors export needs.
 */
import { createDataset, isTwoD } from '../../data/datasets.ts';
import { sliceRows } from '../../data/examples.ts';
import { sampleNames } from '../../data/sample-names.ts';
import { CpuBackend } from '../../nn/cpu-backend.ts';
import { buildModelSpec } from '../../nn/model-config.ts';
import { evaluate } from '../../nn/evaluate.ts';
import { nextCharLogits, samplingWindow, windowLogits } from '../../nn/sample.ts';
import { sampleText } from '../../data/sample-text.ts';
import { decodeIds } from '../../data/text-corpus.ts';
import type { TextDataset } from '../../data/text-dataset.ts';
import { attentionPatterns, type AttentionPatterns } from '../../nn/attention-patterns.ts';
import { StageChain } from '../../nn/stage-chain.ts';
import { paramShapes } from '../../nn/param-shapes.ts';
import { toTrainConfig, type RunConfig } from '../../config/run-config.ts';
import type { BoundaryGrid, TextSample } from '../store/index.ts';

export type WeightMap = Record<string, Float32Array | Float64Array>;

function chainFor(cfg: RunConfig, weights: WeightMap | null): { be: CpuBackend; chain: StageChain } {
  const be = new CpuBackend();
  const spec = buildModelSpec(toTrainConfig(cfg));
  const chain = new StageChain(be, spec, 1, cfg.seed);
  if (weights) chain.loadParams(weights);
  return { be, chain };
}

/** Name → shape of every parameter of the configuration's model. */
export function parameterShapes(cfg: RunConfig): Record<string, number[]> {
  return Object.fromEntries(paramShapes(buildModelSpec(toTrainConfig(cfg))));
}

/** The predicted class over a size × size grid spanning the data, with the training points. */
export async function decisionBoundary(cfg: RunConfig, weights: WeightMap, size = 72): Promise<BoundaryGrid> {
  if (!isTwoD(cfg.dataset)) throw new Error(`decision boundary: ${cfg.dataset} is not a 2-D data set`);
  const data = createDataset({ dataset: cfg.dataset, points: cfg.points, noise: cfg.noise, context: cfg.context, seed: cfg.seed });
  const pts = data.train.inputs as Float32Array;
  let m = 1;
  for (let i = 0; i < pts.length; i++) m = Math.max(m, Math.abs(pts[i]));
  const lo = -m * 1.1;
  const hi = m * 1.1;
  const { be, chain } = chainFor(cfg, weights);
  const grid = new Float64Array(size * size * 2);
  for (let r = 0; r < size; r++) {
    for (let c = 0; c < size; c++) {
      const i = r * size + c;
      grid[i * 2] = lo + ((c + 0.5) / size) * (hi - lo);
      grid[i * 2 + 1] = hi - ((r + 0.5) / size) * (hi - lo);
    }
  }
  const classes = new Uint8Array(size * size);
  const confidence = new Float32Array(size * size);
  const k = data.classes;
  const input = be.tensor(grid, [size * size, 2]);
  const logits = await chain.logits(input);
  const L = await be.read(logits);
  be.dispose(input);
  be.dispose(logits);
  for (let i = 0; i < size * size; i++) {
    let arg = 0;
    let mx = -Infinity;
    for (let j = 0; j < k; j++) {
      if (L[i * k + j] > mx) {
        mx = L[i * k + j];
        arg = j;
      }
    }
    let z = 0;
    for (let j = 0; j < k; j++) z += Math.exp(L[i * k + j] - mx);
    classes[i] = arg;
    confidence[i] = 1 / z;
  }
  // Training accuracy, from the same model.
  const tin = be.tensor(data.train.inputs, [data.train.n, 2]);
  const tl = await be.read(await chain.logits(tin));
  let correct = 0;
  for (let i = 0; i < data.train.n; i++) {
    let arg = 0;
    for (let j = 1; j < k; j++) if (tl[i * k + j] > tl[i * k + arg]) arg = j;
    if (arg === data.train.labels[i]) correct++;
  }
  chain.dispose();
  return { size, lo, hi, classes, confidence, points: Float32Array.from(pts), labels: Int32Array.from(data.train.labels), classCount: k, accuracy: correct / data.train.n };
}

/** `count` new names from the trained character model. */
export async function sampleTrainedNames(cfg: RunConfig, weights: WeightMap, count: number, seed: number): Promise<string[]> {
  if (cfg.dataset !== 'names') throw new Error(`names: the model was trained on ${cfg.dataset}, not names`);
  const { be, chain } = chainFor(cfg, weights);
  try {
    return await sampleNames(nextCharLogits(be, chain), { count, ...samplingWindow(chain.spec, cfg.context), seed, temperature: 0.9 });
  } finally {
    chain.dispose();
  }
}

/** Characters the page samples after each prompt. */
export const TEXT_SAMPLE_LENGTH = 160;

/**
 * Text from the model being trained on "your text": `count` held-out blocks'
 * first blockSize characters as prompts, each continued by TEXT_SAMPLE_LENGTH
 * sampled characters (the page's thread is given back after every position).
 */
export async function sampleTrainedText(cfg: RunConfig, weights: WeightMap, count: number, seed: number, temperature: number): Promise<TextSample[]> {
  if (cfg.dataset !== 'text') throw new Error(`text: the model was trained on ${cfg.dataset}, not a text`);
  const data = createDataset(cfg) as TextDataset;
  const T = data.blockSize;
  const { be, chain } = chainFor(cfg, weights);
  try {
    const blocks = data.split.val.slice(0, count);
    const prompts = blocks.map((b) => data.corpus.ids.subarray(b * (T + 1), b * (T + 1) + T));
    const window = cfg.model === 'gpt' ? T : cfg.context;
    const drawn = await sampleText(windowLogits(be, chain), {
      prompts, window, vocab: data.classes, length: TEXT_SAMPLE_LENGTH, seed, temperature,
      onPosition: () => new Promise((r) => setTimeout(r, 0)),
    });
    return drawn.map((ids, i) => ({ prompt: decodeIds(data.corpus.symbols, prompts[i]), continuation: decodeIds(data.corpus.symbols, ids) }));
  } finally {
    chain.dispose();
  }
}

/** The trained GPT's attention pattern, per layer and head, over one name. */
export async function trainedAttention(cfg: RunConfig, weights: WeightMap, name: string): Promise<AttentionPatterns> {
  const { be, chain } = chainFor(cfg, weights);
  try {
    return await attentionPatterns(be, chain, name);
  } finally {
    chain.dispose();
  }
}

/**
 * The GPT's page curve reads this many held-out names (the first of the seeded
 * split): the whole split takes the float64 reference tens of seconds on the
 * page's thread for the default GPT. Training reports (trainSingleDevice, the
 * benchmark) evaluate every held-out name.
 */
export const GPT_PAGE_VAL_NAMES = 256;

/** The char-MLP's page curve on a text reads this many held-out rows (a text's split can be 100k rows). */
export const TEXT_PAGE_VAL_ROWS = 8192;

/** Mean cross-entropy on the validation split: with `weights`, of the trained model; with null, of the initial one (the same seed gives the same start). */
export async function validationLoss(cfg: RunConfig, weights: WeightMap | null): Promise<number> {
  const data = createDataset(cfg);
  const { be, chain } = chainFor(cfg, weights);
  try {
    const cap = cfg.model === 'gpt' ? GPT_PAGE_VAL_NAMES : cfg.dataset === 'text' ? TEXT_PAGE_VAL_ROWS : Infinity;
    const val = data.val.n > cap ? sliceRows(data.val, 0, cap) : data.val;
    return (await evaluate(be, chain, val)).loss;
  } finally {
    chain.dispose();
  }
}
