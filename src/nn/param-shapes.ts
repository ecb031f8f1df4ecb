/**
 * Name → shape of every parameter of a model, in the model's order (the order
 * StageChain.params gives). The layers own their parameters' names, so the
 * model is built once on the CPU reference and disposed; paramCount (pure,
 * from the spec) says beforehand how many values that builds.
 */
import { CpuBackend } from './cpu-backend.ts';
import type { ModelSpec } from './model-spec.ts';
import { StageChain } from './stage-chain.ts';

export function paramShapes(spec: ModelSpec): Map<string, number[]> {
  const chain = new StageChain(new CpuBackend(), spec, 1, 0);
  try {
    return new Map(chain.params.map((p) => [p.name, [...p.value.shape]]));
  } finally {
    chain.dispose();
  }
}
