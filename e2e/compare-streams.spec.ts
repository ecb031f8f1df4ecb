/**
 * Compare with the asynchronous schedules: PipeDream and PipeDream-2BW run the measured steps as one stream (no flush
 * between them), simulated and measured over all of them beside the synchronous schedules' step; their makespan is
 * the stream's ÷ its steps, and the what-wins sweep takes them by their stream's steady step. And DualPipe beside
 * 1F1B: its step with the sum over its copies, which its compute makespan leaves out.
 */
import { readFileSync } from 'node:fs';
import { test, expect, watchErrors } from './page-errors.ts';
import { keepScreenshot } from './screens.ts';

test('Compare measures PipeDream-2BW beside 1F1B: the stream of the measured steps, its makespan ÷ steps, its own time scale', async ({ page }, info) => {
  test.setTimeout(180_000);
  const errors = watchErrors(page);
  await page.setViewportSize({ width: 1440, height: 1000 });
  await page.goto('./?view=compare&compare.schedules=1f1b,pipedream-2bw&compare.steps=3&hidden=16');
  await page.waitForFunction(() => !!window.pipelab);
  const row = page.getByTestId('compare-row-pipedream-2bw');
  // Simulated over the stream of 3 × 8 micro-batches on 4 ranks: 1F1B's closed form over all 24, 3/27.
  await expect(row.getByRole('cell').nth(1)).toHaveText('11.1%');
  await expect(row.getByRole('cell').nth(2)).toHaveText('11.1%');
  await expect(page.getByTestId('compare-row-1f1b').getByRole('cell').nth(1)).toHaveText('27.3%');
  const panel = page.getByTestId('compare-pipedream-2bw');
  await expect(panel).toContainText('PipeDream-2BW (async, 2 weight versions) · 3 steps, one stream');
  await expect(panel).toContainText('One stream of 3 steps × 8 micro-batches, opened on its first step; Fit draws all.');

  await page.getByRole('button', { name: '▶ Measure each' }).click();
  await expect(row).toContainText('the stream', { timeout: 150_000 });
  await expect(row).toContainText('stream ÷ 3');
  // The makespan shown is the stream's (its panel's badge, the measured window) ÷ 3.
  const badge = await panel.getByText(/ms makespan/).first().innerText();
  const stream = Number(/([\d.,]+) ms makespan/.exec(badge)?.[1].replace(/,/g, ''));
  const perStep = Number(/([\d.,]+) ms/.exec(await row.getByRole('cell').nth(5).innerText())?.[1].replace(/,/g, ''));
  expect(Math.abs(perStep - stream / 3)).toBeLessThanOrEqual(0.06 * perStep);
  await expect(panel).toContainText('bubble, stream drawn');
  // Samples per second and a loss of its own (stale updates), measured.
  // Shown for a reader ("1,021" samples/s): the thousands separator is not part of the number.
  const shown = async (i: number) => Number((await row.getByRole('cell').nth(i).innerText()).replace(/,/g, ''));
  expect(await shown(7)).toBeGreaterThan(0);
  expect(await shown(8)).toBeGreaterThan(0);
  await keepScreenshot(page, info, 'compare-2bw-stream');

  // The table leaves the tab as CSV: a row per schedule with the figures shown and the configuration each ran.
  const [file] = await Promise.all([page.waitForEvent('download'), page.getByTestId('compare-csv').click()]);
  expect(file.suggestedFilename()).toBe('pipelab-compare-spiral-4x8.csv');
  const csv = readFileSync((await file.path())!, 'utf8').trim().split('\n');
  const header = csv[0].split(',');
  expect(csv).toHaveLength(3);
  const rowOf = (name: string) => Object.fromEntries(csv.find((l) => l.startsWith(`${name},`))!.split(',').map((v, i) => [header[i], v]));
  const bw = rowOf('pipedream-2bw');
  expect(bw.status).toBe('done');
  expect(Number(bw.bubble_simulated)).toBeCloseTo(3 / 27, 9);
  expect(Math.abs(Number(bw.makespan_ms) - perStep)).toBeLessThanOrEqual(0.06 * perStep);
  expect([bw.ranks, bw.microbatches, bw.steps]).toEqual(['4', '8', '3']);
  // Every row's steps are the 3 measured, 1F1B's too (the Train view's 300 are not what Compare ran).
  expect(rowOf('1f1b').steps).toBe('3');

  // The sweep over m takes a stream by its steady step (no fill or drain of its own), and says what its win means.
  await page.goto('./?view=compare&compare.preset=wins&compare.schedules=1f1b,pipedream&hidden=16');
  await expect(page.getByTestId('what-wins')).toContainText("PipeDream (async) never flushes: its step is the stream's steady state");
  await expect(page.getByTestId('wins-step').locator('g[data-schedule]')).toHaveCount(2);
  // Never slower than 1F1B at any m: it wins everywhere the cap allows.
  await expect(page.getByTestId('wins-sentence')).toHaveText('Simulated with this model\'s costs: PipeDream (async) from m = 4.');
  expect(errors).toEqual([]);
});

test('Compare on replicas: PipeDream cannot run there, and its row says so beside 2BW and 1F1B, its timeline naming the rule', async ({ page }) => {
  const errors = watchErrors(page);
  await page.goto('./?view=compare&dp=2&compare.schedules=1f1b,pipedream,pipedream-2bw');
  await expect(page.getByTestId('compare-row-pipedream')).toContainText('cannot run: see its timeline');
  await expect(page.getByTestId('compare-pipedream')).toContainText("dp = 2: pipedream updates each stage's weights after every backward");
  await expect(page.getByTestId('compare-row-pipedream-2bw')).not.toContainText('cannot run');
  await expect(page.getByTestId('compare-row-1f1b')).not.toContainText('cannot run');
  expect(errors).toEqual([]);
});

test('Compare measures DualPipe beside 1F1B: the step with its copies’ sum stands beside the compute makespan', async ({ page }) => {
  test.setTimeout(180_000);
  const errors = watchErrors(page);
  await page.goto('./?view=compare&compare.schedules=1f1b,dualpipe&compare.steps=2&hidden=16');
  await page.waitForFunction(() => !!window.pipelab);
  await page.getByRole('button', { name: '▶ Measure each' }).click();
  const dual = page.getByTestId('compare-row-dualpipe');
  const one = page.getByTestId('compare-row-1f1b');
  await expect(page.getByTestId('step-dualpipe')).not.toHaveText('—', { timeout: 150_000 });
  await expect(page.getByTestId('step-1f1b')).not.toHaveText('—', { timeout: 150_000 });
  const figure = async (row: typeof dual, cell: number) => Number(/([\d.,]+) ms/.exec(await row.getByRole('cell').nth(cell).innerText())?.[1].replace(/,/g, ''));
  // DualPipe's step ends with the sum of its copies' gradients, after its compute; 1F1B's has no collective to add.
  expect(await figure(dual, 6)).toBeGreaterThan(await figure(dual, 5));
  expect(await figure(one, 6)).toBe(await figure(one, 5));
  await expect(page.getByTestId('compare-table')).toContainText('Step with collectives: the makespan and what follows the compute');
  // The badge of DualPipe's panel says the same step.
  const badge = await page.getByTestId('compare-dualpipe').getByText(/ms step with the copies’ sum/).first().innerText();
  expect(Number(/([\d.,]+) ms step/.exec(badge)?.[1].replace(/,/g, ''))).toBeCloseTo(await figure(dual, 6), 0);
  expect(errors).toEqual([]);
});
