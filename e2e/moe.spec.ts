/**
 * The MoE GPT in the page: a link with experts fills the model picker's fields and trains across two
 * workers, each with its own WebGPU device; the aux loss is shown beside the loss; the expert load's heat map shows
 * the numbers of the run report it downloads (the last step, and step 0 through its slider); the pipeline's losses and
 * weights equal one device's (the same WGSL kernels in the page's own backend) to 1e-5; a bad MoE value in a link
 * is named by field, value and rule. At ep = 2 (each stage's experts split over two workers, the token rows sent to
 * them by all-to-alls) the losses and weights equal one device's to 1e-5, and the timeline draws the all-to-alls.
 */
import { readFileSync } from 'node:fs';
import { test, expect } from './page-errors.ts';

interface LoadStep {
  step: number;
  layers: { layer: string; columns: { capacity: number }[]; first: number[][]; second: number[][]; dropped: number[][] }[];
}

/** Each heat map's cells as [expert, column, routed, dropped]. */
const shownCells = (figs: Element[]) =>
  figs.map((f) => ({
    layer: (f as HTMLElement).dataset.layer,
    cells: [...f.querySelectorAll<HTMLElement>('td.moe-cell')].map((td) => [Number(td.dataset.expert), Number(td.dataset.column), Number(td.dataset.routed), Number(td.dataset.dropped)]),
  }));

/** The same from the report's step, expert by expert. */
const reportCells = (st: LoadStep) =>
  st.layers.map((l) => ({
    layer: l.layer,
    cells: l.first[0].flatMap((_, e) => l.first.map((col, c) => [e, c, col[e] + l.second[c][e], l.dropped[c][e]])),
  }));

test('the MoE GPT: a link fills its fields, trains on two workers with the aux loss beside the loss and the expert load as the report has it, equal to one device', async ({ page }) => {
  test.setTimeout(300_000);
  await page.goto('./?dataset=names&model=gpt&layers=2&heads=2&width=8&blockSize=16&experts=4&topK=2&capacityFactor=1&ranks=2&microbatches=2&batchSize=8&schedule=1f1b&steps=3&evalEvery=0');
  await expect(page.getByTestId('url-problems')).toHaveCount(0);
  await expect(page.getByLabel('Experts (MoE)', { exact: true })).toHaveValue('4');
  await expect(page.getByLabel('Experts per token (top-k)', { exact: true })).toHaveValue('2');
  await expect(page.getByLabel('Capacity factor', { exact: true })).toHaveValue('1');
  await page.getByRole('button', { name: '▶ Run' }).click();
  const aux = page.getByTestId('aux-loss');
  await expect(aux).toBeVisible({ timeout: 240_000 });
  await expect(page.getByRole('list', { name: 'Sampled names' })).toBeVisible({ timeout: 240_000 });
  const shown = Number(await aux.textContent());
  expect(shown).toBeGreaterThan(0);
  expect(shown).toBeLessThan(2 * 4 * 0.01 + 1e-6); // at most α·E per MoE block, 2 blocks

  // Expert load: one heat map per MoE block, the last step's, its numbers the downloaded run report's.
  const maps = page.getByTestId('moe-load-layer');
  await expect(maps).toHaveCount(2);
  const [dl] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Run report (JSON)' }).click()]);
  const rep = JSON.parse(readFileSync(await dl.path(), 'utf8')) as { moeLoad: LoadStep[] };
  expect(rep.moeLoad.map((st) => st.step)).toEqual([0, 1, 2]);
  for (const st of rep.moeLoad) {
    for (const l of st.layers) {
      // Each micro-batch's 4 sequences × 16 tokens chose 2 experts each; an expert keeps at most its capacity.
      expect(l.first.map((col, c) => col.reduce((a, f, e) => a + f + l.second[c][e], 0))).toEqual([128, 128]);
      l.first.forEach((col, c) => col.forEach((f, e) => expect(f + l.second[c][e] - l.dropped[c][e]).toBeLessThanOrEqual(l.columns[c].capacity)));
    }
  }
  expect(await maps.evaluateAll(shownCells)).toEqual(reportCells(rep.moeLoad[2]));
  await expect(page.getByTestId('moe-load-summary').first()).toContainText('max / min');
  await expect(page.getByTestId('moe-load-summary').first()).toContainText('tokens per expert');
  await page.getByLabel('Step shown in the expert load').fill('0');
  expect(await maps.evaluateAll(shownCells)).toEqual(reportCells(rep.moeLoad[0]));

  const r = await page.evaluate(async () => {
    const cfg = {
      ...window.pipelab.defaultConfig(),
      dataset: 'names' as const, model: 'gpt' as const, layers: 3, heads: 2, width: 8, blockSize: 16, experts: 3, topK: 1, capacityFactor: 1.25, auxLossWeight: 0.1,
      batchSize: 8, microbatches: 2, steps: 2, evalEvery: 0, optimizer: 'sgd' as const, lr: 0.05, ranks: 2, schedule: '1f1b' as const,
    };
    const ref = await window.pipelab.runSingleDevice(cfg);
    const rep = await window.pipelab.run(cfg, { readWeights: true });
    let maxWeight = 0;
    for (const k of Object.keys(ref.params)) {
      const a = rep.weights![k], b = ref.params[k];
      let num = 0, den = 0;
      for (let i = 0; i < b.length; i++) {
        num += (a[i] - b[i]) ** 2;
        den += b[i] ** 2;
      }
      maxWeight = Math.max(maxWeight, Math.sqrt(num / den));
    }
    return { ref: ref.losses, losses: rep.losses, maxWeight, routers: Object.keys(ref.params).filter((k) => k.endsWith('router.weight')).length, auxLosses: ref.auxLosses };
  });
  expect(r.routers).toBe(3);
  expect(r.auxLosses).toHaveLength(2);
  r.losses.forEach((l, i) => expect(Math.abs(l - r.ref[i]) / r.ref[i]).toBeLessThan(1e-5));
  expect(r.maxWeight).toBeLessThan(1e-5);
});

test('a bad MoE value in a link is named by field, value and rule', async ({ page }) => {
  await page.goto('./?dataset=names&model=gpt&experts=2&topK=2&capacityFactor=-1');
  await expect(page.getByTestId('url-problems')).toContainText('capacityFactor = -1: must be a number ≥ 0 (0: dropless, every token kept)');
  await page.goto('./?dataset=names&model=gpt&experts=4&ep=3');
  await expect(page.getByTestId('url-problems')).toContainText('ep = 3: must divide experts = 4');
});

test('expert parallelism in the page: ep = 2 × pp = 2, top-2 with drops, equal to one device, the all-to-alls on every lane', async ({ page }) => {
  test.setTimeout(300_000);
  await page.goto('./?dataset=names&model=gpt&layers=2&heads=2&width=8&blockSize=16&experts=4&topK=2&capacityFactor=0.75&ep=2&ranks=2&microbatches=2&batchSize=8&schedule=1f1b&steps=2&evalEvery=0');
  await expect(page.getByTestId('url-problems')).toHaveCount(0);
  await expect(page.getByLabel('Expert parallel (ep)', { exact: true })).toHaveValue('2');
  // Before a run the prediction is drawn on every worker's lane: 2 ranks × 2 ep workers.
  await expect(page.getByTestId('run-timeline').getByRole('group')).toHaveAttribute('data-lanes', '4');
  await expect(page.getByText(/Press Run to measure it on 4 WebGPU workers/)).toBeVisible();
  const r = await page.evaluate(async () => {
    const cfg = {
      ...window.pipelab.defaultConfig(),
      dataset: 'names' as const, model: 'gpt' as const, layers: 2, heads: 2, width: 8, blockSize: 16, experts: 4, topK: 2, capacityFactor: 0.75, auxLossWeight: 0.1,
      batchSize: 8, microbatches: 2, steps: 2, evalEvery: 0, optimizer: 'adamw' as const, lr: 0.01, ranks: 2, schedule: '1f1b' as const,
    };
    const ref = await window.pipelab.runSingleDevice(cfg);
    const rep = await window.pipelab.run({ ...cfg, ep: 2 }, { readWeights: true });
    let maxWeight = 0;
    for (const k of Object.keys(ref.params)) {
      const a = rep.weights![k], b = ref.params[k];
      let num = 0, den = 0;
      for (let i = 0; i < b.length; i++) {
        num += (a[i] - b[i]) ** 2;
        den += b[i] ** 2;
      }
      maxWeight = Math.max(maxWeight, Math.sqrt(num / den));
    }
    const lanes = [...new Set(rep.timeline.intervals.filter((iv) => iv.coll === 'ep-all-to-all').map((iv) => `${iv.rank}.${iv.epRank ?? 0}`))].sort();
    return { ref: ref.losses, losses: rep.losses, maxWeight, lanes, weights: Object.keys(rep.weights!).length, refWeights: Object.keys(ref.params).length };
  });
  expect(r.weights).toBe(r.refWeights);
  r.losses.forEach((l, i) => expect(Math.abs(l - r.ref[i]) / r.ref[i]).toBeLessThan(1e-5));
  expect(r.maxWeight).toBeLessThan(1e-5);
  expect(r.lanes).toEqual(['0.0', '0.1', '1.0', '1.1']);
  // The page's own run: the measured timeline's lanes and the all-to-alls in its legend.
  await page.getByRole('button', { name: '▶ Run' }).click();
  await expect(page.getByRole('group', { name: /measured timeline, 2 ranks × 2 expert-parallel workers = 4 workers/ })).toBeVisible({ timeout: 180_000 });
  await expect(page.getByRole('list', { name: 'Timeline legend' })).toContainText('ep all-to-all');
  // Its expert load: each block's experts by worker, the tokens each worker received (the kept choices of its
  // experts) and each worker's ep wait; the all-to-alls' waits striped, named in the legend.
  await expect(page.getByTestId('moe-ep-worker')).toHaveCount(4);
  await expect(page.getByRole('list', { name: 'Timeline legend' })).toContainText('waiting for the slowest member of its ep group');
  const maps = await page.getByTestId('moe-load-layer').evaluateAll((figs) =>
    figs.map((f) => {
      const kept = [...f.querySelectorAll<HTMLElement>('td.moe-cell[data-expert]')].reduce((a, td) => a + Number(td.dataset.routed) - Number(td.dataset.dropped), 0);
      const rows = [...f.querySelectorAll<HTMLElement>('[data-testid="moe-ep-worker"]')];
      return { kept, got: rows.reduce((a, tr) => a + Number(tr.dataset.received), 0), owners: f.querySelectorAll('th.moe-owner').length, waits: rows.map((tr) => Number(tr.dataset.waitMs)) };
    }),
  );
  expect(maps).toHaveLength(2);
  for (const m of maps) {
    expect(m.got).toBe(m.kept);
    expect(m.owners).toBe(2);
    for (const w of m.waits) expect(w).toBeGreaterThanOrEqual(0);
  }
});

test('Compare, Experts across workers: dp 2 × pp 2 against ep 2 × pp 2 and DualPipe against 1F1B, measured, the all-to-alls’ share beside the simulator’s, equal losses, a sentence', async ({ page }) => {
  test.setTimeout(300_000);
  await page.goto('./?view=compare&compare.preset=ep&compare.steps=2');
  await page.getByRole('button', { name: '▶ Measure the three runs' }).click();
  const sentence = page.getByTestId('ep-sentence');
  await expect(sentence).toBeVisible({ timeout: 240_000 });
  await expect(sentence).toContainText('At 4 workers, ep 2 × pp 2, 1F1B took');
  await expect(sentence).toContainText('Under DualPipe the step took');
  console.log(`Experts across workers in Chromium: ${await sentence.textContent()}`);
  const cells = async (id: string) => (await page.getByTestId(id).locator('td').allTextContents()).map((t) => t.trim());
  const dp = await cells('ep-row-2-1-1f1b');
  const ep = await cells('ep-row-1-2-1f1b');
  const dual = await cells('ep-row-1-2-dualpipe');
  // Columns: step, simulated, share, own, simulated share, simulated overlapped, final loss. dp has no all-to-all; ep's share is measured and simulated.
  expect(dp[2]).toBe('0.0%');
  for (const row of [ep, dual]) {
    expect(parseFloat(row[2])).toBeGreaterThan(0);
    expect(parseFloat(row[4])).toBeGreaterThan(0);
  }
  // The same micro-batches three ways: float32 in the page, so equal to 1e-5.
  const losses = [dp, ep, dual].map((r) => Number(r[6]));
  for (const l of losses) expect(Math.abs(l - losses[0]) / losses[0]).toBeLessThan(1e-5);
  await expect(page.getByTestId('ep-timeline-1-2-1f1b')).toBeVisible();
});
