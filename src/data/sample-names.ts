/**
 * New names from a trained next-character model: start from a context of end
 * marks, sample the next character from softmax(logits / temperature), slide
 * the window, stop at the end mark. All names are sampled side by side, one
 * model call per character position.
 */
import { requireFinite, requireInt } from '../util/errors.ts';
import { Rng } from '../util/rng.ts';
import { END, NAMES_VOCAB, NAMES_VOCAB_SIZE } from './names.ts';

/** Logits [rows, 28] (row-major) for contexts i32 [rows, context]. */
export type NextCharLogits = (contexts: Int32Array, rows: number) => Promise<ArrayLike<number>>;

export interface SampleOptions {
  count: number;
  context: number;
  seed: number;
  /** Softmax temperature (default 1); lower is more conservative. */
  temperature?: number;
  /** Names are cut at this many characters (default 20). */
  maxLength?: number;
}

export async function sampleNames(logits: NextCharLogits, o: SampleOptions): Promise<string[]> {
  const count = requireInt('count', o.count, 1, 10_000);
  const k = requireInt('context', o.context, 1, 32);
  const temperature = requireFinite('temperature', o.temperature ?? 1, { min: 0, exclusiveMin: true });
  const maxLength = requireInt('maxLength', o.maxLength ?? 20, 1, 1000);
  const rng = new Rng(o.seed).fork('names:sample');
  const out: string[] = new Array<string>(count).fill('');
  const windows: number[][] = Array.from({ length: count }, () => new Array<number>(k).fill(END));
  let active = Array.from({ length: count }, (_, i) => i);
  for (let pos = 0; pos < maxLength && active.length > 0; pos++) {
    const ctx = new Int32Array(active.length * k);
    active.forEach((name, r) => ctx.set(windows[name], r * k));
    const L = await logits(ctx, active.length);
    const still: number[] = [];
    active.forEach((name, r) => {
      const next = sampleRow(L, r * NAMES_VOCAB_SIZE, NAMES_VOCAB_SIZE, temperature, rng);
      if (next === END) return;
      out[name] += NAMES_VOCAB[next];
      windows[name].shift();
      windows[name].push(next);
      still.push(name);
    });
    active = still;
  }
  return out;
}

/** One draw from softmax(logits / temperature) over the V logits of L at `off`. */
export function sampleRow(L: ArrayLike<number>, off: number, V: number, temperature: number, rng: Rng): number {
  let mx = -Infinity;
  for (let j = 0; j < V; j++) mx = Math.max(mx, L[off + j]);
  const p = new Float64Array(V);
  let s = 0;
  for (let j = 0; j < V; j++) s += p[j] = Math.exp((L[off + j] - mx) / temperature);
  let u = rng.next() * s;
  for (let j = 0; j < V; j++) {
    u -= p[j];
    if (u < 0) return j;
  }
  return V - 1;
}
