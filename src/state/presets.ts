/**
 * Presets: one-click configurations that each teach one thing about pipeline
 * schedules. Each is an ordinary configuration (a URL query like any other
 * link), optionally with a second link to run after it for the contrast.
 */
import { defaultRunConfig, withDataset, type RunConfig } from '../config/run-config.ts';
import { MOBY_DICK } from '../data/moby-dick.ts';
import { namesModelSwitch } from '../nn/train-config.ts';
import { defaultSimParams } from './store/index.ts';
import { urlQueryFor } from './store/index.ts';

export interface PresetLink {
  label: string;
  config: RunConfig;
}

export interface Preset {
  id: string;
  /** The lesson, as a sentence a newcomer can check on the timeline. */
  title: string;
  /** What to look at, in one or two sentences. */
  look: string;
  first: PresetLink;
  /** The contrast to run next, when the lesson needs two runs. */
  then?: PresetLink;
}

function cfg(patch: Partial<RunConfig>): RunConfig {
  return { ...defaultRunConfig(), steps: 100, ...patch };
}

export const PRESETS: readonly Preset[] = [
  {
    id: 'microbatches',
    title: 'The bubble shrinks as micro-batches grow',
    look: 'With 4 ranks, a step of 2 micro-batches leaves each rank idle most of the step; 16 micro-batches fill the pipeline. Watch the hatched idle time and the bubble badge.',
    first: { label: '1F1B, 2 micro-batches', config: cfg({ schedule: '1f1b', microbatches: 2 }) },
    then: { label: 'then 16 micro-batches', config: cfg({ schedule: '1f1b', microbatches: 16 }) },
  },
  {
    id: 'interleaving',
    title: 'Interleaving cuts the bubble',
    look: 'Each rank holds 2 smaller model chunks (lighter shade: the second), so the pipeline fills and drains in half the time.',
    first: { label: '1F1B', config: cfg({ schedule: '1f1b', layers: 7 }) },
    then: { label: 'then interleaved, 2 chunks per rank', config: cfg({ schedule: 'interleaved-1f1b', virtual: 2, layers: 7 }) },
  },
  {
    id: 'zero-bubble',
    title: 'Zero bubble splits the backward',
    look: 'The backward becomes I (gradient for the previous stage, sent at once) and W (weight gradient, done later to fill the gaps that 1F1B leaves idle).',
    first: { label: 'ZB-H1', config: cfg({ schedule: 'zb-h1' }) },
  },
  {
    id: 'pipedream',
    title: 'PipeDream never flushes',
    look: 'Asynchronous 1F1B: the next step’s forwards start before this step’s backwards end, so there is no drain between steps; each micro-batch’s backward uses the weights its forward saw (weight stashing).',
    first: { label: 'PipeDream', config: cfg({ schedule: 'pipedream' }) },
  },
  {
    id: 'recompute',
    title: 'Recomputation trades time for memory',
    look: 'With recomputation each stage keeps only its input and runs its forward again inside the backward: longer B blocks, smaller stash bytes under “Peak activations held”.',
    first: { label: '1F1B, keep activations', config: cfg({ schedule: '1f1b' }) },
    then: { label: 'then recompute', config: cfg({ schedule: '1f1b', recompute: true }) },
  },
  {
    id: 'selective-recompute',
    title: 'Selective recomputation saves less memory, for almost no time',
    look: 'Run the GPT recomputing only each block’s attention probabilities (selective), then recomputing whole stages (full). Under “Peak activations held” selective keeps all but the probabilities, full only each stage’s input; on the timeline selective’s B blocks barely grow, full’s grow by a forward.',
    first: { label: 'GPT, selective recomputation', config: cfg({ ...withDataset(defaultRunConfig(), 'names'), ...namesModelSwitch('gpt', 3), steps: 100, schedule: '1f1b', recomputeAttention: true }) },
    then: { label: 'then full recomputation', config: cfg({ ...withDataset(defaultRunConfig(), 'names'), ...namesModelSwitch('gpt', 3), steps: 100, schedule: '1f1b', recompute: true }) },
  },
  {
    id: 'tensor-parallel',
    title: 'Tensor parallelism splits each layer; sequence parallelism splits what it leaves whole',
    look: 'The GPT on 2 ranks × 2 tensor-parallel workers (lanes R0·t0 and R0·t1): each worker computes half of every block’s heads and MLP, and the pair meets in tp all-reduces twice a block each way. With sequence parallelism they become reduce-scatters and all-gathers, each worker keeps only its half of the token rows between layers, and “Peak activations held” falls; the losses stay the same.',
    first: { label: 'GPT, 2 ranks × tp 2', config: cfg({ ...withDataset(defaultRunConfig(), 'names'), ...namesModelSwitch('gpt', 3), steps: 100, schedule: '1f1b', ranks: 2, tp: 2 }) },
    then: { label: 'then sequence parallelism', config: cfg({ ...withDataset(defaultRunConfig(), 'names'), ...namesModelSwitch('gpt', 3), steps: 100, schedule: '1f1b', ranks: 2, tp: 2, sequenceParallel: true }) },
  },
  {
    id: 'your-text',
    title: 'A GPT learns a book, or your own text',
    look: 'Moby-Dick (public domain, shipped with the page): the held-out loss falls and the text under “Sampled text” starts to read like Melville. Choose “Your text” as the data set to drop in your own file.',
    first: { label: 'GPT on Moby-Dick, 4 ranks', config: cfg({ ...withDataset(defaultRunConfig(), 'text', MOBY_DICK.hash), steps: 300, evalEvery: 25 }) },
  },
  {
    id: 'makemore',
    title: 'makemore’s GPT below 2.00 nats/char (a GPU’s job)',
    look: 'makemore’s 4 × 4 × 64 transformer on names with its recipe (AdamW, batch 64, lr 2e-3 cosine, weight decay 0.1, 3,000 steps): held-out 1.98 in this page on an H200 (headless Chromium), 6 minutes 12 seconds from Run. On software WebGPU a step takes seconds.',
    first: { label: 'makemore’s GPT, 3,000 steps', config: cfg({ ...withDataset(defaultRunConfig(), 'names'), ...namesModelSwitch('gpt', 3, 'names', 'makemore'), evalEvery: 250 }) },
  },
];

/** The link of a preset's configuration: the page's own URL query for it (the Train view). */
export function presetQuery(config: RunConfig): string {
  return `?${urlQueryFor(config, defaultSimParams(), 'run')}`;
}
