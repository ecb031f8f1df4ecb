/**
 * The memory suite (issue 52): real runs on the page's workers, each worker's measured steady-state peak by kind
 * (its allocator's count: nn/memory-ledger.ts) and the part of it the formula counts (all but staging and the
 * uniform ring: held-bytes.ts comparable) beside the formula the page and the planner use (memory-budget.ts
 * plannedPeaks, the report's formula.peak), per schedule and ZeRO stage; what the count cannot see (the driver's own allocations, its
 * alignment, the browser's buffers) is the suite's note in bench/RESULTS.md.
 */
import type { ScheduleBenchCase, ScheduleBenchRow } from './schedules-suite.ts';

/** Quick: the pipeline schedules at p = 2 and ZeRO 0–3 at dp = 2 on the char-MLP; full: more schedules, dp = 4 and the GPT. */
export function memoryGrid(quick: boolean): ScheduleBenchCase[] {
  const p2 = { ranks: 2, microbatches: 4 };
  const grid: ScheduleBenchCase[] = [
    { schedule: 'gpipe', ...p2 },
    { schedule: '1f1b', ...p2 },
    { schedule: 'zb-h1', ...p2 },
    ...([0, 1, 2, 3] as const).map((zero): ScheduleBenchCase => ({ schedule: '1f1b', ranks: 1, microbatches: 2, dp: 2, zero, layers: 2 })),
  ];
  if (quick) return grid;
  grid.push(
    { schedule: 'interleaved-1f1b', ...p2, virtual: 2 },
    { schedule: 'zb-v', ...p2, virtual: 2 },
    { schedule: 'dualpipe', ...p2 },
    { schedule: 'dualpipe-v', ...p2, virtual: 2 },
    { schedule: 'pipedream-2bw', ...p2 },
    { schedule: '1f1b', ...p2, recompute: true },
    { schedule: '1f1b', ...p2, model: 'gpt' },
    { schedule: '1f1b', ranks: 1, microbatches: 2, dp: 4, zero: 3, layers: 2 },
    ...([0, 1, 2, 3] as const).map((zero): ScheduleBenchCase => ({ schedule: '1f1b', ranks: 1, microbatches: 2, dp: 4, zero, layers: 2, model: 'gpt' })),
  );
  return grid;
}

/** One line a worker: what ran, its measured peak, the formula's, and the peak's kinds. */
export function memoryLines(r: ScheduleBenchRow): string[] {
  const kib = (b: number) => `${(b / 1024).toFixed(1)} KiB`;
  return (r.memory ?? []).map((w) => {
    const k = w.byKind;
    return `${r.model} ${r.schedule} p=${r.p}${r.mesh ? ` dp=${r.mesh.dp} ZeRO-${r.mesh.zero}` : ''} worker ${w.worker}: peak ${kib(w.peak)}, counted ${kib(w.comparable)} (formula ${kib(w.formula)}, ${((100 * w.comparable) / w.formula - 100).toFixed(1)}%): weights ${kib(k.weights + k.gathered)}, grads ${kib(k.grads)}, optimizer ${kib(k.optimizer)}, stash ${kib(k.stash)}, temporaries ${kib(k.temp)}, staging ${kib(k.staging)}, uniform ring ${kib(k.uniforms)}; pooled ${kib(w.pooled)}`;
  });
}
