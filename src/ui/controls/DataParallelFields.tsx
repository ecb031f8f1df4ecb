/**
 * The second axis in the page's pipeline controls: data-parallel replicas of
 * the pipeline (dp), ZeRO-1 and whether each stage's all-reduce overlaps the
 * backward (src/schedule/mesh.ts, src/runtime/flush.ts).
 */
import { MAX_RUN_RANKS, type RunConfig } from '../../config/run-config.ts';
import { CheckboxField, NumberField } from './fields.tsx';

interface Props {
  cfg: RunConfig;
  set: (patch: Partial<RunConfig>) => void;
  errorFor: (...fields: string[]) => string | null;
}

export function DataParallelFields({ cfg, set, errorFor }: Props) {
  const workers = cfg.dp * cfg.ranks;
  const perReplica = cfg.batchSize / cfg.dp;
  const mesh = cfg.dp > 1;
  return (
    <>
      <div className="row2">
        <NumberField
          label="Replicas (dp)"
          name="dp"
          integer
          min={1}
          max={MAX_RUN_RANKS}
          value={cfg.dp}
          // ZeRO-1 needs two replicas or more: back to 1 replica, it is switched off.
          onChange={(dp) => set(dp === 1 ? { dp, zero: 0 } : { dp })}
          error={errorFor('dp')}
          hint={mesh ? `${cfg.dp} × ${cfg.ranks} = ${workers} workers; each replica trains ${Number.isInteger(perReplica) ? perReplica : perReplica.toFixed(1)} rows of every batch` : 'copies of the pipeline, each on its slice of the batch'}
        />
        <div className="stack">
          <CheckboxField
            label="ZeRO-1 (shard optimizer state)"
            name="zero"
            checked={cfg.zero === 1}
            onChange={(on) => set({ zero: on ? 1 : 0 })}
            disabled={!mesh}
            hint={mesh ? `each worker holds 1/${cfg.dp} of its stages' optimizer state` : 'needs dp ≥ 2'}
          />
          <CheckboxField
            label="Overlap all-reduce with backward"
            name="overlap"
            checked={cfg.overlap}
            onChange={(overlap) => set({ overlap })}
            disabled={!mesh}
            hint={mesh ? (cfg.overlap ? "a stage's all-reduce starts after its last backward" : 'all-reduce waits until every worker is done') : 'needs dp ≥ 2'}
          />
        </div>
      </div>
      {errorFor('zero', 'overlap') && (
        <p className="field-error" role="alert">
          {errorFor('zero', 'overlap')}
        </p>
      )}
    </>
  );
}
