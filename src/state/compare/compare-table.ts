/**
 * Compare's side-by-side table as values: one row per schedule, its simulated figures at once and its measured
 * ones once measured (the last measured step, a stream's ÷ its steps), and the same rows as CSV with the
 * configuration they ran (the page's "Download the table (CSV)"), so a comparison leaves the tab.
 */
import type { RunConfig } from '../../config/run-config.ts';
import { makespan, runsAsStream, timelineStats, type RunScheduleName } from '../../schedule/index.ts';
import type { CompareSimulated } from './compare.ts';
import { computeOnly } from '../store/index.ts';
import type { GapStep } from '../store/index.ts';
import type { CompareMeasurement } from '../store/index.ts';

/** The last measured step's figures: its compute bubble and makespan, and the step with what follows the compute where collectives ran. */
export function lastStep(m: CompareMeasurement): { bubble: number; makespan: number; withCollectives: number | null } | null {
  if (!m.timeline) return null;
  const st = timelineStats(computeOnly(m.timeline));
  const collectives = m.timeline.intervals.some((iv) => iv.op === 'collective');
  return { bubble: st.bubble, makespan: st.makespan, withCollectives: collectives ? makespan(m.timeline) : null };
}

/** A figure of the last measured step; a stream's (one window of all its steps) ÷ its steps, to stand beside a step's. */
export function perStep(figure: number | null | undefined, name: RunScheduleName, steps: number): number | undefined {
  return figure == null ? undefined : runsAsStream(name) ? figure / steps : figure;
}

export interface CompareRow {
  name: RunScheduleName;
  virtual: number;
  status: CompareMeasurement['status'] | 'not measured' | 'cannot run';
  bubbleSimulated?: number;
  bubbleClosedForm?: number;
  peakMicrobatches?: number;
  bubbleMeasured?: number;
  makespanMs?: number;
  stepWithCollectivesMs?: number;
  /** What each effect adds to the closed-form bubble (fractions), in the order the Train view lists them: uneven stages, communication, ..., the shared device. */
  gap?: Pick<GapStep, 'id' | 'adds'>[];
  samplesPerSecond?: number;
  finalLoss?: number;
  /** Why it cannot run, or why its measurement failed. */
  problem?: string;
}

/** The row of one schedule (a stream's figures per step). */
export function compareRow(e: CompareSimulated, m: CompareMeasurement | undefined): CompareRow {
  const p = e.prediction;
  const last = m?.status === 'done' ? lastStep(m) : null;
  const steps = e.config.steps;
  const row: CompareRow = { name: e.name, virtual: e.config.virtual, status: m?.status ?? (e.problem ? 'cannot run' : 'not measured') };
  if (p) {
    row.bubbleSimulated = p.result.bubble;
    if (p.closed) row.bubbleClosedForm = p.closed.bubble;
    row.peakMicrobatches = Math.max(...p.result.memory.map((x) => x.peakMicrobatches));
  }
  if (last) {
    row.bubbleMeasured = last.bubble;
    row.makespanMs = perStep(last.makespan, e.name, steps);
    if (last.withCollectives !== null) row.stepWithCollectivesMs = perStep(last.withCollectives, e.name, steps);
  }
  if (m?.gap) row.gap = m.gap.steps.slice(1).map(({ id, adds }) => ({ id, adds }));
  if (m?.samplesPerSecond != null) row.samplesPerSecond = m.samplesPerSecond;
  if (m?.finalLoss != null) row.finalLoss = m.finalLoss;
  const problem = m?.error ?? e.problem;
  if (problem) row.problem = problem;
  return row;
}

/** The effects a gap can hold, as the Train view adds them (explain.ts); a schedule's row fills those its run had. */
const GAP_IDS: readonly GapStep['id'][] = ['stages', 'comm', 'blocks', 'device', 'allreduce'];

const HEADER = [
  'schedule', 'v', 'status', 'bubble_simulated', 'bubble_closed_form', 'peak_activations_microbatches', 'bubble_measured', 'makespan_ms', 'step_with_collectives_ms',
  ...GAP_IDS.map((id) => `gap_${id}_pp`), 'samples_per_second', 'final_loss', 'problem',
  'dataset', 'model', 'dp', 'tp', 'ranks', 'microbatches', 'batch_size', 'steps', 'seed',
];

/** One CSV field: numbers as they are, text quoted where it must be. */
function field(v: string | number | undefined): string {
  if (v === undefined) return '';
  if (typeof v === 'number') return Number.isFinite(v) ? String(v) : '';
  return /[",\n\r]/.test(v) ? `"${v.replace(/"/g, '""')}"` : v;
}

/** The rows as CSV, each with the configuration it is measured with (`configs`, by schedule: compare.ts measuredConfig): a header line, then a line per row. */
export function compareCsv(rows: readonly CompareRow[], configs: ReadonlyMap<RunScheduleName, RunConfig>): string {
  const lines = [HEADER.join(',')];
  for (const r of rows) {
    const c = configs.get(r.name);
    const gap = (id: GapStep['id']) => r.gap?.find((g) => g.id === id)?.adds;
    const values: (string | number | undefined)[] = [
      r.name, r.virtual, r.status, r.bubbleSimulated, r.bubbleClosedForm, r.peakMicrobatches, r.bubbleMeasured, r.makespanMs, r.stepWithCollectivesMs,
      ...GAP_IDS.map((id) => {
        const a = gap(id);
        return a === undefined ? undefined : 100 * a;
      }),
      r.samplesPerSecond, r.finalLoss, r.problem,
      c?.dataset, c?.model, c?.dp, c?.tp, c?.ranks, c?.microbatches, c?.batchSize, c?.steps, c?.seed,
    ];
    lines.push(values.map(field).join(','));
  }
  return `${lines.join('\n')}\n`;
}
