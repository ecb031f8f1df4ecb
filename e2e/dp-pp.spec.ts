/**
 * The page's second axis outside the Train view: Simulate at scale with
 * dp replicas (8 × 64 = 512 workers drawn at once, the step worked by hand),
 * and Compare's "dp × pp at 8 workers" preset run on real workers (four
 * shapes, four rows of numbers and the sentence that reads them) for a Train
 * model tp cannot split (hidden 63), and its third axis, "dp × tp × pp at 8
 * workers", for the default model (every shape that fits, the tp shares, the
 * sentence on tp's per-layer messages).
 * Screenshots of the preset at 1440 and 390 wide go to test-results/screens/.
 */
import { test, expect, watchErrors } from './page-errors.ts';
import { keepScreenshot } from './screens.ts';

test('Simulate at scale draws 8 replicas × 64 ranks = 512 lanes with the all-reduce, and stays responsive', async ({ page }, info) => {
  const errors = watchErrors(page);
  // The same pipeline without replicas first: its time is the peer the 8 × 64 time is read against.
  await page.goto('./?view=simulate');
  console.log(`1 × 64: ${await page.getByText(/actions simulated and drawn in/).textContent()}`);
  await page.goto('./?view=simulate&sim.dp=8');
  const plot = page.getByTestId('sim-timeline').getByRole('group');
  await expect(plot).toHaveAttribute('data-lanes', '512');
  // Compute: 8 · 64 · 512 · (F, B); collectives: 64 stages · 8 workers · 2(8 − 1) chunk exchanges.
  await expect(plot).toHaveAttribute('data-intervals', String(8 * 64 * 512 * 2 + 64 * 8 * 14));
  // 1F1B p = 64, m = 512: T = 3 · 575 = 1725. Ring over 8 of 100 MB at 1000 MB/s, α = 0.01 ms:
  // A = 2 · 7 · 0.01 + 2 · 7/8 · 100 MB / (1 MB per ms) = 175.14; step = T + A = 1900.14.
  await expect(page.getByTestId('sim-step')).toContainText('1,900');
  await expect(page.getByTestId('sim-allreduce')).toContainText('175.14');
  await expect(page.getByTestId('sim-allreduce-share')).toContainText(`${((175.14 / 1900.14) * 100).toFixed(2)}%`);
  const caption = await page.getByText(/actions on 512 workers simulated and drawn in/).textContent();
  console.log(`8 × 64: ${caption}`);
  await keepScreenshot(page, info, 'simulate-dp8x64');

  // Responsive: the next frame comes, and a change of dp redraws with its lanes.
  const frameMs = await page.evaluate(() => new Promise<number>((res) => { const t0 = performance.now(); requestAnimationFrame(() => res(performance.now() - t0)); }));
  console.log(`8 × 64: next frame after ${frameMs.toFixed(0)} ms`);
  await page.getByLabel('Replicas (dp)').fill('4');
  await expect(plot).toHaveAttribute('data-lanes', '256');

  // A bad value is refused by field, value and rule.
  await page.getByLabel('Bandwidth, MB/s').fill('0');
  await expect(page.locator('.config-problem')).toContainText('sim.arBandwidthMBs = 0: must be greater than 0');
  expect(errors).toEqual([]);
});

test('Compare preset dp × pp at 8 workers: four shapes measured and simulated, and the sentence', async ({ page }, info) => {
  test.setTimeout(600_000);
  const errors = watchErrors(page);
  await page.setViewportSize({ width: 1440, height: 1000 });
  // A hidden width no tp divides: the preset stays dp × pp on its character MLP.
  await page.goto('./?view=compare&compare.preset=dp-pp&compare.steps=2&hidden=63');
  const table = page.getByTestId('dppp-table');
  await expect(table.getByRole('heading')).toHaveText('dp × pp at 8 workers');
  await expect(table.getByRole('row')).toHaveCount(5);
  const go = page.getByRole('button', { name: '▶ Measure the four shapes' });
  await expect(go).toBeEnabled({ timeout: 60_000 });
  const t0 = Date.now();
  await go.click();
  await expect(page.getByTestId('dppp-sentence')).toBeVisible({ timeout: 540_000 });
  console.log(`four shapes measured in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  for (const key of ['1×8', '2×4', '4×2', '8×1']) {
    const cells = await page.getByTestId(`dppp-row-${key}`).getByRole('cell').allTextContents();
    console.log(key, cells.join(' | '));
    // bubble measured, simulated; all-reduce share measured, simulated; step ms measured, simulated; memory.
    expect(cells.slice(1, 5).every((c) => /^\d+\.\d%$/.test(c))).toBe(true);
    expect(cells.slice(5, 7).every((c) => /^\d+(\.\d+)? (ms|s)$/.test(c))).toBe(true);
    expect(cells[7]).toMatch(/^\d+(\.\d+)? (B|KiB|MiB)$/);
  }
  // 1×8 has no all-reduce; every other shape has one.
  const share1x8 = (await page.getByTestId('dppp-row-1×8').getByRole('cell').allTextContents())[3];
  expect(share1x8).toBe('0.0%');
  const share8x1 = (await page.getByTestId('dppp-row-8×1').getByRole('cell').allTextContents())[3];
  expect(Number.parseFloat(share8x1)).toBeGreaterThan(0);
  const sentence = (await page.getByTestId('dppp-sentence').textContent()) ?? '';
  console.log(sentence);
  expect(sentence).toMatch(/^At 8 workers, going from 1×8 to 8×1 (cut|raised) the bubble from \d+\.\d% to \d+\.\d% while the all-reduce (grew|fell) to \d+\.\d% of the step; the fastest was (1×8|2×4|4×2|8×1) at \d+\.\d ms per step\.$/);
  // The sentence quotes the table: the 1×8 row's measured bubble and the 8×1 row's.
  const b1 = (await page.getByTestId('dppp-row-1×8').getByRole('cell').allTextContents())[1];
  const b8 = (await page.getByTestId('dppp-row-8×1').getByRole('cell').allTextContents())[1];
  expect(sentence).toContain(`the bubble from ${b1} to ${b8}`);
  await keepScreenshot(page, info, 'compare-dppp-1440');
  await page.setViewportSize({ width: 390, height: 844 });
  await page.waitForTimeout(300);
  await keepScreenshot(page, info, 'compare-dppp-390');
  expect(errors).toEqual([]);
});

test('Compare preset dp × tp × pp at 8 workers: the default model\'s shapes measured and simulated, and the sentence', async ({ page }, info) => {
  test.setTimeout(600_000);
  const errors = watchErrors(page);
  await page.setViewportSize({ width: 1440, height: 1000 });
  await page.goto('./?view=compare&compare.preset=dp-pp&compare.steps=2');
  const table = page.getByTestId('dppp-table');
  await expect(table.getByRole('heading')).toHaveText('dp × tp × pp at 8 workers');
  // The spiral MLP (4 blocks, hidden 64): every dp × tp × pp = 8 with tp ∈ {1, 2, 4} and pp ≤ 4.
  const keys = ['1×2×4', '1×4×2', '2×1×4', '2×2×2', '2×4×1', '4×1×2', '4×2×1', '8×1×1'];
  await expect(table.getByRole('row')).toHaveCount(keys.length + 1);
  await expect(page.getByTestId('dppp-skipped')).toContainText('1×1×8: pp = 8 is more than the model\'s 4 blocks');
  const go = page.getByRole('button', { name: `▶ Measure the ${keys.length} shapes` });
  await expect(go).toBeEnabled({ timeout: 60_000 });
  const t0 = Date.now();
  await go.click();
  await expect(page.getByTestId('dppp-sentence')).toBeVisible({ timeout: 540_000 });
  console.log(`${keys.length} shapes measured in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  const cellsOf = async (key: string) => page.getByTestId(`dppp-row-${key}`).getByRole('cell').allTextContents();
  for (const key of keys) {
    const cells = await cellsOf(key);
    console.log(key, cells.join(' | '));
    // bubble, all-reduce share and tp share, each measured and simulated; step ms measured, simulated; memory.
    expect(cells.slice(1, 7).every((c) => /^\d+\.\d%$/.test(c))).toBe(true);
    expect(cells.slice(7, 9).every((c) => /^\d+(\.\d+)? (ms|s)$/.test(c))).toBe(true);
    expect(cells[9]).toMatch(/^\d+(\.\d+)? (B|KiB|MiB)$/);
    const [dp, tp] = key.split('×').map(Number);
    // No tp: no tp share; tp: some. No replicas: no all-reduce.
    if (tp === 1) expect(cells[5]).toBe('0.0%');
    else expect(Number.parseFloat(cells[5])).toBeGreaterThan(0);
    if (dp === 1) expect(cells[3]).toBe('0.0%');
  }
  const sentence = (await page.getByTestId('dppp-sentence').textContent()) ?? '';
  console.log(sentence);
  expect(sentence).toMatch(/^At 8 workers the fastest shape was \d+×\d+×\d+ \(dp×tp×pp\) at \d+\.\d ms per step/);
  expect(sentence).toMatch(/of a collective's time is its fixed cost: (latency-bound: tp needs fast links, not wide ones|bandwidth-bound)\./);
  // The fastest shape it names is the row with the least measured step.
  const steps = await Promise.all(keys.map(async (k) => ({ k, ms: (await cellsOf(k))[7] })));
  const toMs = (t: string) => (t.endsWith(' s') ? 1000 * Number.parseFloat(t) : Number.parseFloat(t));
  const best = steps.reduce((a, b) => (toMs(b.ms) < toMs(a.ms) ? b : a));
  expect(sentence).toContain(`the fastest shape was ${best.k} `);
  await keepScreenshot(page, info, 'compare-dptppp-1440');
  await page.setViewportSize({ width: 390, height: 844 });
  await page.waitForTimeout(300);
  await keepScreenshot(page, info, 'compare-dptppp-390');
  expect(errors).toEqual([]);
});
