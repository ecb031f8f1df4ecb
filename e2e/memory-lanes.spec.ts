/**
 * The memory lanes on the built page (issue 52): one tiny ZeRO-3 run on 2 replicas × 2 ranks (the weights freed and
 * gathered on each worker's WebGPU device), then the Train view draws a memory lane per worker whose peak is the run
 * report's measured peak for that worker, the Chrome trace carries the same counts as counter tracks, and ZeRO-3's
 * count shows gathered weights at the peak and none at rest. And the count beside the formula on the page's WebGPU
 * workers (the formula: config/memory-budget.ts plannedPeaks; the count less staging, the uniform ring and the pool's
 * bucket slack: held-bytes.ts comparable): the char-MLP within 10% on every worker; the tiny GPT is reported, and held
 * to its measured gap (bench/MEMORY.md: buffers disposed while commands are pending stay live until the submit).
 * count shows gathered weights at the peak and none at rest. And a swapped run (issue 54): each worker's host memory,
 * counted apart, drawn as its own line in the lane and carried by the trace's host counter.
 */
import type { Page } from '@playwright/test';
import { expect, test } from './page-errors.ts';
import { readFileSync } from 'node:fs';
import { watchErrors } from './page-errors.ts';

async function download(page: Page, button: string): Promise<Buffer> {
  const [dl] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: button }).click()]);
  return readFileSync(await dl.path());
}

interface Held {
  measured?: { peak: number; comparable: number; slack: number; byKind: Record<string, number> };
  formula: { peak: number };
}

test('a ZeRO-3 run draws a memory lane per worker, its peak the report\'s, and the trace carries the counts', async ({ page }) => {
  test.setTimeout(180_000);
  const errors = watchErrors(page);
  await page.goto('./?dataset=names&ranks=2&dp=2&zero=3&microbatches=2&batchSize=16&steps=2&evalEvery=0&layers=1');
  await page.getByRole('button', { name: '▶ Run' }).click();
  await expect.poll(() => page.getByRole('status').getAttribute('data-status'), { timeout: 150_000, intervals: [250, 500, 1000] }).toBe('done');
  const lanes = page.getByTestId('memory-lanes').getByTestId('memory-lane');
  await expect(lanes).toHaveCount(4);
  const report = JSON.parse((await download(page, 'Run report (JSON)')).toString('utf8')) as { heldBytesPerWorker: Held[]; memory: { samples: { t: number; live: number[] }[]; peak: { live: number[] } }[] };
  expect(report.heldBytesPerWorker).toHaveLength(4);
  for (let w = 0; w < 4; w++) {
    const held = report.heldBytesPerWorker[w];
    const lane = page.getByTestId('memory-lanes').locator(`[data-worker="${w}"]`);
    // The lane's peak is the report's last step's high-water mark; the report's measured peak the steady state's (step 2 of 2: the same step).
    expect(Number(await lane.getAttribute('data-peak'))).toBe(held.measured?.peak);
    expect(Number(await lane.getAttribute('data-formula-peak'))).toBe(held.formula.peak);
    expect(Number(await lane.getAttribute('data-comparable'))).toBe(held.measured?.comparable);
    // ZeRO-3: the gathered weights at the peak; after the step's update none (the last sample: at rest).
    expect(held.measured?.byKind.gathered).toBeGreaterThan(0);
    const rest = report.memory[w].samples[report.memory[w].samples.length - 1].live;
    expect(rest[4]).toBe(0); // MEMORY_KINDS[4] = 'gathered'
  }
  const trace = JSON.parse((await download(page, 'Chrome trace (JSON)')).toString('utf8')) as { traceEvents: { ph: string; name: string; tid: number; args?: Record<string, number> }[] };
  const counters = trace.traceEvents.filter((e) => e.ph === 'C' && e.name.startsWith('memory of worker'));
  expect(new Set(counters.map((e) => e.tid))).toEqual(new Set([0, 1, 2, 3]));
  expect(counters.filter((e) => e.tid === 0)).toHaveLength(report.memory[0].samples.length);
  expect(errors).toEqual([]);
});

test('the count beside the formula on WebGPU workers: the char-MLP within 10%, the GPT within its known gap', async ({ page }) => {
  test.setTimeout(240_000);
  const errors = watchErrors(page);
  await page.goto('./');
  await page.waitForFunction(() => !!window.pipelab);
  const rows = await page.evaluate(async () => {
    const d = window.pipelab.defaultConfig();
    const mlp = { ...d, dataset: 'names' as const, model: 'char-mlp' as const, hidden: 128, layers: 2, activation: 'gelu' as const, context: 4, embedDim: 16, steps: 2, evalEvery: 0, batchSize: 32, ranks: 2, microbatches: 4, schedule: '1f1b' as const };
    const gpt = { ...d, dataset: 'names' as const, model: 'gpt' as const, layers: 2, heads: 2, width: 16, blockSize: 16, batchSize: 16, microbatches: 4, steps: 2, evalEvery: 0, ranks: 2, schedule: '1f1b' as const };
    const cases: [string, typeof d][] = [
      ['char-MLP 1F1B p 2', mlp],
      ['char-MLP GPipe p 2', { ...mlp, schedule: 'gpipe' }],
      ['char-MLP ZeRO-3 dp 2 × p 2', { ...mlp, dp: 2, zero: 3 }],
      ['GPT 1F1B p 2', gpt],
    ];
    const out: { name: string; held: { peak: number; comparable: number; slack: number; pending: number; byKind: Record<string, number>; formula: number }[] }[] = [];
    for (const [name, cfg] of cases) {
      const r = await window.pipelab.run(cfg);
      out.push({ name, held: r.heldBytesPerWorker.map((h) => ({ ...h.measured!, formula: h.formula.peak })) });
    }
    return out;
  });
  for (const { name, held } of rows) {
    for (const [w, h] of held.entries()) {
      const ratio = h.comparable / h.formula;
      console.log(`${name} worker ${w}: peak ${h.peak} B, counted ${h.comparable} B (less staging ${h.byKind.staging}, uniform ring ${h.byKind.uniforms}, slack ${h.slack}; pending the submit ${h.pending}), formula ${h.formula}: ${ratio.toFixed(3)}; by kind ${JSON.stringify(h.byKind)}`);
      // The uniform ring is its own kind on every WebGPU worker: 1024 slots of 256 B.
      expect(h.byKind.uniforms).toBe(1024 * 256);
      expect(h.comparable).toBe(h.peak - h.byKind.staging - h.byKind.uniforms - h.slack);
      if (name.startsWith('char-MLP')) expect(Math.abs(ratio - 1)).toBeLessThan(0.1);
      // SwiftShader, 2026-11-28: 1.17 and 1.22 (bench/MEMORY.md); above the formula, never below it.
      else expect(ratio).toBeGreaterThan(0.95), expect(ratio).toBeLessThan(1.3);
    }
  }
  expect(errors).toEqual([]);
});

test('a swapped run draws each worker\'s host memory apart: bytes leaving and returning, the trace\'s host counter beside it', async ({ page }) => {
  test.setTimeout(180_000);
  const errors = watchErrors(page);
  await page.goto('./?dataset=names&ranks=2&schedule=gpipe&swap=all&microbatches=4&batchSize=16&steps=1&evalEvery=0&layers=1');
  await page.getByRole('button', { name: '▶ Run' }).click();
  await expect.poll(() => page.getByRole('status').getAttribute('data-status'), { timeout: 150_000, intervals: [250, 500, 1000] }).toBe('done');
  const report = JSON.parse((await download(page, 'Run report (JSON)')).toString('utf8')) as { hostBytesPerWorker?: number[]; memory: { samples: { host?: number[] }[] }[] };
  await expect(page.getByTestId('memory-lanes').getByTestId('memory-lane-host')).toHaveCount(2);
  for (let w = 0; w < 2; w++) {
    const host = report.memory[w].samples.map((s) => s.host?.[0] ?? 0);
    // Bytes leave (the host's count rises) and all come back by the step's end.
    expect(Math.max(...host)).toBeGreaterThan(0);
    expect(host[host.length - 1]).toBe(0);
    const lane = page.getByTestId('memory-lanes').locator(`[data-worker="${w}"]`);
    expect(Number(await lane.getAttribute('data-host-peak'))).toBe(report.hostBytesPerWorker?.[w]);
  }
  const trace = JSON.parse((await download(page, 'Chrome trace (JSON)')).toString('utf8')) as { traceEvents: { ph: string; name: string; tid: number }[] };
  expect(new Set(trace.traceEvents.filter((e) => e.ph === 'C' && e.name.startsWith('host memory of worker')).map((e) => e.tid))).toEqual(new Set([0, 1]));
  expect(errors).toEqual([]);
});
