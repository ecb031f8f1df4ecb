/**
 * Which slice of each parameter a tensor-parallel worker holds (Megatron-LM,
 * Shoeybi et al. 2019, §3), as a rule per parameter of a model:
 *
 * GPT block (PyTorch layout, W [out, in]):
 * - `attn.c_attn` column-parallel by heads: worker j of t holds the rows of q, k
 *   and v for heads [j·H/t, (j+1)·H/t) (three row ranges, not a contiguous third),
 *   and the same entries of its bias;
 * - `attn.c_proj` row-parallel: the input columns of those heads; its bias whole,
 *   added once after the all-reduce;
 * - `mlp.c_fc` column-parallel: rows [j·4C/t, (j+1)·4C/t), and its bias;
 * - `mlp.c_proj` row-parallel: the matching input columns; bias whole.
 * MLPs (W [in, out]): every hidden linear column-parallel (W's output columns
 * [j·H/t, (j+1)·H/t) and that slice of b), its outputs all-gathered, since a
 * LayerNorm (char-MLP) or the next layer needs the whole row.
 * Everything else (embeddings, LayerNorms, the head) is whole on every worker:
 * the vocabularies here are 27–100 symbols, so Megatron's vocab-parallel
 * embedding would split almost nothing while adding two collectives.
 *
 * A worker's piece is a list of flat indices into the whole tensor
 * (`tpIndices`), so a checkpoint holds whole tensors by name and loads onto
 * any mesh: slice with the indices, or scatter pieces back (`joinTpPieces`).
 * Which parameters of a model are split, and how: tp-params.ts.
 */
import { ConfigError } from '../util/errors.ts';

/** How a parameter is split over t workers: whole on each, rows (dimension 0, in `parts` equal groups each split t ways) or columns (dimension 1). */
export type TpRule = { kind: 'whole' } | { kind: 'rows'; parts: number } | { kind: 'cols' };

export interface TpParam {
  rule: TpRule;
  /** The whole tensor's shape. */
  shape: readonly number[];
  /** The model block that holds it. */
  block?: number;
}

/** The shape of worker j's piece of a tensor of `shape` under `rule` over t workers. */
export function tpShape(shape: readonly number[], rule: TpRule, t: number): number[] {
  if (rule.kind === 'whole' || t === 1) return [...shape];
  if (rule.kind === 'rows') {
    if (shape[0] % (rule.parts * t) !== 0) throw new ConfigError('tp', t, `must divide ${shape[0] / rule.parts} (rows of a tensor of shape [${shape.join(', ')}] in ${rule.parts} part(s))`);
    return [shape[0] / t, ...shape.slice(1)];
  }
  if (shape.length !== 2 || shape[1] % t !== 0) throw new ConfigError('tp', t, `must divide ${shape[1]} (columns of a tensor of shape [${shape.join(', ')}])`);
  return [shape[0], shape[1] / t];
}

/** Flat indices into the whole tensor of worker j's piece, in the piece's own row-major order. */
export function tpIndices(shape: readonly number[], rule: TpRule, t: number, j: number): Int32Array {
  const size = shape.reduce((a, b) => a * b, 1);
  if (rule.kind === 'whole' || t === 1) return Int32Array.from({ length: size }, (_, i) => i);
  const piece = tpShape(shape, rule, t);
  const out = new Int32Array(size / t);
  let k = 0;
  if (rule.kind === 'rows') {
    const rowLen = size / shape[0];
    const partRows = shape[0] / rule.parts;
    const mine = partRows / t;
    for (let part = 0; part < rule.parts; part++) {
      const r0 = part * partRows + j * mine;
      for (let r = r0; r < r0 + mine; r++) for (let c = 0; c < rowLen; c++) out[k++] = r * rowLen + c;
    }
  } else {
    const [rows, cols] = shape;
    const w = piece[1];
    for (let r = 0; r < rows; r++) for (let c = j * w; c < (j + 1) * w; c++) out[k++] = r * cols + c;
  }
  return out;
}

/** Worker j's piece of a whole tensor. */
export function tpSlice<T extends Float32Array | Float64Array>(whole: T, shape: readonly number[], rule: TpRule, t: number, j: number): T {
  const idx = tpIndices(shape, rule, t, j);
  const out = new (whole.constructor as new (n: number) => T)(idx.length);
  for (let k = 0; k < idx.length; k++) out[k] = whole[idx[k]];
  return out;
}

/** The whole tensor from its t pieces (pieces[j] worker j's). */
export function joinTpPieces(pieces: readonly (Float32Array | Float64Array)[], shape: readonly number[], rule: TpRule): Float64Array {
  const t = pieces.length;
  const size = shape.reduce((a, b) => a * b, 1);
  const out = new Float64Array(size);
  pieces.forEach((p, j) => {
    const idx = tpIndices(shape, rule, t, j);
    if (p.length !== idx.length) throw new Error(`tp piece ${j} holds ${p.length} values; a 1/${t} piece of [${shape.join(', ')}] holds ${idx.length}`);
    for (let k = 0; k < idx.length; k++) out[idx[k]] = p[k];
  });
  return out;
}

/** The name a tp worker's piece of parameter `name` goes by in its stage, state and checkpoints' pieces: `name@tp1/2`. */
export function tpPieceName(name: string, j: number, t: number): string {
  return t === 1 ? name : `${name}@tp${j}/${t}`;
}

/** The parameter and tp place a piece name `name@tpJ/T` names (null: a whole parameter's name). */
export function parseTpPieceName(piece: string): { name: string; j: number; t: number } | null {
  const m = /^(.*)@tp(\d+)\/(\d+)$/.exec(piece);
  return m ? { name: m[1], j: Number(m[2]), t: Number(m[3]) } : null;
}
