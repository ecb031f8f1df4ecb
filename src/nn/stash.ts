/** What a stage (stage.ts) keeps of a micro-batch between its forward and its backward, and the helpers over it. */
import type { Tensor } from './backend.ts';

export interface Stash {
  readonly n: number;
  phase: 'forward' | 'input-done';
  /** Recompute only: the stage input, and (last stage) a copy of the labels. */
  input: Tensor | null;
  labels: Tensor | null;
  readonly lossScale: number;
  /** Per layer, what its backward needs (null with recompute until backwardInput). */
  saved: Tensor[][] | null;
  /** Last stage, no recompute: the loss gradient, computed with the loss. */
  dLogits: Tensor | null;
  /** After backwardInput: per layer with parameters, the gradient of its output. */
  dys: (Tensor | null)[] | null;
  /** Swapped to the host (runtime/policies/swap.ts): its tensors stand for copies there, not on the device. */
  away?: boolean;
}

/** The distinct tensors a stash holds (`saved`: in place of its own saved activations). */
export function tensorsOf(st: Stash, saved: Tensor[][] | null = st.saved): Set<Tensor> {
  const all = new Set<Tensor>();
  const add = (t: Tensor | null) => {
    if (t) all.add(t);
  };
  add(st.input);
  add(st.labels);
  add(st.dLogits);
  for (const s of saved ?? []) for (const t of s) all.add(t);
  for (const t of st.dys ?? []) add(t);
  return all;
}

/** Swapping (runtime/policies/swap.ts): each of the stash's tensors replaced through `map`; `away`: it is on the host now. */
export function remapStash(st: Stash, map: ReadonlyMap<Tensor, Tensor>, away: boolean): void {
  const m = (t: Tensor | null) => (t ? (map.get(t) ?? t) : t);
  st.input = m(st.input);
  st.labels = m(st.labels);
  st.dLogits = m(st.dLogits);
  st.saved = st.saved?.map((ts) => ts.map((t) => map.get(t) ?? t)) ?? null;
  st.dys = st.dys?.map(m) ?? null;
  st.away = away;
}
