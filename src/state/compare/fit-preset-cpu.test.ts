/**
 * The "Make it fit" preset on the float64 CPU host (its runs as the page measures them, in-process): the budget
 * refuses the model as is and admits what its plan says fits; measured, as is passes the budget and recomputation
 * and swapping bring the device under it, offload moves the optimizer state to the host, ZeRO-3 shards the model
 * states; every run trains the same numbers; the sentence names the fastest run that fits, read off the figures.
 */
import { describe, expect, it } from 'vitest';
import { CpuBackend } from '../../nn/cpu-backend.ts';
import { runPipeline } from '../../runtime/coordinator.ts';
import { InProcessRankHost } from '../../runtime/executor/in-process-host.ts';
import { ConfigError } from '../../util/errors.ts';
import { FIT_PRESET_BUDGET_MIB, fitFigures, fitSentence, fitShapes, type FitFigures } from './fit-preset.ts';

const budget = FIT_PRESET_BUDGET_MIB * 1024 * 1024;

describe('Make it fit', () => {
  const shapes = fitShapes(2);

  it('the budget refuses the model as is, naming what would fit, before any worker starts', async () => {
    expect(shapes.map((s) => [s.key, s.admitted])).toEqual([
      ['as is', false],
      ['recomputation', true],
      ['ZeRO-3 (dp = 2)', true],
      ['swapping', true],
      ['optimizer offload', false],
    ]);
    let started = 0;
    const run = runPipeline({ ...shapes[0].config, memoryBudget: FIT_PRESET_BUDGET_MIB }, { hostFactory: (w) => (started++, new InProcessRankHost(w, new CpuBackend())) });
    await expect(run).rejects.toThrow(ConfigError);
    await expect(run).rejects.toThrow(/It would fit with .*recomputation \(recompute = true\): .*activation swapping \(swap = all\): /);
    expect(started).toBe(0);
  });

  it('each way measured: device peak against the budget, the host’s share, the same losses, and the sentence from the numbers', async () => {
    const rows: { key: string; f: FitFigures }[] = [];
    for (const s of shapes) {
      const report = await runPipeline(s.config, { hostFactory: (w) => new InProcessRankHost(w, new CpuBackend()), recvTimeoutMs: 10000 });
      rows.push({ key: s.key, f: fitFigures(report) });
    }
    const by = Object.fromEntries(rows.map((r) => [r.key, r.f]));
    expect(by['as is'].peak).toBeGreaterThan(budget);
    expect(by['recomputation'].peak).toBeLessThanOrEqual(budget);
    expect(by['swapping'].peak).toBeLessThanOrEqual(budget);
    expect(by['swapping'].host).toBeGreaterThan(0);
    expect(by['optimizer offload'].optimizer).toBe(0);
    expect(by['optimizer offload'].host).toBe(by['as is'].optimizer);
    expect(by['ZeRO-3 (dp = 2)'].weights).toBeLessThan(by['as is'].weights);
    // The measured peak never passes the plan the budget judged.
    shapes.forEach((s, i) => expect(rows[i].f.peak).toBeLessThanOrEqual(s.planned));
    for (const r of rows) expect(Math.abs(r.f.loss - by['as is'].loss) / by['as is'].loss).toBeLessThan(1e-12);
    const fitting = rows.slice(1).filter((r) => r.f.peak <= budget).sort((a, b) => a.f.stepMs - b.f.stepMs);
    expect(fitSentence(rows)).toMatch(new RegExp(`^As is, a worker's device held \\d+ KiB against the budget of ${budget / 1024} KiB\\. ${fitting[0].key.replace(/[()]/g, '\\$&')} wins here: it fits`));
  });

  it('the sentence, on figures given by hand', () => {
    const f = (peak: number, stepMs: number, loss = 2): FitFigures => ({ weights: 0, grads: 0, optimizer: 0, stash: 0, transient: 0, peak, host: 0, stepMs, loss });
    const s = fitSentence([
      { key: 'as is', f: f(2048 * 1024, 10) },
      { key: 'a', f: f(1000 * 1024, 14) },
      { key: 'b', f: f(900 * 1024, 12) },
      { key: 'c', f: f(1500 * 1024, 11, 2.000001) },
    ], 1024 * 1024);
    expect(s).toBe(
      "As is, a worker's device held 2048 KiB against the budget of 1024 KiB. b wins here: it fits (900 KiB) and its step took 12.0 ms (1.20× as is); a fits too (1000 KiB, 14.0 ms). c stays over (1500 KiB). The final losses agree to 5.0e-7 (relative): the same training.",
    );
    expect(fitSentence([{ key: 'as is', f: f(1, 1) }])).toBeNull();
  });
});
