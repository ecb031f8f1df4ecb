/**
 * Plan a real model on N devices (src/plan/mesh-plan.ts): an analytic GPT and a device (a preset or typed
 * in), every dp × tp × pp, schedule, micro-batch size, the ZeRO stage (the least of 0–3 that fits) and recomputation (the kinds the
 * form allows), with sequence parallelism if asked; the top candidates as a table,
 * the same as `pipelab plan --model gpt`, and the winner's step drawn (its first replicas, up to 64 lanes: every replica plays the same step). It plans on
 * the button, not on each keystroke, in a Worker (mesh-plan-client.ts) so that the page stays responsive:
 * "Planning…" with the time so far and a Cancel button while it runs; pressing Plan again restarts it.
 * Its state is its own.
 */
import { useEffect, useMemo, useRef, useState } from 'react';
import { DEVICE_PRESET_NAMES, DEVICE_PRESETS, type DevicePreset } from '../../plan/device.ts';
import type { MeshPlan, MeshPlanRequest } from '../../plan/mesh-plan.ts';
import type { Recompute } from '../../plan/transformer.ts';
import { MeshPlanClient, type MeshPlanned } from '../../plan/mesh-plan-client.ts';
import { meshLayoutLabel, meshSavingLabel, meshScheduleLabel } from '../../plan/mesh-labels.ts';
import { CheckboxField, NumberField, SelectField } from '../controls/fields.tsx';
import { num, pct } from '../timeline/format.ts';
import { TimelinePanel } from '../timeline/TimelinePanel.tsx';

/** Largest mesh the page plans and draws (the CLI takes more). */
export const PAGE_MAX_DEVICES = 1024;
const TOP = 10;

interface Planned extends MeshPlanned {
  req: MeshPlanRequest;
}

/** The recomputation the planner may use: both kinds (selective first), Megatron SC'21's full only, or none. */
type RecomputeChoice = 'both' | 'full' | 'none';
const RECOMPUTE_CHOICES: { value: RecomputeChoice; label: string; modes?: Recompute[] }[] = [
  { value: 'both', label: 'where needed: selective, then full' },
  { value: 'full', label: 'where needed: full only (Megatron 2021)', modes: ['none', 'full'] },
  { value: 'none', label: 'never', modes: ['none'] },
];

/** Seconds, as the status line shows them. */
const seconds = (ms: number) => `${(ms / 1e3).toFixed(1)} s`;

function CandidatesTable({ plan }: { plan: MeshPlan }) {
  return (
    <div style={{ overflowX: 'auto' }}>
      <table className="numbers plan-table" data-testid="mesh-plan-candidates">
        <thead>
          <tr>
            <th scope="col">#</th>
            <th scope="col" title="data-parallel replicas × tensor-parallel workers per stage × pipeline stages">dp × tp × pp</th>
            <th scope="col">schedule</th>
            <th scope="col">b × m</th>
            <th scope="col">memory saving</th>
            <th scope="col">step (ms)</th>
            <th scope="col">bubble</th>
            <th scope="col" title="The step's part after the compute: the all-reduce not hidden behind it (with DualPipe, its copies' gradient sum too)">all-reduce share</th>
            <th scope="col">GB / device</th>
            <th scope="col">MFU</th>
          </tr>
        </thead>
        <tbody>
          {plan.candidates.slice(0, TOP).map((c, i) => (
            <tr key={i}>
              <th scope="row">{i + 1}</th>
              <td>{meshLayoutLabel(c)}</td>
              <td>{meshScheduleLabel(c)}</td>
              <td>{`${c.microBatch} × ${c.microbatches}`}</td>
              <td>{meshSavingLabel(c, '—')}</td>
              <td>{num(c.stepMs, 1)}</td>
              <td>{pct(c.bubble, 1)}</td>
              <td>{pct(c.allReduceShare, 1)}</td>
              <td>{(c.memoryBytes / 1e9).toFixed(1)}</td>
              <td>{pct(c.mfu, 1)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

export function MeshPlanPanel() {
  const [layers, setLayers] = useState(32);
  const [hidden, setHidden] = useState(4096);
  const [heads, setHeads] = useState(32);
  const [seq, setSeq] = useState(2048);
  const [vocab, setVocab] = useState(50257);
  const [devices, setDevices] = useState(64);
  const [perNode, setPerNode] = useState(8);
  const [globalBatch, setGlobalBatch] = useState(512);
  const [preset, setPreset] = useState<DevicePreset>('h100');
  const [memoryGB, setMemoryGB] = useState<number>(DEVICE_PRESETS.h100.memoryGB);
  const [recompute, setRecompute] = useState<RecomputeChoice>('both');
  const [sequenceParallel, setSequenceParallel] = useState(false);
  const [hostOptions, setHostOptions] = useState(false);
  const [planned, setPlanned] = useState<Planned | null>(null);
  const [problem, setProblem] = useState<string | null>(null);

  const [running, setRunning] = useState<{ startedAt: number } | null>(null);
  const [now, setNow] = useState(0);
  const [cancelledAfter, setCancelledAfter] = useState<number | null>(null);
  const client = useRef<MeshPlanClient | null>(null);
  const runId = useRef(0);

  useEffect(() => () => client.current?.dispose(), []);
  useEffect(() => {
    if (!running) return;
    setNow(performance.now());
    const timer = setInterval(() => setNow(performance.now()), 100);
    return () => clearInterval(timer);
  }, [running]);

  const run = async () => {
    const id = ++runId.current;
    const req: MeshPlanRequest = {
      model: { layers, hidden, heads, seq, vocab, bytesPerElement: 2 },
      device: { ...DEVICE_PRESETS[preset], devicesPerNode: perNode, memoryGB },
      devices,
      globalBatch,
      recompute: RECOMPUTE_CHOICES.find((c) => c.value === recompute)?.modes,
      sequenceParallel: sequenceParallel || undefined,
      hostOptions: hostOptions || undefined,
    };
    setRunning({ startedAt: performance.now() });
    setProblem(null);
    setCancelledAfter(null);
    try {
      const out = await (client.current ??= new MeshPlanClient()).start(req);
      if (id !== runId.current || out.cancelled) return;
      setPlanned({ req, plan: out.plan, best: out.best, tookMs: out.tookMs });
    } catch (e) {
      if (id !== runId.current) return;
      setPlanned(null);
      setProblem(e instanceof Error ? e.message : String(e));
    }
    if (id === runId.current) setRunning(null);
  };

  const cancel = () => {
    if (!running) return;
    runId.current++;
    client.current?.cancel();
    setCancelledAfter(performance.now() - running.startedAt);
    setRunning(null);
  };

  const best = planned?.plan.candidates[0];
  const title = useMemo(
    () => (best ? `Best: dp × tp × pp = ${meshLayoutLabel(best)}, ${meshScheduleLabel(best)}, micro-batch ${best.microBatch} × ${best.microbatches}` : 'Best candidate'),
    [best],
  );

  return (
    <section className="panel plan-panel" aria-labelledby="mesh-plan-title" data-testid="mesh-plan-panel" style={{ gridColumn: '1 / -1' }}>
      <details>
        <summary>
          <h2 id="mesh-plan-title" style={{ display: 'inline' }}>Plan a real model on N devices</h2>
        </summary>
        <p className="muted small">
          An analytic GPT (FLOPs per layer, Korthikanti et al.’s activation bytes, Adam’s 16 bytes per parameter) on N devices: every dp × tp × pp (Megatron’s tensor parallelism inside a node), schedule,
          micro-batch size, the ZeRO stage (the least of 0–3 that fits: ZeRO-2 and 3 shard gradients and weights, at the cost of more collectives) and recomputation (selective: each layer's attention core again, a few per cent of its FLOPs; full: its whole forward), ranked by the simulated step with the ring all-reduce. The same as <code>pipelab plan --model gpt</code>.
        </p>
        <div className="row2">
          <NumberField label="Layers" name="mesh.layers" integer min={1} max={4096} value={layers} onChange={setLayers} />
          <NumberField label="Hidden size" name="mesh.hidden" integer min={1} max={1 << 20} value={hidden} onChange={setHidden} />
        </div>
        <div className="row2">
          <NumberField label="Attention heads" name="mesh.heads" integer min={1} max={1 << 16} value={heads} onChange={setHeads} hint="must divide the hidden size" />
          <NumberField label="Sequence length" name="mesh.seq" integer min={1} max={1 << 22} value={seq} onChange={setSeq} />
        </div>
        <div className="row2">
          <NumberField label="Vocabulary" name="mesh.vocab" integer min={1} max={1 << 24} value={vocab} onChange={setVocab} />
          <NumberField label="Global batch (sequences)" name="mesh.globalBatch" integer min={1} max={1 << 20} value={globalBatch} onChange={setGlobalBatch} />
        </div>
        <div className="row2">
          <NumberField label="Devices (N)" name="mesh.devices" integer min={1} max={PAGE_MAX_DEVICES} value={devices} onChange={setDevices} />
          <NumberField label="Devices per node" name="mesh.perNode" integer min={1} max={1024} value={perNode} onChange={setPerNode} />
        </div>
        <div className="row2">
          <SelectField<DevicePreset>
            label="Device"
            name="mesh.device"
            value={preset}
            options={DEVICE_PRESET_NAMES.map((d) => ({ value: d, label: `${d} (${DEVICE_PRESETS[d].peakTflops} TFLOP/s bf16, ${DEVICE_PRESETS[d].memoryGB} GB)` }))}
            onChange={(d) => {
              setPreset(d);
              setMemoryGB(DEVICE_PRESETS[d].memoryGB);
            }}
          />
          <NumberField label="Memory per device (GB)" name="mesh.memoryGB" min={0.001} max={1e6} value={memoryGB} onChange={setMemoryGB} />
        </div>
        <div>
          <SelectField<RecomputeChoice> label="Recomputation" name="mesh.recompute" value={recompute} options={RECOMPUTE_CHOICES} onChange={setRecompute} hint="tried only where a layout does not fit without it" />
          <CheckboxField
            label="Sequence parallelism"
            name="mesh.sequenceParallel"
            checked={sequenceParallel}
            onChange={setSequenceParallel}
            hint="with tp > 1, LayerNorm and dropout activations split over the tp devices too (Korthikanti et al. 2022)"
          />
          <CheckboxField
            label="Offload and swapping over the host link"
            name="mesh.hostOptions"
            checked={hostOptions}
            onChange={setHostOptions}
            hint={`where a layout fits no other way: the optimizer in host memory (ZeRO-Offload), activations swapped (vDNN), over PCIe at ${DEVICE_PRESETS[preset].hostLinkGBps ?? '?'} GB/s; the fastest that fits is kept`}
          />
        </div>
        <button type="button" onClick={() => void run()} data-testid="mesh-plan-run">
          Plan
        </button>
        {running && (
          <>
            {' '}
            <button type="button" onClick={cancel} data-testid="mesh-plan-cancel">
              Cancel
            </button>
          </>
        )}
        <p className="muted small" role="status" data-testid="mesh-plan-status">
          {running
            ? `Planning… ${seconds(Math.max(0, now - running.startedAt))}`
            : cancelledAfter !== null
              ? `Planning cancelled after ${seconds(cancelledAfter)}.`
              : ''}
        </p>
        {problem && (
          <p className="config-problem" role="alert">
            {problem}
          </p>
        )}
        {planned && (
          <>
            <p className="muted small" data-testid="mesh-plan-summary">
              {planned.plan.evaluated} candidates searched in {(planned.tookMs / 1e3).toFixed(2)} s; {planned.plan.dropped} did not fit {planned.req.device.memoryGB} GB.
            </p>
            <CandidatesTable plan={planned.plan} />
            <TimelinePanel
              title={title}
              measured={null}
              simulated={planned.best.timeline}
              mode="simulated"
              testId="mesh-plan-timeline"
              replicasInMesh={planned.best.replicas}
              caption={
                <>
                  One step of the best candidate on {planned.req.devices} devices, all-reduce included
                  {(planned.plan.candidates[0]?.tp ?? 1) > 1
                    ? `; each lane is one pipeline stage's ${planned.plan.candidates[0].tp} tensor-parallel devices, which run in lock step (their all-reduces are inside each F and B)`
                    : ''}
                  {planned.best.drawnReplicas < planned.best.replicas
                    ? `; drawn: the first ${planned.best.drawnReplicas} of its ${planned.best.replicas} replicas (every replica plays the same step, and each ring runs across all ${planned.best.replicas})`
                    : ''}
                  ; zoom in with the wheel.
                </>
              }
            />
          </>
        )}
      </details>
    </section>
  );
}
