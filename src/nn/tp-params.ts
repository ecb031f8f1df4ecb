/** The tensor-parallel split (tp-shard.ts) of every parameter of a model that tensor parallelism splits; the rules are described in tp-shard.ts. */
import type { ModelSpec } from './model-spec.ts';
import type { TpParam } from './tp-shard.ts';

/** The split of every parameter of `spec` that tensor parallelism splits (absent: whole). */
export function tpParams(spec: ModelSpec): Map<string, TpParam> {
  const out = new Map<string, TpParam>();
  const last = spec.blocks.length - 1;
  spec.blocks.forEach((b, bi) => {
    for (const l of b.layers) {
      if (l.kind === 'gpt-block') {
        const C = l.dim, p = l.prefix;
        out.set(`${p}.attn.c_attn.weight`, { rule: { kind: 'rows', parts: 3 }, shape: [3 * C, C], block: bi });
        out.set(`${p}.attn.c_attn.bias`, { rule: { kind: 'rows', parts: 3 }, shape: [3 * C], block: bi });
        out.set(`${p}.attn.c_proj.weight`, { rule: { kind: 'cols' }, shape: [C, C], block: bi });
        out.set(`${p}.mlp.c_fc.weight`, { rule: { kind: 'rows', parts: 1 }, shape: [4 * C, C], block: bi });
        out.set(`${p}.mlp.c_fc.bias`, { rule: { kind: 'rows', parts: 1 }, shape: [4 * C], block: bi });
        out.set(`${p}.mlp.c_proj.weight`, { rule: { kind: 'cols' }, shape: [C, 4 * C], block: bi });
      } else if (l.kind === 'linear' && bi !== last) {
        out.set(`${b.name}.${l.name}.W`, { rule: { kind: 'cols' }, shape: [l.in, l.out], block: bi });
        out.set(`${b.name}.${l.name}.b`, { rule: { kind: 'rows', parts: 1 }, shape: [l.out], block: bi });
      }
    }
  });
  return out;
}
