/**
 * Nothing lost, in Chromium (SwiftShader WebGPU, float32): a run stopped after
 * k steps saves its state into IndexedDB; after a reload the page offers
 * "Resume run from step k" for the configuration in its URL, and the run
 * resumed through window.pipelab.run(cfg, { resume: true }) ends with the
 * losses and weights of the uninterrupted 2k-step run (≤ 1e-6 relative). A worker that
 * crashes at step k+1 with checkpointEvery = k: the run recovers from step k
 * on fresh workers and ends with the uninterrupted run's losses; with
 * recovery = fewer, a 3-rank run recovers re-cut onto the 2 workers that
 * remain, with the same losses (≤ 1e-5). A file that
 * is not a checkpoint, loaded in the page, is refused with the codec's message.
 */
import type { Page } from '@playwright/test';
import { test, expect, openApp } from './page-errors.ts';
import { maxRelErr } from '../src/util/rel-err.ts';

async function open(page: Page, query = ''): Promise<void> {
  await page.goto(`./${query}`);
  await page.waitForFunction(() => !!window.pipelab);
}

/** A small spiral run on 2 ranks: k = 3, 2k = 6 steps. */
const SMALL = { layers: 3, hidden: 12, batchSize: 16, microbatches: 2, ranks: 2, steps: 6, evalEvery: 0, lr: 0.01, optimizer: 'adamw' as const };
const K = 3;

/** The largest relative difference of any one loss (stricter than a norm). */
function worstRelErr(a: number[], b: number[]): number {
  return Math.max(...a.map((x, i) => Math.abs(x - b[i]) / Math.max(Math.abs(b[i]), 1e-30)));
}

/** In the page: the checkpoints of SMALL removed, its uninterrupted 2k-step run (no saves), then a run stopped after k steps (saved at the stop). */
async function fullThenStopped(page: Page) {
  return page.evaluate(
    async ({ small, k }) => {
      const cfg = { ...window.pipelab.defaultConfig(), ...small };
      await window.pipelab.checkpoints.remove(cfg);
      const full = await window.pipelab.run({ ...cfg, checkpointEvery: 0 }, { readWeights: true });
      const fullWeights = Object.fromEntries(Object.entries(full.weights ?? {}).map(([n, v]) => [n, Array.from(v)]));
      const stop = new AbortController();
      const stopped = await window.pipelab.run(cfg, { signal: stop.signal, onStep: (p) => (p.step + 1 === k ? stop.abort() : undefined) });
      return { full: full.losses, fullWeights, stopped: stopped.losses, saves: stopped.checkpointSaves?.steps, stored: (await window.pipelab.checkpoints.list(cfg)).map((c) => c.step), cfg };
    },
    { small: SMALL, k: K },
  );
}

/** A link of SMALL. */
const SMALL_QUERY = Object.entries(SMALL)
  .map(([k, v]) => `${k}=${v}`)
  .join('&');

test('stop after k steps, reload, "Resume run from step k", resume k more: the losses and weights of 2k uninterrupted steps', async ({ page }) => {
  await open(page);
  const first = await fullThenStopped(page);
  expect(first.stopped).toHaveLength(K);
  expect(first.saves).toEqual([K]);
  expect(first.stored).toEqual([K]);

  // A link of this configuration, after a reload: the page offers to resume it.
  await open(page, `?${SMALL_QUERY}`);
  await expect(page.getByRole('button', { name: `Resume run from step ${K}` })).toBeVisible({ timeout: 20_000 });

  const resumed = await page.evaluate(async (cfg) => {
    const r = await window.pipelab.run(cfg, { resume: true, readWeights: true });
    const weights = r.weights ? Object.fromEntries(Object.entries(r.weights).map(([n, v]) => [n, Array.from(v)])) : undefined;
    return { losses: r.losses, resumedFrom: r.resumedFrom, steps: r.steps.map((s) => s.step), weights };
  }, first.cfg);
  expect(resumed.resumedFrom).toBe(K);
  expect(resumed.steps).toEqual([3, 4, 5]);
  expect(resumed.losses).toHaveLength(2 * K);
  expect(worstRelErr(resumed.losses, first.full)).toBeLessThanOrEqual(1e-6);
  // docs/checkpoints.md: the losses and weights of an uninterrupted run, within 1e-6 in Chromium.
  const weightDiff = maxRelErr(resumed.weights, first.fullWeights);
  console.log(`resumed in Chromium vs uninterrupted: losses ${worstRelErr(resumed.losses, first.full).toExponential(2)}, weights ${weightDiff.toExponential(2)}`);
  expect(weightDiff).toBeLessThanOrEqual(1e-6);
});

test('the page: "Resume run from step k" clicked continues the stored run to 2k steps, its loss curve the uninterrupted one', async ({ page }) => {
  await open(page);
  const first = (await fullThenStopped(page)).full;
  await open(page, `?${SMALL_QUERY}`);
  await page.getByRole('button', { name: `Resume run from step ${K}` }).click({ timeout: 20_000 });
  await expect(page.getByRole('progressbar', { name: 'Training progress' })).toHaveAttribute('aria-valuenow', String(2 * K), { timeout: 60_000 });
  await expect(page.getByTestId('checkpoint-note')).toHaveText(`Checkpoint saved at step ${2 * K}.`, { timeout: 20_000 });
  const shown = (await page.locator('figure.loss-chart').getAttribute('data-losses'))!.split(',').map(Number);
  expect(shown).toHaveLength(2 * K);
  // The chart keeps 6 significant digits.
  expect(worstRelErr(shown, first)).toBeLessThanOrEqual(1e-5);
});

test('a worker that crashes at step k+1 with checkpointEvery = k: recovered from step k on fresh workers, the final losses of an uninterrupted run', async ({ sharedPage: page }) => {
  await openApp(page);
  const r = await page.evaluate(
    async ({ small, k }) => {
      const cfg = { ...window.pipelab.defaultConfig(), ...small, checkpointEvery: k };
      await window.pipelab.checkpoints.remove(cfg);
      const full = await window.pipelab.run({ ...cfg, checkpointEvery: 0 });
      const crashed = await window.pipelab.run({ ...cfg, fault: { kind: 'crash-worker', action: '1F0', step: k } }, { recvTimeoutMs: 20_000 });
      return { full: full.losses, losses: crashed.losses, recovery: crashed.recovery, live: window.pipelab.liveWorkers() };
    },
    { small: SMALL, k: K },
  );
  expect(r.recovery).toMatchObject({ failedAtStep: K, fromStep: K, stepsRedone: 0 });
  expect(r.recovery?.failure).toMatch(/crashed/);
  expect(r.recovery?.recoveryMs).toBeGreaterThan(0);
  expect(r.losses).toHaveLength(2 * K);
  expect(worstRelErr(r.losses, r.full)).toBeLessThanOrEqual(1e-6);
  expect(r.live).toBe(0);
});

test('a worker that crashes inside a PipeDream-2BW stream: the stream restarts from its last checkpoint inside it on fresh workers; a stopped stream resumes from its stop; the losses of the uninterrupted stream', async ({ sharedPage: page }) => {
  await openApp(page);
  const r = await page.evaluate(
    async ({ small }) => {
      const cfg = { ...window.pipelab.defaultConfig(), ...small, schedule: 'pipedream-2bw' as const, lrSchedule: 'constant' as const, checkpointEvery: 2 };
      await window.pipelab.checkpoints.remove(cfg);
      const full = await window.pipelab.run({ ...cfg, checkpointEvery: 0 });
      // Micro-batch 9 of the stream's 6 × 2: in its fifth step, after the saves of steps 2 and 4 (the last perhaps not yet whole).
      const crashed = await window.pipelab.run({ ...cfg, fault: { kind: 'crash-worker', action: '1F9', step: 0 } }, { recvTimeoutMs: 20_000 });
      // Stopped inside the stream (at a step boundary, saved there), then resumed from that save.
      await window.pipelab.checkpoints.remove(cfg);
      const stop = new AbortController();
      const stopped = await window.pipelab.run({ ...cfg, checkpointEvery: 50 }, { signal: stop.signal, onStreamProgress: (p) => (p.stepsDone >= 2 ? stop.abort() : undefined) });
      const resumed = await window.pipelab.run({ ...cfg, checkpointEvery: 50 }, { resume: true });
      return {
        full: full.losses, losses: crashed.losses, recovery: crashed.recovery, saves: crashed.checkpointSaves?.steps, live: window.pipelab.liveWorkers(),
        stopped: stopped.losses.length, resumedFrom: resumed.resumedFrom, resumed: resumed.losses,
      };
    },
    { small: SMALL },
  );
  expect([2, 4]).toContain(r.recovery?.fromStep);
  expect(r.recovery?.failedAtStep).toBeGreaterThanOrEqual(3);
  expect(r.recovery?.stepsRedone).toBe((r.recovery?.failedAtStep ?? 0) - (r.recovery?.fromStep ?? 0));
  expect(r.recovery?.failure).toMatch(/crashed/);
  // Saved inside the streams (the first's up to the crash, the recovered one's from where it started) and at the end.
  expect(r.saves).toContain(4);
  expect(r.saves?.at(-1)).toBe(6);
  expect(r.losses).toHaveLength(6);
  expect(worstRelErr(r.losses, r.full)).toBeLessThanOrEqual(1e-6);
  expect(r.live).toBe(0);
  expect(r.stopped).toBeGreaterThanOrEqual(2);
  expect(r.stopped).toBeLessThan(6);
  expect(r.resumedFrom).toBe(r.stopped);
  expect(worstRelErr(r.resumed, r.full)).toBeLessThanOrEqual(1e-6);
  await page.goto('./?schedule=pipedream-2bw&microbatches=8');
  await expect(page.getByText('Restarts from the last checkpoint (or the start) on fresh workers, the same mesh.')).toBeVisible();
  await page.goto('./?schedule=pipedream');
  await expect(page.getByText('Restarts from the start (PipeDream’s stream saves no checkpoint inside it) on fresh workers, the same mesh.')).toBeVisible();
});

test('recovery = fewer: a 3-rank run whose worker crashes at step k+1 with checkpointEvery = k finishes re-cut onto 2 workers, the losses of the uninterrupted 3-rank run', async ({ page }) => {
  await open(page, '?recovery=fewer');
  // The page's choice reads the link, and says what a failure would do with the form's configuration (4 ranks).
  await expect(page.getByLabel('If a worker dies, continue on')).toHaveValue('fewer');
  await expect(page.getByText("Restarts from the last checkpoint (or the start) on 3 workers (re-cut onto 3 ranks: the model's 4 blocks on 3 stages); the same losses.")).toBeVisible();
  // The default is left out of the link.
  await page.getByLabel('If a worker dies, continue on').selectOption('fresh');
  await expect.poll(() => new URL(page.url()).searchParams.has('recovery')).toBe(false);
  await expect(page.getByText('Restarts from the last checkpoint (or the start) on fresh workers, the same mesh.')).toBeVisible();
  const r = await page.evaluate(
    async ({ small, k }) => {
      const cfg = { ...window.pipelab.defaultConfig(), ...small, ranks: 3, checkpointEvery: k, recovery: 'fewer' as const };
      await window.pipelab.checkpoints.remove(cfg);
      const full = await window.pipelab.run({ ...cfg, checkpointEvery: 0 });
      const crashed = await window.pipelab.run({ ...cfg, fault: { kind: 'crash-worker', action: '2F0', step: k } }, { recvTimeoutMs: 20_000 });
      return { full: full.losses, losses: crashed.losses, recovery: crashed.recovery, ranks: crashed.config.ranks, live: window.pipelab.liveWorkers() };
    },
    { small: SMALL, k: K },
  );
  expect(r.recovery).toMatchObject({ mode: 'fewer', failedAtStep: K, fromStep: K, meshBefore: { ranks: 3, workers: 3 }, meshAfter: { ranks: 2, workers: 2 } });
  expect(r.recovery?.failure).toMatch(/crashed/);
  expect(r.ranks).toBe(2);
  expect(r.losses).toHaveLength(2 * K);
  expect(worstRelErr(r.losses, r.full)).toBeLessThanOrEqual(1e-5);
  expect(r.live).toBe(0);
});

test('Load checkpoint: a float64 file of the CPU reference (what train.py writes too) loaded in the page, then Resume: the tab continues it to 2k steps like the uninterrupted run', async ({ page }) => {
  await open(page);
  const r = await page.evaluate(
    async ({ small, k }) => {
      const cfg = { ...window.pipelab.defaultConfig(), ...small };
      await window.pipelab.checkpoints.remove(cfg);
      const full = await window.pipelab.run({ ...cfg, checkpointEvery: 0 });
      const file = await window.pipelab.checkpoints.reference(cfg, k);
      return { full: full.losses, file: Array.from(file) };
    },
    { small: SMALL, k: K },
  );
  await page.locator('#checkpoint-file').setInputFiles({ name: 'reference.safetensors', mimeType: 'application/octet-stream', buffer: Buffer.from(r.file) });
  await expect(page.getByTestId('checkpoint-note')).toHaveText(`Loaded a checkpoint of step ${K} (written by PipeLab); Resume continues it.`);
  await page.getByRole('button', { name: `Resume run from step ${K}` }).click({ timeout: 20_000 });
  await expect(page.getByRole('progressbar', { name: 'Training progress' })).toHaveAttribute('aria-valuenow', String(2 * K), { timeout: 60_000 });
  await expect(page.getByTestId('checkpoint-note')).toHaveText(`Checkpoint saved at step ${2 * K}.`, { timeout: 20_000 });
  const shown = (await page.locator('figure.loss-chart').getAttribute('data-losses'))!.split(',').map(Number);
  expect(shown).toHaveLength(2 * K);
  // float64 steps (the reference's first k), then float32 ones from the loaded weights.
  expect(worstRelErr(shown, r.full)).toBeLessThanOrEqual(1e-4);
});

test('Load checkpoint refuses a file that is not a checkpoint with the codec\'s message; nothing changes', async ({ page }) => {
  await open(page);
  const before = await page.evaluate(() => window.pipelab.checkpoints.list().then((l) => l.length));
  await page.locator('#checkpoint-file').setInputFiles({ name: 'notes.safetensors', mimeType: 'application/octet-stream', buffer: Buffer.from('these are not the bytes of a checkpoint') });
  await expect(page.getByTestId('checkpoint-note')).toHaveText(/not a checkpoint|header length/i);
  expect(await page.evaluate(() => window.pipelab.checkpoints.list().then((l) => l.length))).toBe(before);
});
