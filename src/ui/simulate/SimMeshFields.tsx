/**
 * The Simulate view's mesh settings: data-parallel replicas with their ring and
 * ZeRO stage, and tensor parallelism inside each stage (Megatron's layers, the
 * tab's one-round exchange).
 */
import { runsAsStream, takesNoReplicas } from '../../schedule/index.ts';
import { patchSim } from '../../state/store/index.ts';
import { SIM_LIMITS, simTpCollectivesPerMicrobatch, type SimParams } from '../../state/store/index.ts';
import { CheckboxField, NumberField, SelectField } from '../controls/fields.tsx';
import { SCHEDULE_LABELS } from '../controls/schedule-labels.ts';

type ZeroChoice = '0' | '1' | '2' | '3';
const ZERO_OPTIONS: readonly { value: ZeroChoice; label: string }[] = [
  { value: '0', label: 'None: the all-reduce at the flush' },
  { value: '1', label: 'ZeRO-1: optimizer state sharded (same volume)' },
  { value: '2', label: 'ZeRO-2: + gradients reduce-scattered per backward' },
  { value: '3', label: 'ZeRO-3 / FSDP: + weights gathered per action' },
];

export function SimMeshFields({ sim, errorFor }: { sim: SimParams; errorFor: (field: string) => string | null }) {
  const workers = sim.dp * sim.ranks * sim.tp;
  const tpOff = sim.tp === 1;
  const stream = runsAsStream(sim.schedule);
  // PipeDream takes no replicas; 2BW a plain all-reduce after each block, overlapped (stream-replicas.ts).
  const noReplicas = takesNoReplicas(sim.schedule) && sim.dp === 1;
  return (
    <>
      <fieldset>
        <legend>Data parallel</legend>
        <NumberField
          label="Replicas (dp)"
          name="sim.dp"
          integer
          min={1}
          max={SIM_LIMITS.dp}
          value={sim.dp}
          onChange={(dp) => patchSim(dp > 1 ? { dp } : { dp, zero: 0, reshard: 'step' })}
          error={errorFor('dp')}
          disabled={noReplicas}
          hint={
            noReplicas
              ? `${SCHEDULE_LABELS[sim.schedule]} updates after every backward: its replicas would never hold a point to sum their gradients at`
              : `${sim.dp} × ${sim.ranks}${sim.tp > 1 ? ` × ${sim.tp}` : ''} = ${workers.toLocaleString('en-US')} workers; each stage's gradients are summed by a ring all-reduce over its ${sim.dp} replicas${stream ? `, after its last backward of each step's ${sim.microbatches} micro-batches, inside the stream` : ''}`
          }
        />
        <NumberField
          label="Gradients per rank, MB"
          name="sim.gradMB"
          min={0}
          step={1}
          value={sim.gradMB}
          onChange={(gradMB) => patchSim({ gradMB })}
          error={errorFor('gradMB')}
          disabled={sim.dp === 1}
          hint={sim.tp > 1 ? `split over its stages like its compute, and over its ${sim.tp} tp workers: each ring moves 1/${sim.tp}` : 'split over its stages like its compute'}
        />
        <div className="row2">
          <NumberField label="All-reduce latency, ms" name="sim.arLatencyMs" min={0} step={0.01} value={sim.arLatencyMs} onChange={(arLatencyMs) => patchSim({ arLatencyMs })} error={errorFor('arLatencyMs')} disabled={sim.dp === 1} hint="α, per chunk exchange" />
          <NumberField label="Bandwidth, MB/s" name="sim.arBandwidthMBs" min={0} step={100} value={sim.arBandwidthMBs} onChange={(arBandwidthMBs) => patchSim({ arBandwidthMBs })} error={errorFor('arBandwidthMBs')} disabled={sim.dp === 1} hint="β, one link" />
        </div>
        <CheckboxField label="Overlap the all-reduce with the backward" name="sim.overlap" checked={sim.overlap} onChange={(overlap) => patchSim({ overlap })} disabled={sim.dp === 1 || (stream && sim.overlap)} />
        <SelectField<ZeroChoice>
          label="Sharding (ZeRO)"
          name="sim.zero"
          value={String(sim.zero) as ZeroChoice}
          options={ZERO_OPTIONS}
          onChange={(z) => {
            const zero = Number(z) as SimParams['zero'];
            patchSim(zero === 3 ? { zero } : { zero, reshard: 'step' });
          }}
          error={errorFor('zero')}
          disabled={sim.dp === 1 || (stream && sim.zero === 0)}
          hint={stream ? 'a stream sums each block with a plain all-reduce' : sim.zero >= 2 ? 'its collectives are played between the actions, as the tab runs them' : undefined}
        />
        {sim.zero === 3 && (
          <CheckboxField label="Free gathered weights after every action (FSDP's reshard after forward)" name="sim.reshard" checked={sim.reshard === 'microbatch'} onChange={(on) => patchSim({ reshard: on ? 'microbatch' : 'step' })} />
        )}
        {errorFor('overlap') && <p className="field-error">{errorFor('overlap')}</p>}
        {errorFor('reshard') && <p className="field-error">{errorFor('reshard')}</p>}
        <p className="muted small">The all-reduce reads one time unit of the cost model as 1 ms.</p>
      </fieldset>
      <fieldset>
        <legend>Tensor parallel</legend>
        <NumberField
          label="Tensor parallel (tp)"
          name="sim.tp"
          integer
          min={1}
          max={SIM_LIMITS.tp}
          value={sim.tp}
          onChange={(tp) => patchSim(tp > 1 ? { tp } : { tp, sequenceParallel: false })}
          error={errorFor('tp')}
          hint={
            sim.tp > 1
              ? `each stage split over ${sim.tp} workers: each computes 1/${sim.tp} of F and B, then waits for ${simTpCollectivesPerMicrobatch(sim)} ${sim.sequenceParallel ? 'collectives' : 'all-reduces'} per micro-batch`
              : 'workers per stage (Megatron): compute divided, all-reduces between layers'
          }
        />
        <div className="row2">
          <NumberField
            label="Layers per rank"
            name="sim.tpLayers"
            integer
            min={1}
            max={SIM_LIMITS.tpLayers}
            value={sim.tpLayers}
            onChange={(tpLayers) => patchSim({ tpLayers })}
            error={errorFor('tpLayers')}
            disabled={tpOff}
            hint={sim.sequenceParallel ? '4 collectives forward, 4 backward each; the LayerNorms’ gradients summed once a step' : '2 all-reduces forward, 2 backward each'}
          />
          <NumberField
            label={sim.sequenceParallel ? 'Activation size, KB' : 'All-reduce size, KB'}
            name="sim.tpActKB"
            min={0}
            step={64}
            value={sim.tpActKB}
            onChange={(tpActKB) => patchSim({ tpActKB })}
            error={errorFor('tpActKB')}
            disabled={tpOff}
            hint={sim.sequenceParallel ? `rows × width × bytes; each gather or scatter posts 1/${sim.tp} of it` : 'rows × width × bytes'}
          />
        </div>
        <CheckboxField
          label="Sequence parallelism"
          name="sim.sequenceParallel"
          checked={sim.sequenceParallel}
          onChange={(sequenceParallel) => patchSim({ sequenceParallel })}
          disabled={tpOff}
          hint={
            tpOff
              ? 'needs tp ≥ 2'
              : `each all-reduce becomes a reduce-scatter and an all-gather, each posting 1/${sim.tp} of the activation (Korthikanti et al. 2022): twice the rounds; each stage sums its LayerNorms' weight gradients where its update reads them (once a step under a flush)`
          }
        />
        {errorFor('sequenceParallel') && <p className="field-error">{errorFor('sequenceParallel')}</p>}
        <div className="row2">
          <NumberField label="tp α, ms" name="sim.tpLatencyMs" min={0} step={0.01} value={sim.tpLatencyMs} onChange={(tpLatencyMs) => patchSim({ tpLatencyMs })} error={errorFor('tpLatencyMs')} disabled={tpOff} hint="latency of one collective" />
          <NumberField label="tp β, MB/s" name="sim.tpBandwidthMBs" min={0} step={1000} value={sim.tpBandwidthMBs} onChange={(tpBandwidthMBs) => patchSim({ tpBandwidthMBs })} error={errorFor('tpBandwidthMBs')} disabled={tpOff} hint="what one worker sends per second" />
        </div>
        <p className="muted small">One collective: α + (tp − 1) · part / β, the part what each worker posts to each other (an all-reduce’s is the whole size; a gather’s or scatter’s 1/tp of it), one round of direct exchange as the tab runs it; nothing overlaps it.</p>
      </fieldset>
    </>
  );
}
