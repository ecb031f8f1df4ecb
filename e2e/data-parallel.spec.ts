/**
 * Data × pipeline parallelism for real: dp replicas of the pipeline, one module
 * Worker and one WebGPU device per worker, each stage's gradients summed by a
 * ring all-reduce over MessageChannels between the replicas' workers (or
 * ZeRO-1's reduce-scatter, sharded update and all-gather; ZeRO-2's
 * reduce-scatter per backward; ZeRO-3's all-gathers of the weights before they
 * are used). It must train as one device does on the whole batch. PipeDream-2BW
 * takes replicas too, an all-reduce per stage and block (its fields fixed, with
 * the reason).
 */
import type { Page } from '@playwright/test';
import { test, expect, openApp } from './page-errors.ts';
import { SCHEDULE_NAMES, SCHEDULES, type ScheduleName } from '../src/schedule/registry.ts';

async function open(page: Page, query = ''): Promise<void> {
  await page.goto(`./${query}`);
  await page.waitForFunction(() => !!window.pipelab);
}

type Case = { schedule: ScheduleName; dp: number; ranks: number; virtual: number; zero: 0 | 1 | 2 | 3; reshard: 'step' | 'microbatch'; overlap: boolean; microbatches?: number };

/**
 * Every synchronous schedule at dp = 2, p = 2, the (zero, reshard, overlap) settings taken in turn (ZeRO 0–3,
 * ZeRO-3 kept for the step and re-gathered per micro-batch, overlap on and off); dp = 4, p = 1 with ZeRO-3;
 * interleaved dp = 2, p = 2, v = 2 with ZeRO-3 (two stages a worker, gathers prefetched across them); DualPipe
 * dp = 2, p = 2, m = 4 (each stage all-reduced over the replicas, then summed over its two model copies; and with
 * ZeRO-1 and 3, each owned chunk summed over the copies before its update).
 */
function cases(): Case[] {
  const combos = [
    { zero: 0 as const, reshard: 'step' as const, overlap: true },
    { zero: 1 as const, reshard: 'step' as const, overlap: false },
    { zero: 2 as const, reshard: 'step' as const, overlap: true },
    { zero: 3 as const, reshard: 'step' as const, overlap: true },
    { zero: 3 as const, reshard: 'microbatch' as const, overlap: false },
    { zero: 1 as const, reshard: 'step' as const, overlap: true },
    { zero: 2 as const, reshard: 'step' as const, overlap: false },
    { zero: 0 as const, reshard: 'step' as const, overlap: false },
  ];
  // DualPipe's two model copies need m ≥ 2p (below).
  const out: Case[] = SCHEDULE_NAMES.filter((n) => SCHEDULES[n].update === 'flush' && SCHEDULES[n].copies === 1).map((schedule, i) => ({ schedule, dp: 2, ranks: 2, virtual: SCHEDULES[schedule].virtualFor(1), ...combos[i % combos.length] }));
  out.push({ schedule: '1f1b', dp: 4, ranks: 1, virtual: 1, zero: 3, reshard: 'microbatch', overlap: true });
  out.push({ schedule: 'interleaved-1f1b', dp: 2, ranks: 2, virtual: 2, zero: 3, reshard: 'step', overlap: true });
  out.push({ schedule: 'dualpipe', dp: 2, ranks: 2, virtual: 1, zero: 0, reshard: 'step', overlap: true, microbatches: 4 });
  out.push({ schedule: 'dualpipe', dp: 2, ranks: 2, virtual: 1, zero: 1, reshard: 'step', overlap: false, microbatches: 4 });
  out.push({ schedule: 'dualpipe', dp: 2, ranks: 2, virtual: 1, zero: 3, reshard: 'step', overlap: true, microbatches: 4 });
  return out;
}

test('dp × pp in Chromium equals one device on the whole batch (every synchronous schedule, ZeRO 0–3 and overlap on and off)', async ({ sharedPage: page }) => {
  test.setTimeout(420_000);
  await openApp(page);
  const all = cases();
  const results = await page.evaluate(async (all) => {
    const base = { ...window.pipelab.defaultConfig(), layers: 3, hidden: 12, batchSize: 16, microbatches: 2, steps: 2, evalEvery: 0 };
    const ref = await window.pipelab.runSingleDevice(base);
    const out = [];
    for (const c of all) {
      const cfg = { ...base, ...c };
      const rep = await window.pipelab.run(cfg, { readWeights: true });
      let maxLoss = 0, maxWeight = 0;
      rep.losses.forEach((l, i) => (maxLoss = Math.max(maxLoss, Math.abs(l - ref.losses[i]) / Math.abs(ref.losses[i]))));
      for (const k of Object.keys(ref.params)) {
        const a = rep.weights![k], b = ref.params[k];
        let num = 0, den = 0;
        for (let i = 0; i < b.length; i++) {
          num += (a[i] - b[i]) ** 2;
          den += b[i] ** 2;
        }
        maxWeight = Math.max(maxWeight, Math.sqrt(num / den));
      }
      const lanes = new Set(rep.timeline.intervals.map((iv) => (iv.replica ?? 0) * rep.timeline.ranks + iv.rank)).size;
      const collectives = rep.timeline.intervals.filter((iv) => iv.op === 'collective').length;
      // DualPipe: the copies' sum measured on every replica's lanes and played by the simulator (report-copies.ts).
      const sums = (t: typeof rep.timeline) => t.intervals.filter((iv) => iv.coll === 'copy-sum').length;
      const copySum = rep.copySum ? { measured: sums(rep.timeline), simulated: sums(rep.simulatedTimeline), added: rep.copySum.simulated?.addedMs ?? -1 } : null;
      out.push({ ...c, losses: rep.losses.length, refLosses: ref.losses.length, weights: Object.keys(rep.weights!).length, params: Object.keys(ref.params).length, maxLoss, maxWeight, mismatch: rep.replicaMismatch, lanes, collectives, copySum, leaked: rep.leakedBuffers, live: window.pipelab.liveWorkers(), stages: rep.allReduce?.perStage.length ?? 0 });
    }
    return out;
  }, all);
  for (const r of results) {
    const label = `${r.schedule} dp=${r.dp} p=${r.ranks} v=${r.virtual} zero=${r.zero} reshard=${r.reshard} overlap=${r.overlap}`;
    // Every step's loss and every weight came back (the bounds below are over what came back).
    expect([r.losses, r.refLosses], label).toEqual([2, 2]);
    expect(r.weights, label).toBe(r.params);
    // float32 sums in another order (per replica, then across): 1e-5 relative is the bound the issue asks for.
    expect(r.maxLoss, label).toBeLessThan(1e-5);
    expect(r.maxWeight, label).toBeLessThan(1e-5);
    // With ZeRO-3 no two replicas hold the same weights: nothing to compare (the joined weights are checked above),
    // but DualPipe's two copies of a stage hold the same pieces in a replica, and those are compared.
    expect(r.mismatch, label).toBe(r.zero === 3 && r.schedule !== 'dualpipe' ? undefined : 0);
    expect(r.lanes, label).toBe(r.dp * r.ranks);
    expect(r.collectives, label).toBeGreaterThan(0);
    // Each stage's sum over its 2 copies on every replica: 2 stages a rank.
    expect(r.copySum, label).toEqual(r.schedule === 'dualpipe' ? { measured: 2 * r.ranks * r.dp, simulated: 2 * r.ranks * r.dp, added: expect.any(Number) } : null);
    if (r.copySum) expect(r.copySum.added, label).toBeGreaterThan(0);
    expect(r.leaked, label).toBe(0);
    expect(r.live, label).toBe(0);
  }
});

test('a worker that crashes in the middle of an all-reduce is named (replica, stage, collective), and the run recovers from step 0 on fresh workers', async ({ sharedPage: page }) => {
  await openApp(page);
  const r = await page.evaluate(async () => {
    const cfg = { ...window.pipelab.defaultConfig(), layers: 3, hidden: 12, batchSize: 16, microbatches: 2, steps: 3, evalEvery: 0, dp: 2, ranks: 2 };
    const report = await window.pipelab.run({ ...cfg, fault: { kind: 'crash-worker' as const, action: 'AR0', step: 1, replica: 1 } }, { recvTimeoutMs: 20_000 });
    const plain = await window.pipelab.run(cfg);
    return { failure: report.recovery?.failure ?? 'no failure', fromStep: report.recovery?.fromStep, losses: report.losses, plain: plain.losses, live: window.pipelab.liveWorkers() };
  });
  // The crash fired in step 1, before the first checkpoint: the start of the run is the checkpoint it recovers from.
  expect(r.failure).toMatch(/^replica 1, rank 0 \(worker 2\), during step 1: the all-reduce of stage 0: .*crashed/);
  expect(r.fromStep).toBe(0);
  expect(r.losses).toHaveLength(3);
  for (let i = 0; i < 3; i++) expect(Math.abs(r.losses[i] - r.plain[i])).toBeLessThanOrEqual(1e-6 * Math.abs(r.plain[i]));
  expect(r.live).toBe(0);
});

test('a link with dp=2&ranks=2 trains in the page on 4 workers, the all-reduce drawn and counted', async ({ page }) => {
  test.setTimeout(240_000);
  await open(page, '?dp=2&ranks=2&zero=1&steps=6&evalEvery=0');
  await expect(page.getByLabel('Replicas (dp)', { exact: true })).toHaveValue('2');
  await expect(page.getByLabel('Shard across replicas', { exact: true })).toHaveValue('1');
  const started = await page.evaluate(() => window.pipelab.startedWorkers());
  await page.getByRole('button', { name: '▶ Run' }).click();
  await expect(page.getByTestId('allreduce-step')).toBeVisible({ timeout: 180_000 });
  expect(await page.evaluate(() => window.pipelab.startedWorkers())).toBe(started + 4);
  const plot = page.getByTestId('run-timeline').locator('.timeline-plot');
  await expect(plot).toHaveAttribute('data-lanes', '4');
  await expect(plot).toHaveAttribute('aria-label', /2 replicas × 2 ranks = 4 workers/);
  await expect(page.locator('[data-collective="reduce-scatter"]')).toBeVisible();
  await expect(page.locator('[data-collective="shard-update"]')).toBeVisible();
  await expect(page.getByTestId('allreduce-stage')).toHaveCount(2);
  await expect(page.getByTestId('optimizer-bytes')).toContainText('ZeRO-1');
  await expect(page.locator('[data-gap="allreduce"]')).toBeVisible();
  // The badge gives the whole step (with its collectives) beside the pipeline's makespan, and it is no shorter.
  const badge = async (id: string) => Number((await page.getByTestId('run-timeline').getByTestId(id).innerText()).replace(/[^0-9.]/g, ''));
  expect(await badge('badge-step')).toBeGreaterThanOrEqual(await badge('badge-makespan'));
});

test('a link with zero=3 at dp=4 trains in the page: the all-gathers drawn, the weights held per worker a quarter of ZeRO-0\'s', async ({ page }) => {
  test.setTimeout(240_000);
  await open(page, '?dp=4&ranks=1&zero=3&reshard=microbatch&steps=2&evalEvery=0');
  await expect(page.getByLabel('Shard across replicas', { exact: true })).toHaveValue('3');
  await expect(page.getByLabel('Free gathered weights after', { exact: true })).toHaveValue('microbatch');
  await page.getByRole('button', { name: '▶ Run' }).click();
  await expect(page.getByTestId('held-weights')).toBeVisible({ timeout: 180_000 });
  await expect(page.locator('[data-collective="all-gather"]').first()).toBeVisible();
  await expect(page.getByTestId('held-weights')).toContainText('ZeRO-3: 1/4');
  await expect(page.getByTestId('held-transient')).toBeVisible();
  // Measured beside the ZeRO paper's formula (the closed-form column): the same figure, to the digits shown.
  for (const kind of ['held-weights', 'held-grads', 'optimizer-bytes']) {
    const cells = page.getByTestId(kind).locator('td');
    expect(await cells.nth(0).innerText(), kind).toBe(await cells.nth(2).innerText());
  }
});

test('PipeDream-2BW on replicas from a link: overlap and ZeRO fixed with the reason, each block all-reduced in the timeline, the ring bytes the formula’s', async ({ page }) => {
  test.setTimeout(240_000);
  await open(page, '?schedule=pipedream-2bw&dp=2&ranks=2&microbatches=4&steps=3&evalEvery=0&hidden=16');
  const overlap = page.getByLabel('Overlap all-reduce with backward', { exact: true });
  await expect(overlap).toBeChecked();
  await expect(overlap).toBeDisabled();
  await expect(page.getByText("PipeDream-2BW: a stage's all-reduce runs as each block of 4 micro-batches ends")).toBeVisible();
  await expect(page.getByLabel('Shard across replicas', { exact: true })).toBeDisabled();
  await expect(page.getByText('PipeDream-2BW sums each block’s gradients with a plain all-reduce')).toBeVisible();
  await page.getByRole('button', { name: '▶ Run' }).click();
  await expect(page.getByTestId('allreduce-step')).toBeVisible({ timeout: 180_000 });
  await expect(page.locator('[data-collective="reduce-scatter"]')).toBeVisible();
  await expect(page.getByTestId('allreduce-stage')).toHaveCount(2);
  // The rows say what they hold: the stream's time, one block's all-reduce (measured and simulated alike), the stream's bytes.
  await expect(page.getByTestId('allreduce-step').locator('th')).toContainText("The stream's time with its all-reduces (3 blocks), ms");
  await expect(page.getByTestId('allreduce-stage').first().locator('th')).toHaveText('All-reduce of stage 0 (mean per block)');
  await expect(page.getByTestId('ring-bytes').locator('th')).toHaveText('Bytes each worker sent over its ring in the stream (3 blocks)');
  await expect(page.getByTestId('badge-step').locator('..')).toContainText('the stream with its all-reduces');
  // What each worker sent over its ring in the stream: every block's all-reduce, as the formula counts them (3 blocks).
  const cells = page.getByTestId('ring-bytes').locator('td');
  expect(await cells.nth(0).innerText()).toBe(await cells.nth(2).innerText());
  await expect(page.getByTestId('weight-versions')).toHaveCount(2);
});
