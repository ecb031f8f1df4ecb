/**
 * Plan the pipeline: a profile of the run configuration's model (the FLOPs
 * estimate, or measured by a profiling pass on the workers, or pasted JSON),
 * as a table with bars and a JSON export; the cuts by blocks, FLOPs and
 * measured time side by side; and the auto schedule within a memory cap beside
 * 1F1B, ZB-H1 and GPipe (src/plan). Its state is its own; only the cuts
 * table's "Use this cut" changes the run configuration (CutsTable.tsx).
 */
import { useMemo, useState } from 'react';
import { blockCosts } from '../../nn/model-spec.ts';
import { flopsProfile } from '../../plan/flops-profile.ts';
import { measureProfile, modelSpecOf } from '../../runtime/measure-profile.ts';
import { makePlan, type Plan } from '../../plan/plan.ts';
import { tpWorkerProfile } from '../../plan/profile-tp.ts';
import { profileFromJson, profileToJson, type Profile } from '../../plan/profile.ts';
import { checkProfileModel } from '../../plan/profile-model.ts';
import { splitsOf, type SplitView } from '../../plan/splits.ts';
import { runInBrowser } from '../../runtime/browser-run.ts';
import { isActive, usePipeLab } from '../../state/store/index.ts';
import { NumberField, SelectField } from '../controls/fields.tsx';
import { download } from '../exports/export-files.ts';
import { Bars } from './Bar.tsx';
import { CutsTable } from './CutsTable.tsx';
import { MeshPlanPanel } from './MeshPlanPanel.tsx';
import { bytes, num, pct } from '../timeline/format.ts';

type Source = 'flops' | 'measured' | 'pasted';

const SOURCES: { value: Source; label: string }[] = [
  { value: 'flops', label: 'FLOPs estimate' },
  { value: 'measured', label: 'Measured (profiling pass)' },
  { value: 'pasted', label: 'Pasted JSON' },
];

/** The cuts table's name for the profile's times: only a profiling pass (or a pasted profile of one) measured them. */
const PROFILE_NAMES: Record<Source, string> = { flops: 'the FLOPs estimate', measured: 'the profiling pass (measured)', pasted: 'the pasted profile' };

function ProfileTable({ profile }: { profile: Profile }) {
  const max = Math.max(...profile.blocks.map((b) => b.F + b.I + b.W));
  const unit = profile.unit === 'ms' ? 'ms' : 'units';
  return (
    <div className="table-scroll" tabIndex={0} role="region" aria-label="Profile table (scrolls sideways on narrow windows)">
    <table className="numbers plan-table" data-testid="plan-profile">
      <thead>
        <tr>
          <th scope="col">block</th>
          <th scope="col">F</th>
          <th scope="col">I</th>
          <th scope="col">W</th>
          <th scope="col">held</th>
          <th scope="col">comm after</th>
          <th scope="col">F + I + W ({unit})</th>
        </tr>
      </thead>
      <tbody>
        {profile.blocks.map((b, i) => (
          <tr key={i}>
            <th scope="row">{b.name}</th>
            <td>{num(b.F, 3)}</td>
            <td>{num(b.I, 3)}</td>
            <td>{num(b.W, 3)}</td>
            <td>{bytes(b.heldBytes)}</td>
            <td>{i < profile.comm.length ? num(profile.comm[i], 3) : '—'}</td>
            <td>
              <Bars bars={[{ value: b.F + b.I + b.W, label: `${b.name}: ${num(b.F + b.I + b.W, 3)} ${unit}` }]} max={max} />
            </td>
          </tr>
        ))}
      </tbody>
    </table>
    </div>
  );
}

function PlanTable({ plan }: { plan: Plan }) {
  const sim = plan.auto.simulation;
  const rows = [
    { name: `auto (${plan.auto.candidate})`, makespan: sim.makespan, bubble: sim.bubble, peak: Math.max(...sim.memory.map((m) => m.peakMicrobatches)), fits: true },
    ...plan.baselines.map((b) => ({ name: b.name, makespan: b.makespan, bubble: b.bubble, peak: b.peakMicrobatches, fits: b.fits })),
  ];
  return (
    <div className="table-scroll" tabIndex={0} role="region" aria-label="Schedules table (scrolls sideways on narrow windows)">
    <table className="numbers plan-table" data-testid="plan-schedules">
      <thead>
        <tr>
          <th scope="col">schedule</th>
          <th scope="col">makespan</th>
          <th scope="col">bubble</th>
          <th scope="col">peak activations</th>
          <th scope="col">fits the cap</th>
        </tr>
      </thead>
      <tbody>
        {rows.map((r) => (
          <tr key={r.name}>
            <th scope="row">{r.name}</th>
            <td>{num(r.makespan, 2)}</td>
            <td>{pct(r.bubble, 1)}</td>
            <td>{r.peak}</td>
            <td>{r.fits ? 'yes' : 'no'}</td>
          </tr>
        ))}
        {plan.predictions && (
          <>
            <tr>
              <th scope="row">auto, this machine (shared device)</th>
              <td>{num(plan.predictions.thisMachine.makespan, 2)}</td>
              <td>{pct(plan.predictions.thisMachine.bubble, 1)}</td>
              <td colSpan={2} />
            </tr>
            <tr>
              <th scope="row">{`auto, ${sim.dp && sim.dp.dp > 1 ? 'dp × ' : ''}p${plan.tp ? ' × tp' : ''} independent GPUs`}</th>
              <td>{num(plan.predictions.independent.makespan, 2)}</td>
              <td>{pct(plan.predictions.independent.bubble, 1)}</td>
              <td colSpan={2} />
            </tr>
          </>
        )}
      </tbody>
    </table>
    {sim.dp && sim.dp.dp > 1 && (
      <p className="muted small" data-testid="plan-mesh">
        {sim.dp.dp} replicas × {plan.partition.ranges.length} rank{plan.partition.ranges.length === 1 ? '' : 's'}: {plan.zero >= 2 ? 'reduce-scatters and all-gathers' : 'all-reduce'} per stage {sim.dp.allReduceTime.map((t) => num(t, 3)).join(', ')}, {pct(sim.dp.allReduceShare, 1)} of the step exposed (the ring fitted on the cluster).
      </p>
    )}
    {plan.noSharedPrediction && (
      <p className="muted small" data-testid="plan-no-shared">
        This machine is not predicted: {plan.noSharedPrediction}.
      </p>
    )}
    {plan.modelStateBytes && sim.dp && sim.dp.dp > 1 && (
      <p className="muted small" data-testid="plan-states">
        One worker’s weights, gradients and AdamW state (fp32) per stage: {plan.modelStateBytes.map((b) => bytes(b)).join(', ')}.
      </p>
    )}
    {plan.tp && (
      <p className="muted small" data-testid="plan-tp">
        {plan.tp.t} tp workers per stage, planned as one of them computes: its collectives per micro-batch, F {plan.tp.forward.map((t) => num(t, 3)).join(', ')} and B {plan.tp.backward.map((t) => num(t, 3)).join(', ')} per stage (the ring fitted on the cluster, none overlapped).
      </p>
    )}
    </div>
  );
}

type ZeroPlanChoice = '0' | '1' | '2' | '3' | '3a';
const ZERO_PLAN_OPTIONS: readonly { value: ZeroPlanChoice; label: string }[] = [
  { value: '0', label: 'None (all-reduce)' },
  { value: '1', label: 'ZeRO-1: optimizer state' },
  { value: '2', label: 'ZeRO-2: + gradients' },
  { value: '3', label: 'ZeRO-3: + weights, reshard step' },
  { value: '3a', label: 'ZeRO-3: + weights, reshard microbatch' },
];

export function PlanPanel() {
  const config = usePipeLab((s) => s.config);
  const busy = usePipeLab((s) => isActive(s.run.status) || s.session !== 'idle');
  const [source, setSource] = useState<Source>('flops');
  const [measured, setMeasured] = useState<Profile | null>(null);
  const [measuring, setMeasuring] = useState(false);
  const [pasted, setPasted] = useState('');
  const [ranks, setRanks] = useState(config.ranks);
  const [microbatches, setMicrobatches] = useState(config.microbatches);
  const [cap, setCap] = useState(config.ranks);
  const [dp, setDp] = useState(1);
  const [tp, setTp] = useState(1);
  const [zero, setZero] = useState<ZeroPlanChoice>('0');
  const [problem, setProblem] = useState<string | null>(null);

  const spec = useMemo(() => {
    try {
      return modelSpecOf(config);
    } catch {
      return null;
    }
  }, [config]);

  const outcome = useMemo((): { profile: Profile | null; error: string | null } => {
    try {
      if (source === 'measured') return { profile: measured, error: measured ? null : 'Not measured yet: press “Profile this model”.' };
      if (source === 'pasted') {
        if (!pasted.trim()) return { profile: null, error: 'Paste a profile (JSON) above.' };
        const p = profileFromJson(pasted);
        // A profile that names its model (train.py --profile, the profiling pass) must be of this one.
        if (p.model && spec) checkProfileModel(p, spec);
        return { profile: p, error: null };
      }
      if (!spec) return { profile: null, error: 'The run configuration is not valid.' };
      return { profile: flopsProfile(spec, Math.max(1, Math.floor(config.batchSize / config.microbatches))), error: null };
    } catch (e) {
      return { profile: null, error: e instanceof Error ? e.message : String(e) };
    }
  }, [source, measured, pasted, spec, config]);

  const planned = useMemo((): { splits: SplitView[] | null; plan: Plan | null; error: string | null } => {
    const profile = outcome.profile;
    if (!profile) return { splits: null, plan: null, error: null };
    try {
      const flops = spec && spec.blocks.length === profile.blocks.length ? blockCosts(spec) : profile.blocks.map((b) => b.F);
      // With tp the cuts are made for one tp worker (its pieces' times and collectives).
      const splits = splitsOf(tpWorkerProfile(profile, tp), flops, ranks);
      const stage = dp > 1 ? (Number(zero[0]) as 0 | 1 | 2 | 3) : 0;
      const plan = makePlan({ profile, ranks, microbatches, cap: { microbatches: cap }, dp, tp, zero: stage, reshard: zero === '3a' ? 'microbatch' : 'step' });
      return { splits, plan, error: null };
    } catch (e) {
      return { splits: null, plan: null, error: e instanceof Error ? e.message : String(e) };
    }
  }, [outcome.profile, spec, ranks, microbatches, cap, dp, tp, zero]);

  const measure = async () => {
    setMeasuring(true);
    setProblem(null);
    try {
      setMeasured(await measureProfile(config, (c) => runInBrowser(c, {})));
      setSource('measured');
    } catch (e) {
      setProblem(e instanceof Error ? e.message : String(e));
    } finally {
      setMeasuring(false);
    }
  };

  const profile = outcome.profile;
  return (
    <>
    <section className="panel plan-panel" aria-labelledby="plan-title" data-testid="plan-panel" style={{ gridColumn: '1 / -1' }}>
      <details>
      <summary>
        <h2 id="plan-title" style={{ display: 'inline' }}>Plan: where to cut, and a schedule that fits memory</h2>
      </summary>
      <div className="row2">
        <SelectField<Source> label="Profile source" name="plan.source" value={source} options={SOURCES} onChange={setSource} hint="per-block F, I, W times, held bytes, comm" />
        <div className="field">
          <button type="button" onClick={measure} disabled={measuring || busy || !spec} data-testid="plan-measure">
            {measuring ? 'Profiling…' : 'Profile this model'}
          </button>
          <p className="field-hint">a short ZB-H1 run, one block per rank on one device each (whole blocks: the plan adds dp and tp), one replica’s micro-batch</p>
        </div>
      </div>
      {source === 'pasted' && (
        <div className="field">
          <label htmlFor="plan-pasted">Profile JSON</label>
          <textarea id="plan-pasted" name="plan.pasted" rows={5} value={pasted} onChange={(e) => setPasted(e.target.value)} spellCheck={false} />
        </div>
      )}
      <div className="row2">
        <NumberField label="Ranks to plan for" name="plan.ranks" integer min={1} max={1024} value={ranks} onChange={setRanks} />
        <NumberField label="Micro-batches to plan for" name="plan.microbatches" integer min={1} max={4096} value={microbatches} onChange={setMicrobatches} />
      </div>
      <div className="row2">
        <NumberField label="Memory cap (micro-batches per rank)" name="plan.cap" integer min={1} max={4096} value={cap} onChange={setCap} hint="live activations a rank may hold; 1F1B needs as many as ranks" />
        <NumberField
          label="Data-parallel replicas to plan for"
          name="plan.dp"
          integer
          min={1}
          max={4096}
          value={dp}
          onChange={setDp}
          hint={
            <>
              above 1: each stage's all-reduce from a profile taken with <code className="flag">train.py --profile</code> at dp ≥ 2
            </>
          }
        />
      </div>
      <div className="row2">
        <SelectField<ZeroPlanChoice>
          label="ZeRO stage to plan for"
          name="plan.zero"
          value={zero}
          options={ZERO_PLAN_OPTIONS}
          onChange={setZero}
          disabled={dp === 1}
          hint="with replicas, on the cluster's fitted ring; ZeRO-3 gathers the weights once per step or before every action"
        />
        <NumberField
          label="Tensor-parallel workers to plan for"
          name="plan.tp"
          integer
          min={1}
          max={64}
          value={tp}
          onChange={setTp}
          hint={
            <>
              above 1: one tp worker's pieces and collectives, from a profile taken with <code className="flag">train.py --profile</code> at that tp
            </>
          }
        />
      </div>
      {(problem ?? outcome.error ?? planned.error) && (
        <p className="config-problem" role="alert">
          {problem ?? outcome.error ?? planned.error}
        </p>
      )}
      {profile && (
        <>
          <p className="muted small">{profile.source || 'profile'}</p>
          <ProfileTable profile={profile} />
          <button type="button" onClick={() => download({ name: 'pipelab-profile.json', type: 'application/json', data: profileToJson(profile) })}>
            Export profile (JSON)
          </button>
        </>
      )}
      {planned.splits && profile && <CutsTable splits={planned.splits} config={config} plannedStages={ranks} profileBlocks={profile.blocks.length} profiling={measuring} profileName={PROFILE_NAMES[source]} />}
      {planned.plan && <PlanTable plan={planned.plan} />}
      </details>
    </section>
    <MeshPlanPanel />
    </>
  );
}
