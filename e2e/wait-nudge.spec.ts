/**
 * Nudged waits in a browser page (src/gpu/wait-nudge.ts; Node's tests use setImmediate, a page a MessageChannel):
 * the bench's sync suite, its smallest form. A nudged wait sends empty submits while it is pending, an un-nudged one
 * none, and every wait ends. Behaviour only: no timing is asserted (bench/GPU.md has the H200's figures).
 */
import { test, expect } from './page-errors.ts';

test('in a page, a wait nudged every 0.25 ms sends empty submits while pending and ends; one not nudged sends none', async ({ page }) => {
  test.setTimeout(120_000);
  await page.goto('./bench.html');
  await page.waitForFunction(() => window.pipelabBench?.ready === true, null, { timeout: 60_000 });
  const rows = await page.evaluate(() => window.pipelabBench.syncLatency({ repeats: 1, intervals: [0, 0.25] }));
  // 2 intervals with one device, then 0 and the default (0.25) with a second device; 4 works × 2 waits each.
  expect(rows).toHaveLength(32);
  for (const r of rows) {
    expect(r.medianMs, `${r.work} ${r.wait} every ${r.nudgeMs}`).toBeGreaterThan(0);
    if (r.nudgeMs === 0) expect(r.nudgesPerWait).toBe(0);
  }
  // The longest work's waits (4 matmuls: milliseconds on SwiftShader) are nudged several times each.
  for (const r of rows.filter((x) => x.nudgeMs === 0.25 && x.work.startsWith('4 ×'))) expect(r.nudgesPerWait, `${r.wait}, ${r.devices} devices`).toBeGreaterThan(1);
});
