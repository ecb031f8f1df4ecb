/** Every data set by name, built from a configuration's data fields. */
import { requireOneOf } from '../util/errors.ts';
import type { Dataset } from './examples.ts';
import { createNameSequencesDataset, minBlockSize } from './name-sequences.ts';
import { createNamesDataset, NAMES_VOCAB_SIZE } from './names.ts';
import { makeTwoD, TWO_D_CLASSES, TWO_D_SETS } from './two-d.ts';
import type { TwoDName } from './two-d.ts';
import type { TextCorpus } from './text-corpus.ts';
import { createTextDataset, TEXT_DEFAULT_BLOCK } from './text-dataset.ts';
import { requireCorpus } from './text-registry.ts';

/** 'text': "your text", a corpus loaded in the page and named by its content hash (text-corpus.ts). */
export type DatasetName = TwoDName | 'names' | 'text';
export const DATASETS: readonly DatasetName[] = [...TWO_D_SETS, 'names', 'text'];

export interface DataConfig {
  dataset: DatasetName;
  /** 2-D sets: number of training points (validation draws a fifth as many, at least one per class). */
  points: number;
  /** 2-D sets: noise level (see two-d.ts for its meaning per set). */
  noise: number;
  /** names: characters of context. */
  context: number;
  seed: number;
  /** The model the data feeds: 'gpt' reads names as whole sequences (name-sequences.ts). */
  model?: string;
  /** names for the GPT: positions per sequence (default the longest name + 1); text: characters per block less one. */
  blockSize?: number;
  /** text: the content hash of the loaded text (text-registry.ts). */
  textHash?: string;
}

export function isTwoD(name: DatasetName): name is TwoDName {
  return name !== 'names' && name !== 'text';
}

/**
 * The data set of a configuration. A text run reads `corpus` when given (a
 * worker gets it with its init), else the text loaded here under cfg.textHash.
 */
export function createDataset(cfg: DataConfig, corpus?: TextCorpus): Dataset {
  const name = requireOneOf('dataset', cfg.dataset, DATASETS);
  if (name === 'text') {
    const c = corpus ?? requireCorpus(cfg.textHash);
    return createTextDataset(c, cfg.model, cfg.blockSize ?? TEXT_DEFAULT_BLOCK, cfg.context, cfg.seed);
  }
  if (!isTwoD(name)) {
    return cfg.model === 'gpt' ? createNameSequencesDataset(cfg.blockSize ?? minBlockSize(), cfg.seed) : createNamesDataset(cfg.context, cfg.seed);
  }
  const classes = TWO_D_CLASSES[name];
  return {
    name,
    classes,
    inputCols: 2,
    inputDType: 'f32',
    train: makeTwoD(name, cfg.points, cfg.noise, cfg.seed),
    // A different seed gives an independent draw of the same distribution.
    val: makeTwoD(name, Math.max(classes, Math.round(cfg.points / 5)), cfg.noise, cfg.seed ^ 0x5eed),
  };
}

/** Number of classes (= the head's width) of a data set: a text's vocabulary size, read from the loaded text. */
export function datasetClasses(cfg: Pick<DataConfig, 'dataset' | 'textHash'>): number {
  if (cfg.dataset === 'text') return requireCorpus(cfg.textHash).symbols.length;
  return isTwoD(cfg.dataset) ? TWO_D_CLASSES[cfg.dataset] : NAMES_VOCAB_SIZE;
}
