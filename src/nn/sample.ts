/** Plugs a trained next-character model into sampleNames (src/data/sample-names.ts). */
import { END } from '../data/names.ts';
import type { NextCharLogits } from '../data/sample-names.ts';
import type { NextTokenLogits } from '../data/sample-text.ts';
import type { Backend } from './backend.ts';
import type { ModelSpec } from './model-spec.ts';
import { rowsPerExample } from './model-spec.ts';
import type { StageChain } from './stage-chain.ts';

/**
 * The window sampleNames keeps per name (context) and the longest name it may
 * grow: a character model sees its last `context` characters; the GPT sees the
 * whole name so far, which must fit its block (blockSize − 1 characters after
 * the start mark).
 */
export function samplingWindow(spec: ModelSpec, context: number): { context: number; maxLength: number } {
  const T = rowsPerExample(spec);
  return T > 1 ? { context: T, maxLength: T - 1 } : { context, maxLength: 20 };
}

/** Logits for a batch of contexts, computed by `model` on `be` (inputs and outputs disposed). */
export function nextCharLogits(be: Backend, model: StageChain): NextCharLogits {
  const k = model.spec.input.cols;
  const T = rowsPerExample(model.spec);
  if (T > 1) return nextTokenLogitsGpt(be, model, T);
  return (contexts, rows) => logitsOf(be, model, contexts, [rows, k]);
}

/** `model`'s logits for the i32 inputs `data` of `shape`, read back (input and logits disposed). */
async function logitsOf(be: Backend, model: StageChain, data: Int32Array, shape: number[]): Promise<Float32Array | Float64Array | Int32Array> {
  const input = be.tensor(data, shape, 'i32');
  const logits = await model.logits(input);
  be.dispose(input);
  const values = await be.read(logits);
  be.dispose(logits);
  return values;
}

/** Each row's V logits at one of its T positions (`at(r)`), from a [rows·T, V] block. */
function logitsAt(L: Float32Array | Float64Array | Int32Array, rows: number, T: number, V: number, at: (r: number) => number): Float64Array {
  const out = new Float64Array(rows * V);
  for (let r = 0; r < rows; r++) out.set(L.subarray((r * T + at(r)) * V, (r * T + at(r) + 1) * V), r * V);
  return out;
}

/**
 * The GPT: a window of T characters, left-padded with end marks, is the name
 * so far (names hold no end mark); the model reads [0, name, 0 …] and the
 * logits at the name's last position predict the next character.
 */
function nextTokenLogitsGpt(be: Backend, model: StageChain, T: number): NextCharLogits {
  const V = model.spec.classes;
  return async (contexts, rows) => {
    const x = new Int32Array(rows * T).fill(END);
    const at = new Int32Array(rows);
    for (let r = 0; r < rows; r++) {
      let start = T;
      while (start > 0 && contexts[r * T + start - 1] !== END) start--;
      const n = Math.min(T - start, T - 1);
      for (let i = 0; i < n; i++) x[r * T + 1 + i] = contexts[r * T + T - n + i];
      at[r] = n;
    }
    return logitsAt(await logitsOf(be, model, x, [rows, T]), rows, T, V, (r) => at[r]);
  };
}

/**
 * Logits of the character after a full window (src/data/sample-text.ts): the
 * char-MLP reads its k characters; the GPT reads T and its last position's
 * logits predict the next.
 */
export function windowLogits(be: Backend, model: StageChain): NextTokenLogits {
  const T = rowsPerExample(model.spec);
  if (T === 1) return nextCharLogits(be, model);
  const V = model.spec.classes;
  return async (windows, rows) => logitsAt(await logitsOf(be, model, windows, [rows, T]), rows, T, V, () => T - 1);
}
