/**
 * Text from a trained next-character model on "your text": each sample starts
 * from a prompt (the first characters of a held-out block, as many as the
 * model's window), then draws the next character from softmax(logits /
 * temperature) and slides the window, `length` times. All samples are drawn
 * side by side, one model call per position.
 */
import { requireFinite, requireInt } from '../util/errors.ts';
import { Rng } from '../util/rng.ts';
import { sampleRow } from './sample-names.ts';

/** Logits [rows, V] (row-major) of the character after each window of i32 [rows, window]. */
export type NextTokenLogits = (windows: Int32Array, rows: number) => Promise<ArrayLike<number>>;

export interface TextSampleOptions {
  /** One prompt per sample, each at least `window` indices long (its last `window` are the first window). */
  prompts: readonly ArrayLike<number>[];
  /** Characters the model sees: the char-MLP's context, the GPT's block size. */
  window: number;
  /** Symbols of the vocabulary (the logits' width). */
  vocab: number;
  /** Characters drawn per sample. */
  length: number;
  seed: number;
  /** Softmax temperature (default 1); lower is more conservative. */
  temperature?: number;
  /** Awaited after each position (the page yields to its event loop there). */
  onPosition?: () => Promise<void>;
}

/** The drawn indices of each sample (the prompt not included). */
export async function sampleText(logits: NextTokenLogits, o: TextSampleOptions): Promise<number[][]> {
  const W = requireInt('window', o.window, 1, 4096);
  const V = requireInt('vocab', o.vocab, 1, 65_536);
  const length = requireInt('length', o.length, 1, 10_000);
  const temperature = requireFinite('temperature', o.temperature ?? 1, { min: 0, exclusiveMin: true });
  const rows = requireInt('prompts', o.prompts.length, 1, 1000);
  o.prompts.forEach((p, i) => requireInt(`prompts[${i}].length`, p.length, W));
  const rng = new Rng(o.seed).fork('text:sample');
  const windows = o.prompts.map((p) => Array.from({ length: W }, (_, j) => p[p.length - W + j]));
  const out: number[][] = o.prompts.map(() => []);
  for (let pos = 0; pos < length; pos++) {
    const x = new Int32Array(rows * W);
    windows.forEach((w, r) => x.set(w, r * W));
    const L = await logits(x, rows);
    for (let r = 0; r < rows; r++) {
      const next = sampleRow(L, r * V, V, temperature, rng);
      out[r].push(next);
      windows[r].shift();
      windows[r].push(next);
    }
    await o.onPosition?.();
  }
  return out;
}
