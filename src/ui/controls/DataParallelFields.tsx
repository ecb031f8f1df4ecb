/**
 * The second and third axes in the page's pipeline controls: data-parallel
 * replicas of the pipeline (dp), tensor-parallel workers per stage (tp,
 * Megatron's split of each layer), how much of each stage the replicas shard
 * (ZeRO 0–3; ZeRO-3's reshard and prefetch) and whether the collectives overlap
 * the compute (src/schedule/mesh.ts, src/runtime/policies/flush.ts,
 * src/runtime/policies/sharded-step.ts, src/runtime/comm/tp-collective.ts). PipeDream-2BW on
 * replicas all-reduces each block as it ends, without ZeRO: both fields are
 * fixed there (src/runtime/policies/double-buffer-policy.ts).
 */
import { MAX_RUN_RANKS, type ReshardMode, type RunConfig, type ZeroStage } from '../../config/run-config.ts';
import { scheduleKind } from '../../schedule/registry.ts';
import { takesNoReplicas } from '../../schedule/stream-replicas.ts';
import { CheckboxField, NumberField, SelectField } from './fields.tsx';

const ZERO_OPTIONS: readonly { value: `${ZeroStage}`; label: string }[] = [
  { value: '0', label: 'off' },
  { value: '1', label: 'optimizer (ZeRO-1)' },
  { value: '2', label: '+ gradients (ZeRO-2)' },
  { value: '3', label: '+ weights (ZeRO-3, FSDP)' },
];

const RESHARD_OPTIONS: readonly { value: ReshardMode; label: string }[] = [
  { value: 'step', label: 'the step' },
  { value: 'microbatch', label: 'every action' },
];

/** What each worker keeps of its stages at ZeRO stage `zero`, for the hint. */
function zeroHint(zero: ZeroStage, dp: number): string {
  if (zero === 0) return 'every replica keeps its stages whole';
  const kept = ['', 'optimizer state', 'optimizer state and gradients', 'optimizer state, gradients and weights'][zero];
  return `each worker keeps 1/${dp} of its stages' ${kept}`;
}

interface Props {
  cfg: RunConfig;
  set: (patch: Partial<RunConfig>) => void;
  errorFor: (...fields: string[]) => string | null;
}

/** What each tp worker holds of a stage, for the hint. */
function tpHint(cfg: RunConfig): string {
  const tp = cfg.tp ?? 1;
  if (tp === 1) return 'workers sharing each stage’s layers (Megatron)';
  const workers = `${cfg.dp} × ${tp} × ${cfg.ranks} = ${cfg.dp * tp * cfg.ranks} workers`;
  if (cfg.model === 'gpt' && typeof cfg.heads === 'number') {
    const talk = cfg.sequenceParallel ? '4 reduce-scatters, 4 all-gathers and a LayerNorm gradients’ all-reduce per block per micro-batch' : '4 all-reduces per block per micro-batch';
    return `${workers}; each holds ${cfg.heads / tp} of ${cfg.heads} heads and 1/${tp} of the MLP; ${talk}`;
  }
  return `${workers}; each holds ${cfg.hidden / tp} of ${cfg.hidden} columns of every hidden layer`;
}

export function DataParallelFields({ cfg, set, errorFor }: Props) {
  const workers = cfg.dp * (cfg.ep ?? 1) * (cfg.tp ?? 1) * cfg.ranks;
  const perReplica = cfg.batchSize / cfg.dp;
  const mesh = cfg.dp > 1;
  /** PipeDream-2BW: no flush; each block's all-reduce runs as the block ends, with ZeRO off (run-config.ts). */
  const blocks = scheduleKind(cfg.schedule).update === 'double-buffered';
  /** PipeDream updates after every backward: no replicas (stream-replicas.ts). */
  const noReplicas = takesNoReplicas(cfg.schedule);
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
          // ZeRO needs two replicas or more: back to 1 replica, it is switched off.
          onChange={(dp) => set(dp === 1 ? { dp, zero: 0, reshard: 'step' } : { dp })}
          error={errorFor('dp')}
          disabled={noReplicas && cfg.dp === 1}
          hint={noReplicas ? 'PipeDream updates after every backward: its replicas would never hold a point to sum their gradients at' : mesh ? `${cfg.dp} × ${(cfg.ep ?? 1) > 1 ? `${cfg.ep} × ` : ''}${(cfg.tp ?? 1) > 1 ? `${cfg.tp} × ` : ''}${cfg.ranks} = ${workers} workers; each replica trains ${Number.isInteger(perReplica) ? perReplica : perReplica.toFixed(1)} rows of every batch` : 'copies of the pipeline, each on its slice of the batch'}
        />
        <div className="stack">
          <CheckboxField
            label={cfg.zero >= 2 ? 'Overlap collectives with compute' : 'Overlap all-reduce with backward'}
            name="overlap"
            checked={cfg.overlap}
            onChange={(overlap) => set({ overlap })}
            disabled={!mesh || (blocks && cfg.overlap)}
            hint={
              !mesh
                ? 'needs dp ≥ 2'
                : blocks
                  ? `PipeDream-2BW: a stage's all-reduce runs as each block of ${cfg.microbatches} micro-batches ends`
                  : cfg.zero >= 2
                  ? cfg.overlap
                    ? 'each backward’s reduce-scatter runs behind the next action'
                    : 'each backward waits for its reduce-scatter'
                  : cfg.overlap
                    ? "a stage's all-reduce starts after its last backward"
                    : 'all-reduce waits until every worker is done'
            }
          />
        </div>
      </div>
      <NumberField
        label="Tensor parallel (tp)"
        name="tp"
        integer
        min={1}
        max={MAX_RUN_RANKS}
        value={cfg.tp ?? 1}
        // One worker has no rows to split: sequence parallelism goes off with it.
        onChange={(tp) => set(tp === 1 ? { tp, sequenceParallel: undefined } : { tp })}
        error={errorFor('tp')}
        hint={tpHint(cfg)}
      />
      {((cfg.experts ?? 0) > 0 || (cfg.ep ?? 1) > 1) && (
        <NumberField
          label="Expert parallel (ep)"
          name="ep"
          integer
          min={1}
          max={MAX_RUN_RANKS}
          value={cfg.ep ?? 1}
          onChange={(ep) => set({ ep: ep === 1 ? undefined : ep })}
          error={errorFor('ep')}
          hint={
            (cfg.ep ?? 1) > 1
              ? `${cfg.dp} × ${cfg.ep} × ${cfg.ranks} = ${cfg.dp * (cfg.ep ?? 1) * cfg.ranks} workers; each holds ${(cfg.experts ?? 0) / (cfg.ep ?? 1)} of ${cfg.experts} experts and 1/${cfg.ep} of each micro-batch’s sequences`
              : 'workers sharing each stage’s experts (tokens reach them by an all-to-all)'
          }
        />
      )}
      {cfg.model === 'gpt' && ((cfg.tp ?? 1) > 1 || cfg.sequenceParallel) && (
        <CheckboxField
          label="Sequence parallelism"
          name="sequenceParallel"
          checked={cfg.sequenceParallel ?? false}
          onChange={(on) => set({ sequenceParallel: on ? true : undefined })}
          hint={
            cfg.sequenceParallel
              ? `each tp worker keeps 1/${cfg.tp} of the token rows between layers and stages: LayerNorms, residuals and their stash split too`
              : 'LayerNorms and residuals whole on every tp worker (Korthikanti et al.: split them by token)'
          }
        />
      )}
      <SelectField
        label="Shard across replicas"
        name="zero"
        value={String(cfg.zero) as `${ZeroStage}`}
        options={ZERO_OPTIONS}
        onChange={(v) => {
          const zero = Number(v) as ZeroStage;
          set(zero === 3 ? { zero } : { zero, reshard: 'step' });
        }}
        disabled={!mesh || (blocks && cfg.zero === 0)}
        hint={!mesh ? 'needs dp ≥ 2' : blocks ? 'PipeDream-2BW sums each block’s gradients with a plain all-reduce' : zeroHint(cfg.zero, cfg.dp)}
      />
      {mesh && cfg.zero === 3 && (
        <div className="row2">
          <SelectField
            label="Free gathered weights after"
            name="reshard"
            value={cfg.reshard}
            options={RESHARD_OPTIONS}
            onChange={(reshard) => set({ reshard })}
            error={errorFor('reshard')}
            hint={cfg.reshard === 'step' ? 'one all-gather per stage per step' : `least memory: two all-gathers per micro-batch (${2 * cfg.microbatches} per stage per step)`}
          />
          <CheckboxField
            label="Prefetch the next all-gather"
            name="prefetch"
            checked={cfg.prefetch}
            onChange={(prefetch) => set({ prefetch })}
            hint={cfg.prefetch ? 'the next gather runs while the current action computes' : 'each gather starts when its action does'}
          />
        </div>
      )}
      {errorFor('sequenceParallel', 'zero', 'overlap', 'prefetch') && (
        <p className="field-error" role="alert">
          {errorFor('sequenceParallel', 'zero', 'overlap', 'prefetch')}
        </p>
      )}
    </>
  );
}
