/**
 * Compare's "ZeRO 0 → 3 at dp = 4" preset on real workers: five runs of the
 * same configuration with each sharding; memory per worker falls kind by kind
 * as the sharding grows (each beside the formula), ZeRO-3 draws all-gathers,
 * and every setting ends with the same loss. Screenshots at 1440 and 390 wide
 * go to test-results/screens/.
 */
import { test, expect } from './page-errors.ts';
import { keepScreenshot } from './screens.ts';

test('Compare preset ZeRO 0 → 3: memory per worker falls, the losses agree, ZeRO-3 gathers', async ({ page }, info) => {
  test.setTimeout(300_000);
  await page.setViewportSize({ width: 1440, height: 1000 });
  await page.goto('./?view=compare&compare.preset=zero&compare.steps=2');
  await page.waitForFunction(() => !!window.pipelab);
  await page.getByRole('button', { name: '▶ Measure the five settings' }).click();
  await expect(page.getByTestId('zero-sentence')).toBeVisible({ timeout: 240_000 });
  const cell = async (row: string, col: number) => page.getByTestId(row).locator('td').nth(col).innerText();
  const kib = (s: string) => {
    const m = /([\d.]+)\s*(B|KiB|MiB)/.exec(s);
    if (!m) throw new Error(`not a size: ${s}`);
    return Number(m[1]) * (m[2] === 'MiB' ? 1024 : m[2] === 'KiB' ? 1 : 1 / 1024);
  };
  const rows = ['zero-row-0-step', 'zero-row-1-step', 'zero-row-2-step', 'zero-row-3-step', 'zero-row-3-microbatch'];
  const w = await Promise.all(rows.map((r) => cell(r, 0).then(kib)));
  const g = await Promise.all(rows.map((r) => cell(r, 1).then(kib)));
  const o = await Promise.all(rows.map((r) => cell(r, 2).then(kib)));
  // Optimizer state: a quarter from ZeRO-1 on; gradients from ZeRO-2; weights from ZeRO-3 (dp = 4).
  expect(o[1] / o[0]).toBeCloseTo(0.25, 1);
  expect(g[2] / g[0]).toBeCloseTo(0.25, 1);
  expect(w[3] / w[0]).toBeCloseTo(0.25, 1);
  expect(w[2]).toBe(w[0]);
  const losses = await Promise.all(rows.map((r) => cell(r, 8).then(Number)));
  for (const l of losses) expect(Math.abs(l - losses[0])).toBeLessThan(1e-4 * Math.abs(losses[0]));
  await expect(page.getByTestId('zero-bars')).toBeVisible();
  await expect(page.getByTestId('zero-timeline-3-microbatch').locator('[data-collective="all-gather"]').first()).toBeVisible();
  await keepScreenshot(page, info, 'compare-zero-1440');
  await page.setViewportSize({ width: 390, height: 844 });
  await keepScreenshot(page, info, 'compare-zero-390');
});
