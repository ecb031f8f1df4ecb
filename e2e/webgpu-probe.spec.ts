import { test, expect } from './page-errors.ts';

test('the page loads and a dedicated worker gets its own WebGPU device', async ({ page }) => {
  await page.goto('./');
  await expect(page.getByRole('heading', { name: 'PipeLab' })).toBeVisible();
  const info = await page.evaluate(async () => {
    const src = `self.onmessage = async () => {
      const a = await navigator.gpu.requestAdapter();
      const d = await a.requestDevice();
      postMessage({ ok: !!d, limit: d.limits.maxComputeInvocationsPerWorkgroup });
    };`;
    const w = new Worker(URL.createObjectURL(new Blob([src], { type: 'text/javascript' })));
    const r = await new Promise<{ ok: boolean; limit: number }>((res) => { w.onmessage = (e) => res(e.data); w.postMessage(0); });
    w.terminate();
    return r;
  });
  expect(info.ok).toBe(true);
  expect(info.limit).toBeGreaterThanOrEqual(64);
});
