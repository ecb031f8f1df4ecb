/**
 * Simulate at scale with the third axis and full sharding: tp lanes drawn with
 * their all-reduces or, with sequence parallelism, their reduce-scatters and
 * all-gathers (the step and the tp share worked by hand against the closed form), the ZeRO stage chosen in the page, and bad values refused by
 * field, value and rule. Screenshots at 1400 and 390 wide go to
 * test-results/screens/.
 */
import { test, expect, watchErrors } from './page-errors.ts';
import { keepScreenshot } from './screens.ts';

test('Simulate at scale: 1F1B 8 ranks × tp 4 draws 32 lanes with their tp all-reduces, the step and its tp share worked by hand', async ({ page }, info) => {
  const errors = watchErrors(page);
  await page.setViewportSize({ width: 1400, height: 1000 });
  await page.goto('./?view=simulate&sim.ranks=8&sim.microbatches=16&sim.tp=4');
  const plot = page.getByTestId('sim-timeline').getByRole('group');
  await expect(plot).toHaveAttribute('data-lanes', '32');
  // Compute: 32 workers · 16 micro-batches · (F, B); tp: 4 layers · (2 + 2) all-reduces per micro-batch on each worker.
  await expect(plot).toHaveAttribute('data-intervals', String(32 * 16 * 2 + 32 * 16 * 16));
  // Each all-reduce: α 0.01 + (4 − 1) · 1 MB / (100 MB per ms) = 0.04; F = 1/4 + 8 · 0.04 = 0.57, B = 2/4 + 0.32 = 0.82;
  // step (m + p − 1)(F + B) = 23 · 1.39 = 31.97; each rank 16 · 0.64 = 10.24 of it in tp: 32.03%.
  const share = page.getByTestId('sim-tp-share');
  await expect(share.getByRole('cell')).toHaveText(['32.03%', '32.03%']);
  await expect(page.getByRole('row', { name: /Makespan/ }).getByRole('cell')).toHaveText(['31.97', '31.97']);
  await expect(page.getByText(/actions on 32 workers simulated and drawn in/)).toBeVisible();
  await keepScreenshot(page, info, 'simulate-tp4x8');

  // Sequence parallelism: each all-reduce becomes a reduce-scatter and an all-gather of 1/4 of the activation.
  // Per layer 4 forward at α 0.01 + 3 · 0.25 MB / (100 MB per ms) = 0.0175; backward the gather of dy and both
  // LayerNorm outputs 0.0325 and three more at 0.0175: 0.085. 4 layers: F = 0.25 + 0.28, B = 0.5 + 0.34; each stage's
  // LayerNorm gradients summed at its last B, τG = 0.01 + 3 · 16 bytes: 0.01000048. Step 23 · 1.37 + 8 · τG = 31.59;
  // each rank 16 · 0.62 + τG in tp: 31.43%.
  const sp = page.locator('input[name="sim.sequenceParallel"]');
  await sp.check();
  await expect(plot).toHaveAttribute('data-intervals', String(32 * 16 * 2 + 32 * (16 * 32 + 1)));
  await expect(share.getByRole('cell')).toHaveText(['31.43%', '31.43%']);
  await expect(page.getByRole('row', { name: /Makespan/ }).getByRole('cell')).toHaveText(['31.59', '31.59']);
  await expect(page.getByRole('list', { name: 'Timeline legend' })).toContainText('tp reduce-scatter');
  expect(page.url()).toContain('sim.sequenceParallel=true');
  await keepScreenshot(page, info, 'simulate-tp4x8-sp');

  // The field: tp 2 halves the lanes; a value past the limit is refused under the field. tp 1 turns sequence
  // parallelism off with it.
  await page.getByLabel('Tensor parallel (tp)').fill('1');
  await expect(sp).not.toBeChecked();
  await expect(sp).toBeDisabled();
  expect(page.url()).not.toContain('sim.sequenceParallel');
  await page.getByLabel('Tensor parallel (tp)').fill('2');
  await expect(plot).toHaveAttribute('data-lanes', '16');
  await page.getByLabel('Layers per rank').fill('0');
  await expect(page.getByText('must be at least 1')).toBeVisible();
  await page.getByLabel('Layers per rank').fill('4');
  await expect(page.getByText('must be at least 1')).toHaveCount(0);
  // A whole-record rule: interleaved 1F1B cuts a rank into v = 2 stages, 3 layers do not split into them.
  await page.getByLabel('Schedule', { exact: true }).selectOption('interleaved-1f1b');
  await page.getByLabel('Layers per rank').fill('3');
  await expect(page.locator('.config-problem')).toContainText("sim.tpLayers = 3: must be a multiple of the stages a rank's share of the model is cut into (2)");
  await page.getByLabel('Layers per rank').fill('4');
  await expect(page.locator('.config-problem')).toHaveCount(0);
  await page.getByLabel('Schedule', { exact: true }).selectOption('1f1b');

  // ZeRO-3 beside the pipeline: dp 2, the stage chosen in the page; the all-gathers drawn among the lanes.
  await page.getByLabel('Replicas (dp)').fill('2');
  await expect(plot).toHaveAttribute('data-lanes', '32');
  const before = Number(await plot.getAttribute('data-intervals'));
  await page.getByLabel('Sharding (ZeRO)').selectOption('3');
  await expect(page.getByLabel(/Free gathered weights after every action/)).toBeVisible();
  await expect.poll(async () => Number(await plot.getAttribute('data-intervals'))).toBeGreaterThan(before);
  expect(page.url()).toContain('sim.zero=3');
  // Re-sharding after every action is the run configuration's reshard = microbatch, in the link as in the run's.
  await page.getByLabel(/Free gathered weights after every action/).check();
  await expect.poll(() => page.url()).toContain('sim.reshard=microbatch');
  await page.setViewportSize({ width: 390, height: 844 });
  await keepScreenshot(page, info, 'simulate-tp-zero3-phone');
  expect(errors).toEqual([]);
});

test('Simulate at scale: a link with a bad tp or ZeRO value is reported by field, value and rule; an older sim.zero=true is ZeRO-1', async ({ page }) => {
  await page.goto('./?view=simulate&sim.tp=3.5&sim.zero=9');
  await expect(page.getByRole('alert').first()).toContainText('sim.tp = 3.5');
  await expect(page.getByRole('alert').first()).toContainText('sim.zero = 9: must be a ZeRO stage 0, 1, 2 or 3');
  await page.goto('./?view=simulate&sim.dp=2&sim.zero=true');
  await expect(page.getByLabel('Sharding (ZeRO)')).toHaveValue('1');
});

test('Simulate at scale: PipeDream-2BW draws its steps as one stream, the fill and drain paid once, on replicas too; PipeDream drops the replicas it cannot take', async ({ page }, info) => {
  const errors = watchErrors(page);
  await page.setViewportSize({ width: 1400, height: 1000 });
  await page.goto('./?view=simulate&sim.ranks=8&sim.microbatches=16&sim.dp=2&sim.zero=1');
  const plot = page.getByTestId('sim-timeline').getByRole('group');
  await expect(plot).toHaveAttribute('data-lanes', '16');
  await page.getByLabel('Schedule', { exact: true }).selectOption('pipedream-2bw');
  // 2BW keeps its replicas: each stage's all-reduce after each block of m inside the stream, a plain one (no ZeRO).
  await expect(page.getByLabel('Replicas (dp)')).toHaveValue('2');
  await expect(page.getByLabel('Sharding (ZeRO)')).toHaveValue('0');
  await expect(page.getByLabel('Sharding (ZeRO)')).toBeDisabled();
  await expect(plot).toHaveAttribute('data-lanes', '16');
  await expect(page.getByTestId('sim-step')).toContainText('The stream with its all-reduces (units)');
  await expect(page.getByTestId('sim-allreduce')).toContainText('its 4 blocks');
  await expect(page.getByTestId('sim-timeline')).toContainText('the stream with its all-reduces');
  // Its own closed form, 3(S·m + p − 1) + S·A, beside the simulated stream: equal.
  const streamCells = page.getByTestId('sim-step').getByRole('cell');
  await expect(streamCells.nth(1)).toContainText('3(S·m+p−1) + S·A, S = 4');
  expect((await streamCells.nth(1).innerText()).startsWith(await streamCells.nth(0).innerText())).toBe(true);
  // The makespan row is the compute's, as the badge and the closed form count it (the stream with its all-reduces is the row above).
  const makespanCells = page.getByRole('row', { name: /^Makespan/ }).getByRole('cell');
  await expect(makespanCells.nth(0)).toHaveText(await makespanCells.nth(1).innerText());
  await expect(page.getByTestId('badge-makespan')).toHaveText(`${await makespanCells.nth(0).innerText()} u`);
  await expect(page.locator('.config-problem')).toHaveCount(0);
  // PipeDream updates after every backward: one pipeline, and the field says why.
  await page.getByLabel('Schedule', { exact: true }).selectOption('pipedream');
  await expect(page.getByLabel('Replicas (dp)')).toBeDisabled();
  await expect(page.getByText('updates after every backward: its replicas would never hold a point to sum their gradients at')).toBeVisible();
  await expect(plot).toHaveAttribute('data-lanes', '8');
  await page.getByLabel('Schedule', { exact: true }).selectOption('pipedream-2bw');
  await page.getByLabel('Steps in the stream').fill('6');
  await expect(page.getByTestId('sim-timeline')).toContainText('8 ranks × 16 micro-batches × 6 steps, one stream');
  // 8 ranks · 96 micro-batches · (F, B); makespan 3(6 · 16 + 8 − 1) = 309, where 6 flushed 1F1B steps take 6 · 3 · 23 = 414.
  await expect(plot).toHaveAttribute('data-intervals', String(8 * 96 * 2));
  await expect(page.getByRole('row', { name: /Makespan/ }).getByRole('cell')).toHaveText(['309', '309']);
  expect(page.url()).toContain('sim.steps=6');
  // 2BW's rule holds for a step's own m.
  await page.getByLabel('Micro-batches', { exact: true }).fill('4');
  await expect(page.locator('.config-problem')).toContainText('sim.microbatches = 4: PipeDream-2BW needs m ≥ p = 8');
  await page.getByLabel('Micro-batches', { exact: true }).fill('16');
  await expect(page.locator('.config-problem')).toHaveCount(0);
  await keepScreenshot(page, info, 'simulate-2bw-stream');
  expect(errors).toEqual([]);
});

test('Train view: PipeDream\'s Replicas field is fixed at 1 and says why; chosen on replicas, the rule is named and the field left to fix it', async ({ page }) => {
  const errors = watchErrors(page);
  await page.goto('./?schedule=pipedream');
  await expect(page.getByLabel('Replicas (dp)')).toBeDisabled();
  await expect(page.getByText('PipeDream updates after every backward: its replicas would never hold a point to sum their gradients at')).toBeVisible();
  // A link asking for replicas: the rule named, the value put back to 1.
  await page.goto('./?schedule=pipedream&dp=2');
  await expect(page.getByRole('alert').first()).toContainText("dp = 2: pipedream updates each stage's weights after every backward");
  await expect(page.getByLabel('Replicas (dp)')).toHaveValue('1');
  // Choosing PipeDream on 2 replicas: the field stays open, under the run's rule, until set back to 1.
  await page.goto('./?schedule=1f1b&dp=2');
  await page.getByLabel('Schedule', { exact: true }).selectOption('pipedream');
  await expect(page.getByLabel('Replicas (dp)')).toBeEnabled();
  await expect(page.locator('.config-problem, .field-error').first()).toContainText("dp = 2: pipedream updates each stage's weights after every backward");
  await page.getByLabel('Replicas (dp)').fill('1');
  await expect(page.getByLabel('Replicas (dp)')).toBeDisabled();
  // 2BW takes replicas.
  await page.getByLabel('Schedule', { exact: true }).selectOption('pipedream-2bw');
  await expect(page.getByLabel('Replicas (dp)')).toBeEnabled();
  expect(errors).toEqual([]);
});
