/**
 * `npm run dev` serves the page through Vite's dev server, where React runs in
 * StrictMode (effects mount, unmount and mount again). The page must work
 * there too: the timeline draws, and a short run completes.
 */
import type { Page } from '@playwright/test';
import { test, expect } from './page-errors.ts';

const devUrl = `http://127.0.0.1:${Number(process.env.PIPELAB_E2E_PORT ?? 4317) + 1}/`;

/** Pixels of the timeline canvas brighter than its dark background. */
function litPixels(page: Page): Promise<number> {
  return page.evaluate(() => {
    const c = document.querySelector<HTMLCanvasElement>('canvas');
    if (!c || c.width === 0) return 0;
    const d = c.getContext('2d', { willReadFrequently: true })!.getImageData(0, 0, c.width, c.height).data;
    let n = 0;
    for (let i = 0; i < d.length; i += 4) if (d[i] + d[i + 1] + d[i + 2] > 200) n++;
    return n;
  });
}

test('the dev server page draws its timeline and runs', async ({ page }) => {
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(`${devUrl}?steps=3`);
  await page.waitForFunction(() => !!window.pipelab);
  // Before any run the timeline shows the simulator's prediction.
  await expect.poll(() => litPixels(page), { timeout: 10_000 }).toBeGreaterThan(1000);
  await page.getByRole('button', { name: /Run/ }).first().click();
  await expect(page.getByRole('status').first()).toContainText('Done', { timeout: 120_000 });
  await expect.poll(() => litPixels(page), { timeout: 10_000 }).toBeGreaterThan(1000);
  expect(errors).toEqual([]);
});
