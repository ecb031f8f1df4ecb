/** Every data set by name, built from a configuration's data fields. */
import { requireOneOf } from '../util/errors.ts';
import type { Dataset } from './examples.ts';
import { createNameSequencesDataset, minBlockSize } from './name-sequences.ts';
import { createNamesDataset, NAMES_VOCAB_SIZE } from './names.ts';
import { makeTwoD, TWO_D_CLASSES, TWO_D_SETS } from './two-d.ts';
import type { TwoDName } from './two-d.ts';

export type DatasetName = TwoDName | 'names';
export const DATASETS: readonly DatasetName[] = [...TWO_D_SETS, 'names'];

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
  /** names for the GPT: positions per sequence (default the longest name + 1). */
  blockSize?: number;
}

export function isTwoD(name: DatasetName): name is TwoDName {
  return name !== 'names';
}

export function createDataset(cfg: DataConfig): Dataset {
  const name = requireOneOf('dataset', cfg.dataset, DATASETS);
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

/** Number of classes (= the head's width) of a data set. */
export function datasetClasses(name: DatasetName): number {
  return isTwoD(name) ? TWO_D_CLASSES[name] : NAMES_VOCAB_SIZE;
}
