/** The Plan panel plans a real model on N devices: the 64-device GPT's candidates and its winner drawn at scale; bad input named. */
import { test, expect } from '@playwright/test';

test('plans a 64-device GPT in the page, draws the winner on 64 lanes, and names bad input', async ({ page }) => {
  test.setTimeout(180_000);
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto('./?view=simulate');
  const panel = page.getByTestId('mesh-plan-panel');
  await panel.getByText('Plan a real model on N devices').click();
  await panel.getByTestId('mesh-plan-run').click();
  const rows = panel.getByTestId('mesh-plan-candidates').locator('tbody tr');
  await expect(rows).toHaveCount(10);
  // The planner's own winner for these defaults (64 H100s, 8 per node, batch 512): the page shows what the CLI prints.
  const { planMesh } = await import('../src/plan/mesh-plan.ts');
  const { DEVICE_PRESETS } = await import('../src/plan/device.ts');
  const best = planMesh({ model: { layers: 32, hidden: 4096, heads: 32, seq: 2048, vocab: 50257, bytesPerElement: 2 }, device: DEVICE_PRESETS.h100, devices: 64, globalBatch: 512 }).candidates[0];
  await expect(rows.first()).toContainText(`${best.dp} × ${best.pp}`);
  await expect(rows.first()).toContainText(best.schedule);
  const plot = panel.getByTestId('mesh-plan-timeline').getByRole('group');
  await expect(plot).toHaveAttribute('data-lanes', String(best.dp * best.pp));
  if (best.schedule === '1f1b' && best.pp === 1) {
    // 64 workers × 2m compute intervals, and on each 2(dp − 1) ring exchanges (reduce-scatter, all-gather).
    await expect(plot).toHaveAttribute('data-intervals', String(best.dp * 2 * best.microbatches + best.dp * 2 * (best.dp - 1)));
  }

  await panel.getByLabel('Attention heads').fill('3');
  await panel.getByTestId('mesh-plan-run').click();
  await expect(panel.getByRole('alert')).toContainText('model.heads = 3: must divide hidden = 4096 evenly');
  await panel.getByLabel('Attention heads').fill('32');
  await panel.getByLabel('Memory per device (GB)').fill('1');
  await panel.getByTestId('mesh-plan-run').click();
  await expect(panel.getByRole('alert')).toContainText('device.memoryGB = 1: no layout of the 64 devices fits in it');
  await expect(panel.getByRole('alert')).toContainText('the smallest memory that would fit is');
  expect(errors).toEqual([]);
});
