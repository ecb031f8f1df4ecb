/**
 * The benchmark's GPT step, ours beside TF.js's WebGPU backend in the bench
 * page (headless Chromium): two steps of the page's default GPT from the same
 * weights on the same batches must give the same losses to 1e-4 relative (the
 * first step is the forward alone; the second follows one Adam update on each
 * side), and the first loss must be near ln 27, the loss of a near-uniform
 * prediction over the 27 characters (weights start at N(0, 0.02)).
 * Behaviour only: no timing is asserted.
 */
import { test, expect } from './page-errors.ts';

test('the GPT step in TF.js (attention from tf ops) matches ours: 2 steps, losses to 1e-4 relative', async ({ page }) => {
  test.setTimeout(300_000);
  await page.goto('./bench.html');
  await page.waitForFunction(() => window.pipelabBench?.ready === true, null, { timeout: 60_000 });
  const r = await page.evaluate(() => window.pipelabBench.training({ dataset: 'names', model: 'gpt', warmup: 0, steps: 2 }));
  console.log(`losses ours ${r.ours.losses.join(', ')}; TF.js ${r.tfjs.losses.join(', ')}; max rel. diff ${r.maxLossRelDiff.toExponential(2)}`);
  expect(r.model).toBe('gpt-names');
  expect(r.ours.losses).toHaveLength(2);
  expect(r.tfjs.losses).toHaveLength(2);
  expect(Math.abs(r.ours.losses[0] - Math.log(27))).toBeLessThan(0.05);
  expect(r.ours.losses[1]).not.toBe(r.ours.losses[0]);
  for (let i = 0; i < 2; i++) {
    const rel = Math.abs(r.ours.losses[i] - r.tfjs.losses[i]) / Math.abs(r.tfjs.losses[i]);
    expect(rel, `step ${i}: ours ${r.ours.losses[i]}, TF.js ${r.tfjs.losses[i]}`).toBeLessThan(1e-4);
  }
  expect(r.maxLossRelDiff).toBeLessThan(1e-4);
  expect(r.tokensPerSample).toBeGreaterThan(1);
});
