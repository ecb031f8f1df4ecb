/**
 * The GPT through the pipeline for real: one module Worker and one WebGPU
 * device per rank in headless Chromium. Every synchronous schedule at p = 2
 * and p = 4 trains exactly like one device (losses and weights to 1e-5), the
 * residual stream [mb·T, C] crossing the stage boundaries.
 */
import { test, expect } from './page-errors.ts';
import { SCHEDULE_NAMES, SCHEDULES } from '../src/schedule/registry.ts';

test('the GPT on every synchronous schedule equals single-device training (p = 2 and 4)', async ({ page }) => {
  test.setTimeout(600_000);
  await page.goto('./');
  await page.waitForFunction(() => !!window.pipelab);
  const cases: [string, number, number][] = [];
  const synchronous = SCHEDULE_NAMES.filter((n) => SCHEDULES[n].update === 'flush');
  for (const name of synchronous) {
    const v = SCHEDULES[name].virtualFor(2);
    for (const p of [2, 4]) cases.push([name, p, v]);
  }
  const results = await page.evaluate(async (cases) => {
    // 8 blocks (7 transformer blocks + the head) hold up to p·v = 8 stages; 3 heads of width 3.
    const base = {
      ...window.pipelab.defaultConfig(),
      dataset: 'names' as const, model: 'gpt' as const, layers: 7, heads: 3, width: 9, blockSize: 16,
      batchSize: 8, microbatches: 4, steps: 2, evalEvery: 0, optimizer: 'adamw' as const, lr: 0.01,
    };
    const ref = await window.pipelab.runSingleDevice(base);
    const out = [];
    for (const [name, p, v] of cases) {
      // DualPipe needs m ≥ 2p (half the micro-batches enter each copy): the same batch in more micro-batches.
      const m = name === 'dualpipe' ? Math.max(base.microbatches, 2 * p) : base.microbatches;
      const rep = await window.pipelab.run({ ...base, schedule: name as never, ranks: p, virtual: v, microbatches: m }, { readWeights: true });
      let maxLoss = 0, maxWeight = 0;
      rep.losses.forEach((l, i) => (maxLoss = Math.max(maxLoss, Math.abs(l - ref.losses[i]) / Math.abs(ref.losses[i]))));
      const names = Object.keys(ref.params);
      for (const k of names) {
        const a = rep.weights![k], b = ref.params[k];
        let num = 0, den = 0;
        for (let i = 0; i < b.length; i++) {
          num += (a[i] - b[i]) ** 2;
          den += b[i] ** 2;
        }
        maxWeight = Math.max(maxWeight, Math.sqrt(num / den));
      }
      out.push({ name, p, maxLoss, maxWeight, weights: Object.keys(rep.weights!).length, params: names.length, losses: rep.losses, leaked: rep.leakedBuffers });
    }
    return { out, refLosses: ref.losses };
  }, cases);
  expect(results.out).toHaveLength(2 * synchronous.length);
  expect(results.refLosses).toHaveLength(2);
  expect(Math.abs(results.refLosses[0] - Math.log(28))).toBeLessThan(0.1);
  for (const r of results.out) {
    const label = `${r.name} p=${r.p}`;
    expect(r.losses, label).toHaveLength(2);
    expect(r.maxLoss, label).toBeLessThan(1e-5);
    expect(r.maxWeight, label).toBeLessThan(1e-5);
    expect(r.weights, label).toBe(r.params);
    expect(r.leaked, label).toBe(0);
  }
});

test('the page: a GPT link fills its fields, trains across the workers, samples names and shows each head’s attention', async ({ page }) => {
  test.setTimeout(300_000);
  await page.goto('./?dataset=names&model=gpt&layers=2&heads=2&width=8&blockSize=16&ranks=2&microbatches=4&batchSize=16&schedule=1f1b&steps=4&evalEvery=0');
  await expect(page.getByLabel('Model', { exact: true })).toHaveValue('gpt');
  await expect(page.getByLabel('Heads', { exact: true })).toHaveValue('2');
  await expect(page.getByLabel('Width (C)', { exact: true })).toHaveValue('8');
  await expect(page.getByTestId('url-problems')).toHaveCount(0);
  await page.getByRole('button', { name: '▶ Run' }).click();
  await expect(page.getByRole('list', { name: 'Sampled names' })).toBeVisible({ timeout: 240_000 });
  const view = page.getByTestId('attention-patterns');
  await expect(view).toBeVisible({ timeout: 60_000 });
  // 2 layers × 2 heads.
  await expect(view.getByRole('img')).toHaveCount(4);

  // Heads that do not divide the width: named under the field, the run refused.
  await page.getByLabel('Heads', { exact: true }).fill('3');
  await expect(page.getByRole('alert')).toContainText('heads = 3: must divide width = 8');
});

test('selective recomputation from the page: the same losses, each stage holding less (its attention probabilities recomputed)', async ({ page }) => {
  test.setTimeout(300_000);
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto('./?dataset=names&model=gpt&layers=3&heads=2&width=8&blockSize=16&ranks=2&microbatches=4&batchSize=16&schedule=1f1b&steps=3&evalEvery=0');
  const status = page.getByRole('status');
  /** Runs, then the losses and each stage's peak stash in KiB as the page shows them. */
  const runOnce = async (): Promise<{ losses: number[]; kib: number[] }> => {
    await page.getByRole('button', { name: '▶ Run' }).click();
    await expect(status).toHaveAttribute('data-status', 'done', { timeout: 240_000 });
    const raw = await page.getByTestId('loss-panel').locator('figure').getAttribute('data-losses');
    const kib: number[] = [];
    for (const stage of [0, 1]) {
      const row = page.getByTestId('run-numbers').getByRole('row').filter({ has: page.getByRole('rowheader', { name: new RegExp(`stage ${stage}$`) }) });
      const cell = await row.getByRole('cell').first().innerText({ timeout: 10_000 });
      const m = /([\d.]+)\s*(B|KiB|MiB)/.exec(cell);
      if (!m) throw new Error(`no bytes in "${cell}"`);
      // The memory limit's estimate beside the simulated peak: the stash the stage measured, to the byte.
      await expect(row.getByTestId('stash-estimate')).toHaveText(`· ${m[1]} ${m[2]}`);
      kib.push(Number(m[1]) / (m[2] === 'B' ? 1024 : m[2] === 'MiB' ? 1 / 1024 : 1));
    }
    return { losses: (raw ?? '').split(',').map(Number), kib };
  };
  const plain = await runOnce();
  const box = page.getByLabel('Recompute attention only (selective)');
  await expect(box).not.toBeChecked();
  await box.check();
  await expect(page).toHaveURL(/recomputeAttention=true/);
  const selective = await runOnce();
  expect(selective.losses).toHaveLength(3);
  // The forward's own kernels on the same q and k: the same probabilities, the same losses.
  selective.losses.forEach((l, i) => expect(Math.abs(l - plain.losses[i])).toBeLessThan(1e-6 * Math.abs(plain.losses[i])));
  for (const stage of [0, 1]) expect(selective.kib[stage], `stage ${stage}`).toBeLessThan(plain.kib[stage]);
  expect(errors).toEqual([]);
});
