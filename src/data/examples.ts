/**
 * The shape every data set hands to training: a list of examples, each an
 * input row and an integer class label. Inputs are f32 feature rows for the
 * 2-D sets and i32 context-index rows for the names set.
 */
export type InputDType = 'f32' | 'i32';

/** The label of a padded target: it takes no loss and no gradient (PyTorch's ignore_index = −1, as makemore uses). */
export const IGNORE_LABEL = -1;

export interface Examples {
  /** Number of examples (rows). */
  readonly n: number;
  /** Row-major inputs, n × inputCols. */
  readonly inputs: Float32Array | Int32Array;
  readonly inputCols: number;
  readonly inputDType: InputDType;
  /**
   * Class labels, labelCols per row (row-major), each in [0, classes) or
   * IGNORE_LABEL: one per row for the MLPs, one per position for a sequence
   * model (the GPT).
   */
  readonly labels: Int32Array;
  /** Labels per row; absent means 1. */
  readonly labelCols?: number;
}

/** Labels per row of ex. */
export function labelCols(ex: Examples): number {
  return ex.labelCols ?? 1;
}

/**
 * Targets that take a loss (labels other than IGNORE_LABEL). The loss of a
 * step is normalised by this count over the whole batch, so accumulating its
 * micro-batches gives the full-batch gradient (for the MLPs it is the batch size).
 */
export function targetCount(ex: Examples): number {
  let n = 0;
  for (let i = 0; i < ex.labels.length; i++) if (ex.labels[i] !== IGNORE_LABEL) n++;
  return n;
}

export interface Dataset {
  readonly name: string;
  /** Number of classes the head predicts (3 for spiral, 28 for names). */
  readonly classes: number;
  readonly inputCols: number;
  readonly inputDType: InputDType;
  readonly train: Examples;
  readonly val: Examples;
}

/** Copies the rows `rows` (indices into ex) into a new Examples. */
export function gatherRows(ex: Examples, rows: ArrayLike<number>): Examples {
  const c = ex.inputCols;
  const lc = labelCols(ex);
  const n = rows.length;
  const inputs = ex.inputDType === 'i32' ? new Int32Array(n * c) : new Float32Array(n * c);
  const labels = new Int32Array(n * lc);
  for (let i = 0; i < n; i++) {
    const r = rows[i];
    inputs.set(ex.inputs.subarray(r * c, (r + 1) * c), i * c);
    labels.set(ex.labels.subarray(r * lc, (r + 1) * lc), i * lc);
  }
  return { n, inputs, inputCols: c, inputDType: ex.inputDType, labels, ...(ex.labelCols !== undefined ? { labelCols: lc } : {}) };
}

/** The rows [start, end) of ex, as views (no copy). */
export function sliceRows(ex: Examples, start: number, end: number): Examples {
  const c = ex.inputCols;
  const lc = labelCols(ex);
  return {
    n: end - start,
    inputs: ex.inputs.subarray(start * c, end * c),
    inputCols: c,
    inputDType: ex.inputDType,
    labels: ex.labels.subarray(start * lc, end * lc),
    ...(ex.labelCols !== undefined ? { labelCols: lc } : {}),
  };
}
