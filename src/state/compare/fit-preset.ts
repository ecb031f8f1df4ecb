/**
 * The Compare preset "Make it fit": a GPT whose default run (GPipe, every micro-batch's activations held at once)
 * a 2 MiB budget per worker refuses, and what the budget's refusal offers, each run and measured: recomputation,
 * ZeRO-3 over two replicas, activation swapping and optimizer offload. Each runs without the budget so that every
 * one is measured; beside it the budget's own verdict on its plan (config/memory-budget.ts). The figures: the most
 * any worker's device held (by kind, and in all against the budget), the host's share, the step time and the
 * final loss; a sentence computed from them says what wins here.
 */
import { defaultRunConfig, validateRunConfig, withDataset, type RunConfig } from '../../config/run-config.ts';
import { budgetRefusal, MiB, PEAK_KINDS, worstPeak, type BytesByKind } from '../../config/memory-budget.ts';
import { planKinds, type RunReport } from '../../runtime/report/index.ts';

/** The budget the preset's model passes: MiB per worker. */
export const FIT_PRESET_BUDGET_MIB = 2;

export interface FitShape {
  key: string;
  /** The run as measured (no budget, so that it runs). */
  config: RunConfig;
  /** The budget's planned peak for it, bytes, and whether the budget admits it. */
  planned: number;
  admitted: boolean;
}

/** The five runs: as is, and each of the four ways to fit; each passes validateRunConfig. */
export function fitShapes(steps = 2): FitShape[] {
  const base: RunConfig = {
    ...withDataset(defaultRunConfig(), 'names'),
    model: 'gpt',
    layers: 3,
    heads: 2,
    width: 32,
    blockSize: 16,
    batchSize: 32,
    microbatches: 8,
    ranks: 2,
    schedule: 'gpipe',
    optimizer: 'adamw',
    lr: 0.01,
    steps,
    evalEvery: 0,
  };
  const ways: [string, Partial<RunConfig>][] = [
    ['as is', {}],
    ['recomputation', { recompute: true }],
    ['ZeRO-3 (dp = 2)', { dp: 2, zero: 3 }],
    ['swapping', { swap: 'all' }],
    ['optimizer offload', { offloadOptimizer: true }],
  ];
  return ways.map(([key, change]) => {
    const config: RunConfig = { ...base, ...change };
    validateRunConfig(config);
    return { key, config, planned: worstPeak(config).total, admitted: budgetRefusal({ ...config, memoryBudget: FIT_PRESET_BUDGET_MIB }) === null };
  });
}

/** One run's measured figures: the device bytes of the worker that held the most (by kind and in all), its host's share, step ms, final loss. */
export interface FitFigures extends BytesByKind {
  peak: number;
  host: number;
  stepMs: number;
  loss: number;
}

export function fitFigures(report: RunReport): FitFigures {
  // The allocator's count (nn/memory-ledger.ts): the worker whose steady-state high-water mark is highest, its kinds then.
  const counted = (report.heldBytesPerWorker ?? []).flatMap((h) => (h.measured ? [h.measured] : []));
  const worst = counted.reduce<(typeof counted)[number] | null>((a, m) => (a === null || m.peak > a.peak ? m : a), null);
  const by = worst ? planKinds(worst.byKind) : (Object.fromEntries(PEAK_KINDS.map((k) => [k, 0])) as BytesByKind);
  return {
    ...by,
    peak: worst ? worst.peak : 0,
    host: report.hostBytesPerWorker ? Math.max(0, ...report.hostBytesPerWorker) : 0,
    stepMs: report.makespanMs.measured,
    loss: report.losses[report.losses.length - 1] ?? NaN,
  };
}

/** What the measured rows say (as is first): which ways fit the budget, the fastest of them, and whether the losses agree. Null until every row is measured. */
export function fitSentence(rows: readonly { key: string; f: FitFigures }[], budgetBytes = FIT_PRESET_BUDGET_MIB * MiB): string | null {
  if (rows.length < 2) return null;
  const [first, ...ways] = rows;
  const kib = (b: number) => `${(b / 1024).toFixed(0)} KiB`;
  const fit = ways.filter((r) => r.f.peak <= budgetBytes).sort((a, b) => a.f.stepMs - b.f.stepMs);
  const over = ways.filter((r) => r.f.peak > budgetBytes);
  const spread = Math.max(...rows.map((r) => Math.abs(r.f.loss - first.f.loss) / Math.abs(first.f.loss)));
  const opening = `As is, a worker's device held ${kib(first.f.peak)} against the budget of ${kib(budgetBytes)}. `;
  const verdict =
    fit.length === 0
      ? 'None of the four ways brought it under the budget here. '
      : `${fit[0].key} wins here: it fits (${kib(fit[0].f.peak)}) and its step took ${fit[0].f.stepMs.toFixed(1)} ms (${(fit[0].f.stepMs / first.f.stepMs).toFixed(2)}× as is)` +
        (fit.length > 1 ? `; ${fit.slice(1).map((r) => `${r.key} fits too (${kib(r.f.peak)}, ${r.f.stepMs.toFixed(1)} ms)`).join('; ')}` : '') +
        '. ';
  const missed = over.length > 0 ? `${over.map((r) => `${r.key} stays over (${kib(r.f.peak)})`).join('; ')}. ` : '';
  return `${opening}${verdict}${missed}The final losses agree to ${spread.toExponential(1)} (relative): the same training.`;
}
