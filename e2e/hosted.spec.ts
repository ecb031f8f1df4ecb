/**
 * The hosted static demo: dist/ works from any static host under any
 * sub-path, and the page asks nothing of any other origin.
 */
import { test, expect } from './page-errors.ts';
import { serveDist, type Served } from '../src/bench/driver/static-server.ts';

const dist = process.env.PIPELAB_DIST ?? 'dist';
let server: Served;

test.beforeAll(async () => {
  server = await serveDist(dist, 'some/deep/sub-path');
});
test.afterAll(async () => {
  await server?.close();
});

test('dist/ served under a sub-path by a plain static server runs a pipeline', async ({ page }) => {
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(m.text());
  });
  const failed: string[] = [];
  page.on('requestfailed', (r) => failed.push(r.url()));
  page.on('response', (r) => {
    if (r.status() >= 400) failed.push(`${r.status()} ${r.url()}`);
  });
  await page.goto(server.url);
  await page.waitForFunction(() => !!window.pipelab);
  const report = await page.evaluate(async () => {
    const cfg = { ...window.pipelab.defaultConfig(), hidden: 8, batchSize: 16, microbatches: 4, steps: 2, evalEvery: 0 };
    const r = await window.pipelab.run(cfg);
    return { losses: r.losses, lanes: new Set(r.timeline.intervals.map((iv) => iv.rank)).size };
  });
  expect(report.losses).toHaveLength(2);
  expect(report.lanes).toBe(4);
  expect(failed).toEqual([]);
  expect(errors).toEqual([]);
});

test('the page makes no request to any other origin, and its CSP forbids it', async ({ page }) => {
  const origin = new URL(server.url).origin;
  const foreign: string[] = [];
  page.on('request', (r) => {
    const u = new URL(r.url());
    if (u.protocol !== 'data:' && u.protocol !== 'blob:' && u.origin !== origin) foreign.push(r.url());
  });
  await page.goto(server.url);
  await page.waitForFunction(() => !!window.pipelab);
  await page.evaluate(async () => {
    await window.pipelab.run({ ...window.pipelab.defaultConfig(), hidden: 8, batchSize: 16, microbatches: 4, steps: 1, evalEvery: 0 });
  });
  const csp = await page.locator('meta[http-equiv="Content-Security-Policy"]').getAttribute('content');
  expect(csp).toContain("default-src 'self'");
  expect(csp).toContain("connect-src 'self'");
  // The policy is enforced: the browser itself refuses a fetch to another origin
  // (a CSP violation event, not merely a network error on a machine without network).
  const violation = await page.evaluate(async () => {
    const seen = new Promise<string>((resolve) =>
      document.addEventListener('securitypolicyviolation', (e) => resolve(`${e.effectiveDirective} ${e.blockedURI}`), { once: true }),
    );
    fetch('https://example.com/x').catch(() => {});
    return Promise.race([seen, new Promise<string>((r) => setTimeout(() => r('no violation'), 5000))]);
  });
  expect(violation).toBe('connect-src https://example.com/x');
  expect(foreign).toEqual([]);
});
