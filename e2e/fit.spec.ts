/**
 * Issue 54 in headless Chromium (one module Worker and one WebGPU device per rank): a run that swaps activations and
 * one that offloads its optimizer give the losses and weights of the same run without it within 1e-5 (swapping bit
 * for bit: the stash comes back as it left) and of one float64 device within float32's 1e-4, draw their swap-out,
 * swap-in and cpu-update intervals, leak nothing; a budget the plan passes is refused in the page before Run, and
 * the Make it fit preset measures its five runs and says what wins.
 */
import type { Page } from '@playwright/test';
import { test, expect } from './page-errors.ts';
import { relErr } from '../src/util/rel-err.ts';

async function open(page: Page, query = ''): Promise<void> {
  await page.goto(`./${query}`);
  await page.waitForFunction(() => !!window.pipelab);
}

test('swapping and optimizer offload train the same numbers in Chromium', async ({ page }) => {
  test.setTimeout(300_000);
  await open(page);
  const r = await page.evaluate(async () => {
    const base = { ...window.pipelab.defaultConfig(), ranks: 2, layers: 3, hidden: 16, batchSize: 32, microbatches: 4, steps: 3, evalEvery: 0, optimizer: 'adamw' as const, lr: 0.01, schedule: 'gpipe' as const };
    const flat = (w: Record<string, Float32Array | Float64Array>) => Object.fromEntries(Object.entries(w).map(([k, v]) => [k, Array.from(v)]));
    const plain = await window.pipelab.run(base, { readWeights: true });
    const swapped = await window.pipelab.run({ ...base, swap: 'all' }, { readWeights: true });
    const offloaded = await window.pipelab.run({ ...base, offloadOptimizer: true }, { readWeights: true });
    const ref = await window.pipelab.runSingleDevice(base);
    const kinds = (rep: typeof plain) => [...new Set(rep.timeline.intervals.map((iv) => iv.comm ?? iv.coll ?? ''))];
    return {
      plain: { losses: plain.losses, weights: flat(plain.weights!) },
      swapped: { losses: swapped.losses, weights: flat(swapped.weights!), kinds: kinds(swapped), leaked: swapped.leakedBuffers, stash: swapped.peakStashBytes[0], host: swapped.hostBytesPerWorker },
      offloaded: { losses: offloaded.losses, weights: flat(offloaded.weights!), kinds: kinds(offloaded), leaked: offloaded.leakedBuffers, optimizer: offloaded.heldBytesPerWorker.map((h) => h.optimizer) },
      plainStash: plain.peakStashBytes[0],
      ref: { losses: ref.losses, params: flat(ref.params) },
    };
  });
  expect(r.swapped.losses).toEqual(r.plain.losses);
  for (const k of Object.keys(r.plain.weights)) expect(r.swapped.weights[k]).toEqual(r.plain.weights[k]);
  expect(r.swapped.stash).toBeLessThan(r.plainStash);
  expect(r.swapped.kinds).toEqual(expect.arrayContaining(['swap-out', 'swap-in']));
  expect(Math.max(...(r.swapped.host ?? [0]))).toBeGreaterThan(0);
  const lossDiff = Math.max(...r.offloaded.losses.map((l, i) => Math.abs(l - r.plain.losses[i]) / Math.abs(r.plain.losses[i])));
  const weightDiff = Math.max(...Object.keys(r.plain.weights).map((k) => relErr(r.offloaded.weights[k], r.plain.weights[k])));
  console.log(`offload in Chromium against the device's own optimizer: losses ${lossDiff.toExponential(2)}, weights ${weightDiff.toExponential(2)} (relative)`);
  expect(lossDiff).toBeLessThan(1e-5);
  expect(weightDiff).toBeLessThan(1e-5);
  expect(r.offloaded.kinds).toContain('cpu-update');
  expect(r.offloaded.optimizer.every((b) => b === 0)).toBe(true);
  for (const run of [r.swapped, r.offloaded]) {
    expect(run.leaked).toBe(0);
    const toRef = Math.max(...run.losses.map((l, i) => Math.abs(l - r.ref.losses[i]) / Math.abs(r.ref.losses[i])));
    expect(toRef).toBeLessThan(1e-4);
  }
});

test('a budget the plan passes is refused in the page, naming what would fit', async ({ page }) => {
  await open(page, '?memoryBudget=0.01');
  await expect(page.getByRole('alert')).toContainText('memoryBudget = 0.01: worker');
  await expect(page.getByRole('alert')).toContainText('optimizer offload (offloadOptimizer = true)');
});

test('Make it fit: five runs measured, the budget against each, a sentence from the numbers', async ({ page }) => {
  test.setTimeout(300_000);
  await open(page, '?view=compare&compare.preset=fit&compare.steps=2');
  await page.getByRole('button', { name: '▶ Measure the five runs' }).click();
  await expect(page.getByTestId('fit-sentence')).toBeVisible({ timeout: 240_000 });
  await expect(page.getByTestId('fit-sentence')).toContainText('wins here: it fits');
  await expect(page.getByTestId('fit-row-as is')).toContainText('refused');
  await expect(page.getByTestId('fit-row-swapping')).toContainText('fits');
});
