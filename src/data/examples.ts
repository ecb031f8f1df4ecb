/**
 * The shape every data set hands to training: a list of examples, each an
 * input row and an integer class label. Inputs are f32 feature rows for the
 * 2-D sets and i32 context-index rows for the names set.
 */
export type InputDType = 'f32' | 'i32';

export interface Examples {
  /** Number of examples (rows). */
  readonly n: number;
  /** Row-major inputs, n × inputCols. */
  readonly inputs: Float32Array | Int32Array;
  readonly inputCols: number;
  readonly inputDType: InputDType;
  /** Class label per row, in [0, classes). */
  readonly labels: Int32Array;
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
  const n = rows.length;
  const inputs = ex.inputDType === 'i32' ? new Int32Array(n * c) : new Float32Array(n * c);
  const labels = new Int32Array(n);
  for (let i = 0; i < n; i++) {
    const r = rows[i];
    inputs.set(ex.inputs.subarray(r * c, (r + 1) * c), i * c);
    labels[i] = ex.labels[r];
  }
  return { n, inputs, inputCols: c, inputDType: ex.inputDType, labels };
}

/** The rows [start, end) of ex, as views (no copy). */
export function sliceRows(ex: Examples, start: number, end: number): Examples {
  const c = ex.inputCols;
  return {
    n: end - start,
    inputs: ex.inputs.subarray(start * c, end * c),
    inputCols: c,
    inputDType: ex.inputDType,
    labels: ex.labels.subarray(start, end),
  };
}
