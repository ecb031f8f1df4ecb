/**
 * Compare's "what wins here" sweep in the page: the picked schedules simulated
 * over m for the Train model, drawn as two plots with a point per schedule and
 * m; a memory cap leaves schedules out (hollow points, the dashed cap, and
 * "nothing fits" when it is below all); measuring gives the measured winner at
 * the run's m beside the simulated one. Screenshots at 1440 and 390 wide.
 */
import { test, expect } from './page-errors.ts';
import { keepScreenshot } from './screens.ts';

test('what wins here: plotted over m, a cap leaves schedules out, the measured winner beside the simulated one', async ({ page }, info) => {
  test.setTimeout(240_000);
  await page.setViewportSize({ width: 1440, height: 1000 });
  await page.goto('./?view=compare&compare.preset=wins&compare.schedules=gpipe,1f1b,zb-h1&compare.steps=2&hidden=16&ranks=4&layers=7&batchSize=64&microbatches=8');
  await page.waitForFunction(() => !!window.pipelab);
  const panel = page.getByTestId('what-wins');
  await expect(panel).toBeVisible();
  // m = 4, 8, 16, 32 (multiples of p dividing the batch, up to 8p): 3 schedules × 4 m points on each plot.
  await expect(page.getByTestId('wins-step').locator('circle')).toHaveCount(12);
  await expect(page.getByTestId('wins-memory').locator('circle')).toHaveCount(12);
  await expect(page.getByTestId('wins-m-8')).toContainText('(this run)');
  await expect(page.getByTestId('wins-sentence')).toContainText('Simulated with this model');
  // A cap of 1 KiB: nothing holds so little.
  await panel.getByLabel('Memory cap, KiB of activations per rank').fill('1');
  await expect(page.getByTestId('wins-m-8')).toContainText('nothing fits');
  await expect(page.getByTestId('wins-memory-cap')).toHaveCount(1);
  await panel.getByLabel('Memory cap, KiB of activations per rank').fill('0');
  await expect(page.getByTestId('wins-m-8')).not.toContainText('nothing fits');
  await page.getByRole('button', { name: '▶ Measure each' }).click();
  await expect(page.getByTestId('wins-measured')).toContainText(/measured winner (GPipe|1F1B|ZB-H1)/, { timeout: 200_000 });
  await keepScreenshot(page, info, 'compare-wins-1440');
  await page.setViewportSize({ width: 390, height: 844 });
  await keepScreenshot(page, info, 'compare-wins-390');
});
