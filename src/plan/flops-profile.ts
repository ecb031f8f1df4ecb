/**
 * The profile PipeLab assumes before anything is measured: FLOPs per block.
 * For each layer the forward costs layerFlopsPerRow; the input-gradient
 * backward about the same (none for an embedding, whose input is indices); the
 * weight-gradient backward the same again for layers with weights (a Linear's
 * dW = xᵀ·dy is one more matmul, an embedding's a scatter-add) and nothing for
 * those without. A layer keeps its input for the backward (4-byte floats;
 * an embedding keeps its indices); with recomputation a block keeps only its
 * own input. Times are in FLOPs, sizes in bytes, both for `rows` rows (one
 * micro-batch).
 */
import { blockInCols, layerFlopsPerRow, layerInCols, layerParamCount, type ModelSpec } from '../nn/model-spec.ts';
import { requireInt } from '../util/errors.ts';
import { PROFILE_VERSION, type Profile } from './profile.ts';

const BYTES = 4;

export function flopsProfile(spec: ModelSpec, rows = 1): Profile {
  requireInt('rows', rows, 1);
  const blocks = spec.blocks.map((b) => {
    let F = 0;
    let I = 0;
    let W = 0;
    let held = 0;
    for (const l of b.layers) {
      const f = layerFlopsPerRow(l) * rows;
      F += f;
      if (l.kind !== 'embedding') I += f;
      if (layerParamCount(l) > 0) W += f;
      held += layerInCols(l) * rows * BYTES;
    }
    return { name: b.name, F, I, W, B: I + W, heldBytes: held, heldBytesRecompute: blockInCols(b) * rows * BYTES };
  });
  return {
    version: PROFILE_VERSION,
    unit: 'unit',
    source: `FLOPs estimate for ${spec.name}, ${rows} row${rows === 1 ? '' : 's'} per micro-batch`,
    blocks,
    comm: new Array<number>(blocks.length - 1).fill(0),
  };
}
