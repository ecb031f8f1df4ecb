/**
 * Every knob of a run, grouped: model and data, pipeline, training. A value
 * that breaks a rule is named under its field and in the summary above; the
 * rest of the configuration stays as it is.
 */
import { useMemo } from 'react';
import { DATASETS, isTwoD, type DatasetName } from '../../data/datasets.ts';
import { HIDDEN_ACTIVATIONS, LIMITS, type HiddenActivation } from '../../nn/model-config.ts';
import { OPTIMIZERS, type OptimizerName } from '../../nn/optimizer.ts';
import { LR_SCHEDULES, namesModelSwitch, type LrSchedule } from '../../nn/train-config.ts';
import { MAX_RUN_RANKS, PARTITIONS, RUN_SCHEDULES, runStages, withDataset, type Partition, type RunConfig, type RunScheduleName } from '../../config/run-config.ts';
import { runsAsStream, scheduleKind } from '../../schedule/index.ts';
import { depthFor, patchConfig, setConfig, suggestFix, withSchedule } from '../../state/store/index.ts';
import { usePipeLab } from '../../state/store/index.ts';
import { CheckboxField, NumberField, SelectField, TextField } from './fields.tsx';
import { MoeFields } from './MoeFields.tsx';
import { parseSwapText } from '../../config/memory-fields.ts';
import { cutOfRanges, cutText, parseCutText } from '../../config/explicit-cut.ts';
import { stageCut } from '../../config/run-limits.ts';
import { SCHEDULE_MENU_LABELS } from './schedule-labels.ts';
import { TextSource } from '../text/TextSource.tsx';
import { currentTextHash } from '../../state/text/index.ts';
import { gptSizingLine, pageGptSize } from '../../state/run/index.ts';
import { DataParallelFields } from './DataParallelFields.tsx';

const DATASET_LABELS: Record<DatasetName, string> = {
  spiral: 'Spiral (3 classes, 2-D)',
  moons: 'Moons (2 classes, 2-D)',
  circles: 'Circles (2 classes, 2-D)',
  xor: 'XOR (2 classes, 2-D)',
  names: 'Names (next character)',
  text: 'Your text (next character)',
};

const PARTITION_LABELS: Record<Partition, string> = { flops: 'FLOPs (balanced)', blocks: 'block count', cut: 'blocks per stage (cut)' };

/** The cut the configuration runs now (its FLOPs or block-count cut), as blocks per stage; [] when it cannot be cut. */
function cutNow(cfg: RunConfig): number[] {
  try {
    return cutOfRanges(stageCut(cfg).stageBlocks);
  } catch {
    return [];
  }
}

export function ConfigPanel({ disabled }: { disabled: boolean }) {
  const cfg = usePipeLab((s) => s.config);
  const webgpu = usePipeLab((s) => s.webgpu);
  const problem = usePipeLab((s) => s.configProblem);
  const fix = useMemo(() => (problem ? suggestFix(cfg) : null), [problem, cfg]);
  const errorFor = (...fields: string[]) => (problem && fields.includes(problem.field.split(/[.[]/)[0]) ? problem.message : null);
  const set = (patch: Partial<RunConfig>) => patchConfig(patch);
  const twoD = isTwoD(cfg.dataset);
  const gpt = cfg.model === 'gpt';
  const kind = scheduleKind(cfg.schedule);
  const kindAcceptsVirtual = kind.acceptsVirtual;

  return (
    <form className="config" aria-label="Run configuration" onSubmit={(e) => e.preventDefault()}>
      {problem && (
        <p className="config-problem" role="alert">
          <b>Not valid yet:</b> {problem.message}
          {fix && !disabled && (
            <>
              {' '}
              <button type="button" className="fix-button" onClick={() => setConfig(fix.config)}>
                {fix.label}
              </button>
            </>
          )}
        </p>
      )}
      <fieldset disabled={disabled}>
        <legend>Model and data</legend>
        <SelectField
          label="Data set"
          name="dataset"
          value={cfg.dataset}
          options={DATASETS.map((d) => ({ value: d, label: DATASET_LABELS[d] }))}
          onChange={(d) => setConfig(withDataset(cfg, d, d === 'text' ? currentTextHash() : undefined, pageGptSize()))}
          error={errorFor('dataset', 'model')}
          hint={twoD ? 'An MLP classifies points; watch its decision boundary.' : cfg.dataset === 'text' ? 'A model learns your text, character by character; watch what it writes as it trains.' : gpt ? 'A small GPT learns English first names; sample new ones and see where each head looks.' : 'A character MLP learns English first names; sample new ones.'}
        />
        {!twoD && (
          <SelectField<'char-mlp' | 'gpt'>
            label="Model"
            name="model"
            value={cfg.model === 'gpt' ? 'gpt' : 'char-mlp'}
            options={[{ value: 'char-mlp', label: 'Character MLP' }, { value: 'gpt', label: 'GPT (causal self-attention)' }]}
            onChange={(model) => {
              const next = namesModelSwitch(model, runStages(cfg) - 1, cfg.dataset === 'text' ? 'text' : 'names', pageGptSize());
              // Keep the batch a multiple of the micro-batches.
              // Experts are the GPT's: the character MLP takes none.
              set({ ...next, ...(model === 'gpt' ? {} : { experts: 0 }), batchSize: cfg.microbatches * Math.max(1, Math.round((next.batchSize ?? cfg.batchSize) / cfg.microbatches)) });
            }}
            error={errorFor('model')}
          />
        )}
        {!twoD && (
          <p className="muted small" data-testid="gpt-sizing">
            {gptSizingLine(webgpu)}
          </p>
        )}
        {cfg.dataset === 'text' && <TextSource disabled={disabled} />}
        {cfg.dataset === 'text' && !gpt && (
          <NumberField label="Block size" name="blockSize" integer min={1} max={LIMITS.blockSize} value={cfg.blockSize ?? 32} onChange={(blockSize) => set({ blockSize })} error={errorFor('blockSize')} hint="the text is cut into blocks of this + 1 characters" />
        )}
        {gpt && (
          <div className="row2">
            <NumberField label="Heads" name="heads" integer min={1} max={LIMITS.heads} value={cfg.heads ?? 4} onChange={(heads) => set({ heads })} error={errorFor('heads')} />
            <NumberField label="Width (C)" name="width" integer min={1} max={LIMITS.width} value={cfg.width ?? 64} onChange={(width) => set({ width })} error={errorFor('width')} />
            <NumberField label="Block size" name="blockSize" integer min={1} max={LIMITS.blockSize} value={cfg.blockSize ?? 16} onChange={(blockSize) => set({ blockSize })} error={errorFor('blockSize')} />
          </div>
        )}
        {gpt && <MoeFields cfg={cfg} set={set} errorFor={errorFor} />}
        <div className="row2">
          <NumberField label="Depth (layers)" name="layers" integer min={1} max={LIMITS.layers} value={cfg.layers} onChange={(layers) => set({ layers })} error={errorFor('layers')} hint={`${cfg.layers + 1} blocks`} />
          {!gpt && <NumberField label="Width (hidden)" name="hidden" integer min={1} max={LIMITS.hidden} value={cfg.hidden} onChange={(hidden) => set({ hidden })} error={errorFor('hidden')} />}
        </div>
        {/* The GPT's own fields (heads, width C, block size) are above; its MLP is GELU, 4·C wide. */}
        {!gpt && (
          <SelectField<HiddenActivation>
            label="Activation"
            name="activation"
            value={cfg.activation}
            options={HIDDEN_ACTIVATIONS.map((a) => ({ value: a, label: a }))}
            onChange={(activation) => set({ activation })}
            error={errorFor('activation')}
          />
        )}
        {gpt ? null : twoD ? (
          <div className="row2">
            <NumberField label="Points" name="points" integer min={3} value={cfg.points} onChange={(points) => set({ points })} error={errorFor('points')} />
            <NumberField label="Noise" name="noise" min={0} max={1} step={0.01} value={cfg.noise} onChange={(noise) => set({ noise })} error={errorFor('noise')} />
          </div>
        ) : (
          <div className="row2">
            <NumberField label="Context (chars)" name="context" integer min={1} max={LIMITS.context} value={cfg.context} onChange={(context) => set({ context })} error={errorFor('context')} />
            <NumberField label="Embedding width" name="embedDim" integer min={1} max={LIMITS.embedDim} value={cfg.embedDim} onChange={(embedDim) => set({ embedDim })} error={errorFor('embedDim')} />
          </div>
        )}
      </fieldset>

      <fieldset disabled={disabled}>
        <legend>Pipeline</legend>
        <SelectField<RunScheduleName>
          label="Schedule"
          name="schedule"
          value={cfg.schedule}
          options={RUN_SCHEDULES.map((s) => ({ value: s, label: SCHEDULE_MENU_LABELS[s] }))}
          onChange={(s) => setConfig(withSchedule(cfg, s))}
          error={errorFor('schedule')}
          hint={kind.title}
        />
        <div className="row2">
          <NumberField
            label="Stages (ranks)"
            name="ranks"
            integer
            min={1}
            max={MAX_RUN_RANKS}
            value={cfg.ranks}
            onChange={(ranks) => set({ ranks })}
            error={errorFor('ranks')}
            hint={`${(cfg.tp ?? 1) > 1 ? `${cfg.tp} workers + GPU devices (tp)` : 'one worker + GPU device'} each${cfg.dp > 1 ? ' per replica' : ''}; ${runStages(cfg)} stage${runStages(cfg) === 1 ? '' : 's'} in all`}
          />
          <NumberField
            label="Virtual stages per rank"
            name="virtual"
            integer
            min={kind.virtualStep}
            max={8}
            step={kind.virtualStep}
            value={cfg.virtual}
            onChange={(virtual) => set({ virtual })}
            error={errorFor('virtual')}
            disabled={!kindAcceptsVirtual}
            hint={!kindAcceptsVirtual ? 'this schedule holds a fixed number' : kind.virtualStep === 2 ? `2 per wave: ${Math.floor(cfg.virtual / 2)} wave${cfg.virtual >= 4 ? 's' : ''}` : 'model chunks per rank'}
          />
        </div>
        {runStages(cfg) > cfg.layers + 1 && depthFor(cfg.ranks, cfg.virtual) <= LIMITS.layers && (
          <p className="fix-it" data-testid="depth-fix">
            {runStages(cfg)} stages need at least {runStages(cfg)} blocks; the model has {cfg.layers + 1}.{' '}
            <button type="button" onClick={() => set({ layers: depthFor(cfg.ranks, cfg.virtual) })}>
              Set depth to {depthFor(cfg.ranks, cfg.virtual)}
            </button>
          </p>
        )}
        <DataParallelFields cfg={cfg} set={set} errorFor={errorFor} />
        <div className="row2">
          <NumberField label="Micro-batches" name="microbatches" integer min={1} value={cfg.microbatches} onChange={(microbatches) => set({ microbatches })} error={errorFor('microbatches')} hint={cfg.dp > 1 ? 'per replica' : undefined} />
          <NumberField
            label="Batch size"
            name="batchSize"
            integer
            min={1}
            value={cfg.batchSize}
            onChange={(batchSize) => set({ batchSize })}
            error={errorFor('batchSize')}
            hint={cfg.batchSize % (cfg.dp * cfg.microbatches) === 0 ? `${cfg.batchSize / (cfg.dp * cfg.microbatches)} per micro-batch${cfg.dp > 1 ? ` (the global batch: ${cfg.dp} replicas × ${cfg.microbatches} micro-batches)` : ''}` : undefined}
          />
        </div>
        <CheckboxField label="Recompute activations in backward" name="recompute" checked={cfg.recompute} onChange={(recompute) => set({ recompute })} hint="keeps only stage inputs; trades compute for memory" />
        <NumberField
          label="Memory budget (MiB)"
          name="memoryBudget"
          min={0}
          step={0.01}
          value={cfg.memoryBudget ?? 0}
          onChange={(v) => {
            const { memoryBudget: _none, ...rest } = cfg;
            setConfig(v === 0 ? rest : { ...rest, memoryBudget: v });
          }}
          error={errorFor('memoryBudget')}
          hint={cfg.memoryBudget === undefined ? 'per worker; 0: none' : 'per worker: a run whose planned peak passes it is refused, one that grows past it stops'}
        />
        <TextField<'all' | number[] | null>
          label="Swap activations to host memory (stages)"
          name="swap"
          value={cfg.swap === undefined ? '' : cfg.swap === 'all' ? 'all' : cfg.swap.join(',')}
          parse={(t) => (t.trim() === '' ? null : parseSwapText(t))}
          onChange={(swap) => {
            const { swap: _none, ...rest } = cfg;
            setConfig(swap === null ? rest : { ...rest, swap });
          }}
          error={errorFor('swap')}
          hint={`all, or stages 0–${runStages(cfg) - 1} separated by commas; empty: none (vDNN: a stash waits on the host between its forward and backward)`}
        />
        {(kind.update === 'flush' || cfg.offloadOptimizer) && (
          <CheckboxField
            label="Offload the optimizer (ZeRO-Offload)"
            name="offloadOptimizer"
            checked={cfg.offloadOptimizer ?? false}
            onChange={(offloadOptimizer) => set({ offloadOptimizer })}
            hint={errorFor('offloadOptimizer') ?? 'optimizer state in the worker’s memory, its step on the CPU: the device keeps weights and gradients'}
          />
        )}
        {/* Selective recomputation is the GPT's; shown elsewhere only to take it off (a link that set it). */}
        {(cfg.model === 'gpt' || cfg.recomputeAttention) && (
          <CheckboxField
            label="Recompute attention only (selective)"
            name="recomputeAttention"
            checked={cfg.recomputeAttention ?? false}
            onChange={(recomputeAttention) => set({ recomputeAttention })}
            hint={
              cfg.model !== 'gpt'
                ? 'the GPT’s only: this model has no attention'
                : cfg.recompute
                  ? 'the whole forward is recomputed already'
                  : 'keeps all but each block’s attention probabilities (T² per head), recomputed in the backward'
            }
          />
        )}
        <div className="row2">
          <SelectField<Partition>
            label="Cut stages by"
            name="partition"
            value={cfg.partition}
            options={PARTITIONS.map((p) => ({ value: p, label: PARTITION_LABELS[p] }))}
            onChange={(partition) => set(partition === 'cut' ? { partition, cut: cutNow(cfg) } : { partition, cut: undefined })}
            error={errorFor('partition')}
            hint="the Plan panel (Simulate) shows all three beside the measured cut, and sets a cut"
          />
          <NumberField
            label="Memory cap (auto)"
            name="memCap"
            integer
            min={0}
            value={cfg.memCap}
            onChange={(memCap) => set({ memCap })}
            error={errorFor('memCap')}
            disabled={!kind.fromStageCosts}
            hint={cfg.memCap === 0 ? `micro-batches per rank; 0: as many as ranks (${cfg.ranks}), 1F1B's memory` : 'micro-batches per rank the auto schedule may hold'}
          />
        </div>
        {cfg.partition === 'cut' && (
          <TextField<number[]>
            label="Blocks per stage (cut)"
            name="cut"
            value={cutText(cfg.cut ?? [])}
            parse={parseCutText}
            onChange={(cut) => set({ cut })}
            error={errorFor('cut')}
            hint={`${runStages(cfg)} entries summing to ${cfg.layers + 1} blocks, e.g. ${cutText(cutNow({ ...cfg, partition: 'flops', cut: undefined }))}`}
          />
        )}
      </fieldset>

      <fieldset disabled={disabled}>
        <legend>Training</legend>
        <div className="row2">
          <SelectField<OptimizerName>
            label="Optimizer"
            name="optimizer"
            value={cfg.optimizer}
            options={OPTIMIZERS.map((o) => ({ value: o, label: o === 'adamw' ? 'AdamW' : 'SGD' }))}
            onChange={(optimizer) => set({ optimizer })}
            error={errorFor('optimizer')}
          />
          <NumberField label="Learning rate" name="lr" min={0} step={0.001} value={cfg.lr} onChange={(lr) => set({ lr })} error={errorFor('lr')} />
        </div>
        <div className="row2">
          {cfg.optimizer === 'sgd' ? (
            <NumberField label="Momentum" name="momentum" min={0} max={1} step={0.05} value={cfg.momentum} onChange={(momentum) => set({ momentum })} error={errorFor('momentum')} />
          ) : (
            <NumberField label="Weight decay" name="weightDecay" min={0} step={0.001} value={cfg.weightDecay} onChange={(weightDecay) => set({ weightDecay })} error={errorFor('weightDecay')} />
          )}
          <SelectField<LrSchedule>
            label="LR schedule"
            name="lrSchedule"
            value={cfg.lrSchedule}
            options={LR_SCHEDULES.map((s) => ({ value: s, label: s }))}
            onChange={(lrSchedule) => set({ lrSchedule })}
            error={errorFor('lrSchedule')}
          />
        </div>
        <div className="row3">
          <NumberField label="Steps" name="steps" integer min={1} value={cfg.steps} onChange={(steps) => set({ steps })} error={errorFor('steps')} />
          <NumberField label="Seed" name="seed" integer min={0} value={cfg.seed} onChange={(seed) => set({ seed })} error={errorFor('seed')} />
          <NumberField label="Eval every" name="evalEvery" integer min={0} value={cfg.evalEvery} onChange={(evalEvery) => set({ evalEvery })} error={errorFor('evalEvery')} hint={runsAsStream(cfg.schedule) ? 'steps; a stream evaluates at its start and end only' : 'steps'} />
        </div>
      </fieldset>
    </form>
  );
}
