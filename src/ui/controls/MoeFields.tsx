/**
 * The GPT's mixture-of-experts fields (src/nn/moe/moe-config.ts): experts (0 keeps the dense MLP) and, with
 * experts, top-k, the capacity factor, which blocks and the aux loss's weight. Each stage holds all its blocks'
 * experts (no expert parallelism in the tab).
 */
import type { RunConfig } from '../../config/run-config.ts';
import { MOE_DEFAULTS, MOE_LIMITS } from '../../nn/moe/moe-config.ts';
import { NumberField, SelectField } from './fields.tsx';

interface Props {
  cfg: RunConfig;
  set: (patch: Partial<RunConfig>) => void;
  errorFor: (...fields: string[]) => string | null;
}

export function MoeFields({ cfg, set, errorFor }: Props) {
  const experts = cfg.experts ?? 0;
  const topK = cfg.topK ?? MOE_DEFAULTS.topK;
  return (
    <>
      <div className="row2">
        <NumberField
          label="Experts (MoE)"
          name="experts"
          integer
          min={0}
          max={MOE_LIMITS.experts}
          value={experts}
          onChange={(n) => set(n === 0 ? { experts: 0 } : { experts: n, topK: Math.min(topK, Math.max(1, n)) })}
          error={errorFor('experts')}
          hint={experts === 0 ? 'dense MLPs' : `each token to ${topK} of ${experts} experts`}
        />
        {experts > 0 && (
          <SelectField<'1' | '2'>
            label="Experts per token (top-k)"
            name="topK"
            value={topK === 2 ? '2' : '1'}
            options={[{ value: '1', label: 'top-1 (Switch)' }, { value: '2', label: 'top-2 (GShard)' }]}
            onChange={(v) => set({ topK: Number(v) })}
            error={errorFor('topK')}
          />
        )}
      </div>
      {experts > 0 && (
        <div className="row2">
          <NumberField
            label="Capacity factor"
            name="capacityFactor"
            min={0}
            max={MOE_LIMITS.capacityFactor}
            step={0.25}
            value={cfg.capacityFactor ?? MOE_DEFAULTS.capacityFactor}
            onChange={(capacityFactor) => set({ capacityFactor })}
            error={errorFor('capacityFactor')}
            hint="0: dropless"
          />
          <SelectField<'1' | '2'>
            label="MoE every … blocks"
            name="moeEvery"
            value={cfg.moeEvery === 2 ? '2' : '1'}
            options={[{ value: '1', label: 'every block' }, { value: '2', label: 'every other block' }]}
            onChange={(v) => set({ moeEvery: Number(v) })}
            error={errorFor('moeEvery')}
          />
          <NumberField
            label="Aux loss weight (α)"
            name="auxLossWeight"
            min={0}
            max={MOE_LIMITS.auxLossWeight}
            step={0.01}
            value={cfg.auxLossWeight ?? MOE_DEFAULTS.auxLossWeight}
            onChange={(auxLossWeight) => set({ auxLossWeight })}
            error={errorFor('auxLossWeight')}
          />
        </div>
      )}
    </>
  );
}
