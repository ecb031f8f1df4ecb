/** The profiling pass in the browser: one Worker and one WebGPU device per block, read back as a profile that plans. */
import { test, expect } from '@playwright/test';

test('window.pipelab.profile measures every block and the profile plans', async ({ page }) => {
  test.setTimeout(240_000);
  page.on('pageerror', (e) => console.log('pageerror:', e.message));
  await page.goto('./');
  await page.waitForFunction(() => !!window.pipelab);
  const profile = await page.evaluate(async () => {
    const cfg = { ...window.pipelab.defaultConfig(), layers: 3, hidden: 32, batchSize: 64, microbatches: 4, steps: 2, evalEvery: 0 };
    return window.pipelab.profile(cfg);
  });
  const { parseProfile } = await import('../src/plan/profile.ts');
  const { planPartition } = await import('../src/plan/partition.ts');
  expect(parseProfile(profile)).toEqual(profile);
  expect(profile.blocks.length).toBeGreaterThanOrEqual(4);
  expect(profile.comm).toHaveLength(profile.blocks.length - 1);
  for (const b of profile.blocks) {
    expect(b.F).toBeGreaterThan(0);
    expect(b.I + b.W).toBeGreaterThan(0);
    expect(b.heldBytes).toBeGreaterThan(0);
  }
  expect(profile.source).toMatch(/measured on .* \((GPU timestamps|wall time)\), 16 rows per micro-batch/);
  expect(planPartition(profile, 2).ranges).toHaveLength(2);
  expect(await page.evaluate(() => window.pipelab.liveWorkers())).toBe(0);
});
