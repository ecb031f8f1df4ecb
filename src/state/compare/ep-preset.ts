/**
 * The Compare preset "Experts across workers": one MoE GPT on the same 4 workers and the same micro-batches three
 * ways — 2 replicas × 2 pipeline ranks (dp, every worker holding every expert, 1F1B), 2 expert-parallel workers × 2
 * ranks (ep, each holding half the experts, 1F1B), and the same ep under DualPipe — each measured on the workers:
 * the step, the all-to-alls' share of it read off the run's `ep-all-to-all` intervals beside the simulator's share
 * (the simulator fed with the run's own op times and the α–β line fitted to its all-to-alls, report-ep.ts), the
 * final loss (the same training: a dp replica's micro-batches are the ep run's, report.ts' equality tests), and a
 * sentence computed from them.
 */
import { defaultRunConfig, validateRunConfig, withDataset, type RunConfig } from '../../config/run-config.ts';
import { allToAllShare, type RunReport } from '../../runtime/report/index.ts';

export const EP_PRESET_WORKERS = 4;

export interface EpShape {
  key: string;
  dp: number;
  ep: number;
  ranks: number;
  config: RunConfig;
}

/** The three runs; each passes validateRunConfig. dp's replicas take half the micro-batches each, so every run trains on the same ones. */
export function epShapes(steps = 2): EpShape[] {
  const base: RunConfig = {
    ...withDataset(defaultRunConfig(), 'names'),
    model: 'gpt',
    layers: 2,
    heads: 2,
    width: 16,
    blockSize: 16,
    batchSize: 16,
    microbatches: 8,
    ranks: 2,
    experts: 4,
    topK: 2,
    auxLossWeight: 0.01,
    schedule: '1f1b',
    virtual: 1,
    optimizer: 'adamw',
    lr: 0.01,
    steps,
    evalEvery: 0,
  };
  const shapes: EpShape[] = [
    { key: 'dp 2 × pp 2, 1F1B', dp: 2, ep: 1, ranks: 2, config: { ...base, dp: 2, microbatches: base.microbatches / 2 } },
    { key: 'ep 2 × pp 2, 1F1B', dp: 1, ep: 2, ranks: 2, config: { ...base, ep: 2 } },
    { key: 'ep 2 × pp 2, DualPipe', dp: 1, ep: 2, ranks: 2, config: { ...base, ep: 2, schedule: 'dualpipe' } },
  ];
  for (const s of shapes) validateRunConfig(s.config);
  return shapes;
}

/** One run's figures: step (first start to last end, collectives included), the all-to-alls' share measured and simulated, final loss. */
export interface EpRunFigures {
  stepMs: number;
  /** The simulator's step with the run's own times; and with the all-to-alls overlapped with compute as DualPipe's pairs hide them on a GPU (not in the tab). */
  simStepMs: number;
  simOverlapStepMs: number;
  /** Over the workers, the mean time in `ep-all-to-all` intervals over the step: measured (the last step's timeline, the mean of the steps when reported) and simulated. */
  a2aShare: number;
  /** Measured, the rounds themselves: each round at its least-waiting member's time (the others also waited for their peers' compute); what the simulator prices. */
  a2aOwnShare: number;
  simA2aShare: number;
  loss: number;
}

export function epRunFigures(report: RunReport): EpRunFigures {
  const ep = report.expertParallel;
  const dp = report.allReduce;
  const measured = allToAllShare(report.timeline);
  return {
    stepMs: ep?.stepMs ?? dp?.stepMs ?? measured.stepMs,
    simStepMs: ep?.simulated?.stepMs ?? dp?.simulated?.stepMs ?? report.makespanMs.simulated,
    simOverlapStepMs: ep?.simulated?.overlappedStepMs ?? dp?.simulated?.stepMs ?? report.makespanMs.simulated,
    a2aShare: ep?.share ?? measured.share,
    a2aOwnShare: ep?.ownShare ?? measured.share,
    simA2aShare: ep?.simulated?.share ?? allToAllShare(report.simulatedTimeline).share,
    loss: report.losses[report.losses.length - 1] ?? NaN,
  };
}

const pct = (x: number) => `${(100 * x).toFixed(1)}%`;

/** What the measured rows say (in epShapes' order: dp, ep under 1F1B, ep under DualPipe). Null until all three are measured. */
export function epSentence(rows: readonly { key: string; f: EpRunFigures }[]): string | null {
  if (rows.length < 3) return null;
  const [dp, ep, dual] = rows;
  const ratio = ep.f.stepMs / dp.f.stepMs;
  const spread = Math.max(...rows.map((r) => Math.abs(r.f.loss - dp.f.loss) / Math.abs(dp.f.loss)));
  const first =
    `At ${EP_PRESET_WORKERS} workers, ${ep.key} took ${ep.f.stepMs.toFixed(1)} ms a step against ${dp.f.stepMs.toFixed(1)} ms for ${dp.key} ` +
    `(${ratio.toFixed(2)}×, ${ratio > 1 ? 'slower' : 'faster'}); its all-to-alls took ${pct(ep.f.a2aShare)} of the step, the rounds themselves ${pct(ep.f.a2aOwnShare)} (the rest waiting for the other ep worker's compute), the simulator with the run's times ${pct(ep.f.simA2aShare)}.`;
  const hid = dual.f.a2aShare < 0.9 * ep.f.a2aShare;
  const second =
    ` Under DualPipe the step took ${dual.f.stepMs.toFixed(1)} ms (${(dual.f.stepMs / ep.f.stepMs).toFixed(2)}× 1F1B's), the all-to-alls ${pct(dual.f.a2aShare)} of it (the rounds themselves ${pct(dual.f.a2aOwnShare)}, simulated ${pct(dual.f.simA2aShare)}): ` +
    (hid ? 'a smaller share than under 1F1B.' : "no smaller a share than under 1F1B: the tab's workers run one action at a time, so DualPipe's pairs do not hide one micro-batch's all-to-all under another's compute here.") +
    ` With its pairs overlapped, as on a GPU that runs a forward and a backward chunk at once, the simulator gives ${dual.f.simOverlapStepMs.toFixed(1)} ms against ${dual.f.simStepMs.toFixed(1)} ms played after the compute.`;
  return `${first}${second} The final losses agree to ${spread.toExponential(1)} (relative): the same training.`;
}
