/**
 * "What wins here": the Train configuration's model under every compared
 * schedule, swept over the number of micro-batches m at a fixed global batch
 * (each micro-batch batch / m rows), each played by the simulator with the
 * model's own stage costs (FLOPs per stage, activation bytes held per
 * micro-batch: plan/flops-profile.ts, as `auto` plans from them), under an
 * optional memory cap on the activations a rank holds. Per m: each schedule's
 * step (simulated makespan), bubble and peak activation bytes, and the fastest
 * schedule that fits — the winner. Answers "does zero-bubble beat interleaved
 * at my sizes?" for this model; the measured winner at the current m comes from
 * Compare's measurements beside it. PipeDream and PipeDream-2BW never flush: their
 * step is the stream's steady state (two steps' stream less one, the planner's
 * price: plan/plan-schedules.ts streamSteadyStep), no fill or drain of its own.
 */
import { withoutCut, type RunConfig } from '../../config/run-config.ts';
import { stageCut } from '../../config/run-limits.ts';
import { costModelOf } from '../../plan/plan.ts';
import { flopsProfile } from '../../plan/flops-profile.ts';
import { runsAsStream, scheduleKind, simulate, type RunScheduleName } from '../../schedule/index.ts';
import { streamSteadyStep } from '../../plan/plan-schedules.ts';
import { compareVirtual } from './compare.ts';

export interface SweepPoint {
  schedule: RunScheduleName;
  m: number;
  /** Simulated step (FLOP-time units of the model's costs), its bubble, and the most activation bytes a rank held. */
  step: number;
  bubble: number;
  peakBytes: number;
  fits: boolean;
}

export interface Sweep {
  ms: number[];
  points: SweepPoint[];
  /** Per m (same order as `ms`): the fastest schedule that fits, or null when none does. */
  winners: (RunScheduleName | null)[];
  /** Schedules skipped at some m, and why (their rules: e.g. m divisible by p). */
  skipped: { schedule: RunScheduleName; m: number; why: string }[];
}

/** The m values swept: multiples of p up to 8p that divide the global batch (at least one row a micro-batch), and the current m. */
export function sweepMicrobatches(cfg: Pick<RunConfig, 'ranks' | 'batchSize' | 'microbatches' | 'dp'>): number[] {
  const perReplica = cfg.batchSize / Math.max(1, cfg.dp);
  const out = new Set<number>([cfg.microbatches]);
  for (const k of [1, 2, 3, 4, 6, 8]) {
    const m = k * cfg.ranks;
    if (m <= perReplica && Number.isInteger(perReplica / m)) out.add(m);
  }
  return [...out].sort((a, b) => a - b);
}

/**
 * The sweep for `base`'s model over `names` (each at its stages per rank for `virtual`), at `ms`, with
 * `capBytes` the most activation bytes a rank may hold (0: no cap).
 */
export function whatWins(base: RunConfig, names: readonly RunScheduleName[], virtual: number, ms: readonly number[], capBytes = 0): Sweep {
  const points: SweepPoint[] = [];
  const skipped: Sweep['skipped'] = [];
  const perReplica = base.batchSize / Math.max(1, base.dp);
  const maxV = Math.max(1, ...names.map((n) => compareVirtual(n, virtual)));
  const layers = Math.max(base.layers, base.ranks * maxV - 1);
  for (const name of names) {
    const kind = scheduleKind(name);
    const v = compareVirtual(name, virtual);
    const cfg = withoutCut({ ...base, layers, schedule: name, virtual: v });
    const { spec, stageBlocks } = stageCut(cfg);
    for (const m of ms) {
      try {
        kind.validateParams(cfg.ranks, m, v);
      } catch (e) {
        skipped.push({ schedule: name, m, why: e instanceof Error ? e.message : String(e) });
        continue;
      }
      const rows = Math.max(1, Math.round(perReplica / m));
      const costs = costModelOf(flopsProfile(spec, rows), stageBlocks);
      const one = kind.generate(cfg.ranks, m, v);
      const r = simulate(one, costs);
      // A stream holds 1F1B's activations whatever its length: one step's play gives its peak.
      const played = runsAsStream(name) ? streamSteadyStep(kind, one, costs) : r;
      const peakBytes = Math.max(0, ...r.memory.map((x) => x.peakBytes));
      points.push({ schedule: name, m, step: played.makespan, bubble: played.bubble, peakBytes, fits: capBytes <= 0 || peakBytes <= capBytes });
    }
  }
  const winners = ms.map((m) => {
    const fit = points.filter((p) => p.m === m && p.fits);
    return fit.length ? fit.reduce((a, b) => (b.step < a.step ? b : a)).schedule : null;
  });
  return { ms: [...ms], points, winners, skipped };
}

/** A sentence read off the sweep: who wins at the smallest and the largest m, and where the winner changes. */
export function sweepSentence(s: Sweep, label: (n: RunScheduleName) => string): string {
  const parts: string[] = [];
  let prev: RunScheduleName | null | undefined;
  s.ms.forEach((m, i) => {
    const w = s.winners[i];
    if (w !== prev) parts.push(`${w ? label(w) : 'nothing fits'} from m = ${m}`);
    prev = w;
  });
  return parts.length ? `Simulated with this model's costs: ${parts.join(', then ')}.` : 'No schedule could be simulated at these sizes.';
}

/** What measuredWinner reads of a Compare measurement (state/store/store.ts CompareMeasurement). */
interface MeasuredStep {
  status: string;
  makespanMs: number | null;
  stepMs: number | null;
}

/**
 * The fastest measured schedule (mean step time over its measured steps, with what follows the compute: the replicas'
 * all-reduce, DualPipe's sum over its copies; a stream's, its one window ÷ its `steps`), or null before any measurement.
 */
export function measuredWinner(measurements: Readonly<Record<string, MeasuredStep | undefined>>, names: readonly RunScheduleName[], steps: number): { name: RunScheduleName; ms: number } | null {
  let best: { name: RunScheduleName; ms: number } | null = null;
  for (const n of names) {
    const m = measurements[n];
    const step = m?.status === 'done' ? (m.stepMs ?? m.makespanMs) : null;
    if (step === null) continue;
    const perStep = runsAsStream(n) ? step / steps : step;
    if (!best || perStep < best.ms) best = { name: n, ms: perStep };
  }
  return best;
}
