/**
 * Warm workers between runs (src/runtime/executor/warm-workers.ts): a second run takes
 * the first run's workers with their devices and compiled kernels — it starts
 * no worker and compiles no kernel — yet computes exactly what a fresh run
 * computes (fresh weights, optimizer state and data; no leaked buffer). A run
 * that failed (here: a lost device) keeps none of its workers.
 */
import type { Page } from '@playwright/test';
import { test, expect, openApp } from './page-errors.ts';

async function open(page: Page): Promise<void> {
  await page.goto('./');
  await page.waitForFunction(() => !!window.pipelab);
}

test('a second run reuses the warm workers: no worker started, no kernel compiled, the same losses and weights', async ({ sharedPage: page }) => {
  test.setTimeout(180_000);
  // A fresh document (no worker warm yet) even on the shared page; the test after this one takes its warm workers.
  await open(page);
  const r = await page.evaluate(async () => {
    const pl = window.pipelab;
    const cfg = { ...pl.defaultConfig(), hidden: 8, batchSize: 16, microbatches: 4, steps: 2, evalEvery: 0 };
    const started0 = pl.startedWorkers();
    const first = await pl.run(cfg, { readWeights: true });
    const started1 = pl.startedWorkers();
    const warmAfterFirst = pl.warmWorkers();
    // Another seed in between: its state must not reach the run after it.
    const other = await pl.run({ ...cfg, seed: cfg.seed + 7 });
    const again = await pl.run(cfg, { readWeights: true });
    let maxWeight = 0;
    for (const [name, a] of Object.entries(first.weights!)) {
      const b = again.weights![name];
      for (let i = 0; i < a.length; i++) maxWeight = Math.max(maxWeight, Math.abs(a[i] - b[i]));
    }
    return {
      ranks: cfg.ranks,
      startedFirst: started1 - started0,
      startedLater: pl.startedWorkers() - started1,
      warmAfterFirst,
      live: pl.liveWorkers(),
      firstCompiled: first.phases.ranks.map((s) => s.compiled),
      firstKernels: first.phases.ranks.map((s) => s.kernels),
      againCompiled: again.phases.ranks.map((s) => s.compiled),
      againKernels: again.phases.ranks.map((s) => s.kernels),
      firstLosses: first.losses,
      otherLosses: other.losses,
      againLosses: again.losses,
      maxWeight,
      leaked: [first.leakedBuffers, other.leakedBuffers, again.leakedBuffers],
    };
  });
  expect(r.startedFirst).toBe(r.ranks);
  expect(r.warmAfterFirst).toBe(r.ranks);
  expect(r.startedLater).toBe(0);
  expect(r.live).toBe(0);
  expect(r.firstCompiled.every((c) => c > 0)).toBe(true);
  expect(r.firstCompiled).toEqual(r.firstKernels);
  expect(r.againCompiled).toEqual(new Array(r.ranks).fill(0));
  expect(r.againKernels).toEqual(r.firstKernels);
  expect(r.otherLosses).not.toEqual(r.firstLosses);
  // Same kernels, same inputs, same order: the same numbers.
  expect(r.againLosses).toEqual(r.firstLosses);
  expect(r.maxWeight).toBe(0);
  expect(r.leaked).toEqual([0, 0, 0]);
});

test('a run that lost a device keeps no worker warm; the next run starts fresh ones', async ({ sharedPage: page }) => {
  test.setTimeout(180_000);
  await openApp(page);
  const r = await page.evaluate(async () => {
    const pl = window.pipelab;
    const cfg = { ...pl.defaultConfig(), hidden: 8, batchSize: 16, microbatches: 4, steps: 2, evalEvery: 0 };
    await pl.run(cfg);
    const warmBefore = pl.warmWorkers();
    let error = '';
    try {
      await pl.run({ ...cfg, fault: { kind: 'lose-device', action: '1B0' } as never }, { recvTimeoutMs: 4000, stepTimeoutMs: 30000 });
    } catch (e) {
      error = (e as Error).message;
    }
    const warmAfterFault = pl.warmWorkers();
    const started = pl.startedWorkers();
    const next = await pl.run(cfg);
    return { ranks: cfg.ranks, warmBefore, error, warmAfterFault, startedNext: pl.startedWorkers() - started, nextCompiled: next.phases.ranks.map((s) => s.compiled), losses: next.losses };
  });
  expect(r.warmBefore).toBe(r.ranks);
  expect(r.error).toMatch(/WebGPU device was lost/);
  expect(r.warmAfterFault).toBe(0);
  expect(r.startedNext).toBe(r.ranks);
  expect(r.nextCompiled.every((c) => c > 0)).toBe(true);
  expect(r.losses.every(Number.isFinite)).toBe(true);
});

/** The page as a visitor's browser shows it (automation sets navigator.webdriver, and the page leaves preparation to it). */
async function openAsVisitor(page: Page, query: string): Promise<void> {
  await page.addInitScript(() => Object.defineProperty(Navigator.prototype, 'webdriver', { get: () => false }));
  await page.goto(`./${query}`);
  await page.waitForFunction(() => !!window.pipelab);
}

test('the page prepares its workers at load: the first Run starts no worker and compiles no kernel', async ({ page }) => {
  test.setTimeout(180_000);
  await openAsVisitor(page, '?steps=3&evalEvery=0');
  await expect(page.getByRole('status')).toContainText('Preparing 4 workers', { timeout: 30_000 });
  await expect(page.getByRole('status')).toContainText('4 workers warm', { timeout: 120_000 });
  const before = await page.evaluate(() => ({ started: window.pipelab.startedWorkers(), warm: window.pipelab.warmWorkers(), live: window.pipelab.liveWorkers() }));
  expect(before).toEqual({ started: 4, warm: 4, live: 0 });
  await page.getByRole('button', { name: '▶ Run' }).click();
  await expect(page.getByRole('status')).toHaveAttribute('data-status', 'done', { timeout: 120_000 });
  const start = page.getByTestId('run-start');
  await expect(start).toContainText('warm workers');
  await expect(start).toHaveAttribute('data-compiled', '0');
  expect(await page.evaluate(() => ({ started: window.pipelab.startedWorkers(), warm: window.pipelab.warmWorkers(), live: window.pipelab.liveWorkers() }))).toEqual({ started: 4, warm: 4, live: 0 });
});

test('Run pressed while the page prepares its workers waits for them rather than starting more', async ({ page }) => {
  test.setTimeout(180_000);
  await openAsVisitor(page, '?steps=2&evalEvery=0');
  await expect(page.getByRole('status')).toContainText('Preparing 4 workers', { timeout: 30_000 });
  await page.getByRole('button', { name: '▶ Run' }).click();
  await expect(page.getByRole('status')).toHaveAttribute('data-status', 'done', { timeout: 120_000 });
  await expect(page.getByTestId('run-start')).toContainText('waiting for the workers the page was preparing');
  await expect(page.getByTestId('run-start')).toHaveAttribute('data-compiled', '0');
  expect(await page.evaluate(() => window.pipelab.startedWorkers())).toBe(4);
});

test('under automation the page prepares nothing by itself; prepareWorkers() does it on request', async ({ page }) => {
  test.setTimeout(180_000);
  await open(page);
  await expect(page.getByRole('status')).toContainText('Ready to train', { timeout: 30_000 });
  const r = await page.evaluate(async () => {
    const pl = window.pipelab;
    const startedAtLoad = pl.startedWorkers();
    const cfg = { ...pl.defaultConfig(), ranks: 2, steps: 1, evalEvery: 0 };
    const prepared = await pl.prepareWorkers(cfg);
    const again = await pl.prepareWorkers(cfg);
    const warm = pl.warmWorkers();
    const report = await pl.run(cfg);
    let refused = '';
    try {
      await pl.prepareWorkers({ ...cfg, ranks: 0 });
    } catch (e) {
      refused = e instanceof Error ? e.message : String(e);
    }
    return { startedAtLoad, prepared, again, warm, compiled: report.phases.ranks.map((s) => s.compiled), started: pl.startedWorkers(), refused };
  });
  expect(r.startedAtLoad).toBe(0);
  expect(r.prepared).toEqual({ kept: 2 });
  expect(r.again).toEqual({ kept: 0 });
  expect(r.warm).toBe(2);
  expect(r.compiled).toEqual([0, 0]);
  expect(r.started).toBe(2);
  expect(r.refused).toMatch(/ranks = 0/);
});
