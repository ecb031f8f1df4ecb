/**
 * Checkpoints in the browser's own storage (IndexedDB, src/run-state/idb-shelf.ts)
 * through window.pipelab.checkpoints: files of the float64 reference stored,
 * listed, read back byte for byte and decoded, the last three saves of a
 * configuration kept, still there after a reload; a damaged file refused and
 * nothing stored; storage full (a quota set through the DevTools protocol) and
 * storage refused (IndexedDB throwing as in private browsing) reported with a
 * message, what was stored unchanged.
 */
import type { Page } from '@playwright/test';
import { test, expect } from './page-errors.ts';

async function open(page: Page): Promise<void> {
  await page.goto('./');
  await page.waitForFunction(() => !!window.pipelab);
}

/** A tiny spiral run (over the default configuration): its files are a few kB, its reference steps milliseconds. */
const TINY = { hidden: 4, steps: 10, evalEvery: 0 };

test('stored, listed, read back equal, the last three kept, still there after a reload; a damaged file refused', async ({ page }) => {
  await open(page);
  const r = await page.evaluate(async (tiny) => {
    const cfg = { ...window.pipelab.defaultConfig(), ...tiny };
    const cp = window.pipelab.checkpoints;
    await cp.remove(cfg);
    const files: Uint8Array[] = [];
    for (const step of [1, 2, 3, 4]) {
      files.push(await cp.reference(cfg, step));
      await cp.store(files.at(-1)!);
    }
    const listed = (await cp.list(cfg)).map((c) => c.step);
    const back = await cp.read(cfg, 4);
    const same = back.length === files[3].length && back.every((b, i) => b === files[3][i]);
    const inspected = await cp.inspect(cfg);
    const bad = Uint8Array.from(files[0]);
    bad[bad.length - 5] ^= 0x40;
    const refused = await cp.store(bad).then(() => 'stored', (e: Error) => e.message);
    const notFound = await cp.inspect(cfg, 1).then(() => 'found', (e: Error) => e.message);
    return { listed, same, inspected, refused, notFound, after: (await cp.list(cfg)).map((c) => c.step) };
  }, TINY);
  expect(r.listed).toEqual([2, 3, 4]);
  expect(r.same).toBe(true);
  expect(r.inspected.stepsDone).toBe(4);
  expect(r.inspected.losses).toHaveLength(4);
  expect(r.inspected.producer).toBe('PipeLab');
  expect(r.refused).toMatch(/^corrupted checkpoint: its checksum is [0-9a-f]{8} but its bytes give [0-9a-f]{8}/);
  expect(r.notFound).toBe('no checkpoint of step 1 is stored for this configuration');
  expect(r.after).toEqual([2, 3, 4]);

  await page.reload();
  await page.waitForFunction(() => !!window.pipelab);
  const again = await page.evaluate(async (tiny) => {
    const cfg = { ...window.pipelab.defaultConfig(), ...tiny };
    const cp = window.pipelab.checkpoints;
    const listed = (await cp.list(cfg)).map((c) => c.step);
    const latest = await cp.inspect(cfg);
    const removed = await cp.remove(cfg);
    return { listed, latest: latest.stepsDone, removed, left: (await cp.list(cfg)).length };
  }, TINY);
  expect(again).toEqual({ listed: [2, 3, 4], latest: 4, removed: 3, left: 0 });
});

test('storage full: the save is refused with a message and the stored checkpoints are unchanged', async ({ page, context }) => {
  await open(page);
  // The default spiral MLP: ~0.2 MB files, well above the database's own bookkeeping.
  const big = { steps: 10, evalEvery: 0 };
  const empty = await page.evaluate(async (patch) => {
    const cfg = { ...window.pipelab.defaultConfig(), ...patch };
    await window.pipelab.checkpoints.remove(cfg);
    return { size: (await window.pipelab.checkpoints.reference(cfg, 1)).length, usage: (await navigator.storage.estimate()).usage ?? 0 };
  }, big);
  const cdp = await context.newCDPSession(page);
  const origin = new URL(page.url()).origin;
  // Room for one file and a half beside what the origin holds now: the second file does not fit.
  await cdp.send('Storage.overrideQuotaForOrigin', { origin, quotaSize: empty.usage + Math.round(1.5 * empty.size) });
  const r = await page.evaluate(async (patch) => {
    const cfg = { ...window.pipelab.defaultConfig(), ...patch };
    const cp = window.pipelab.checkpoints;
    const first = await cp.store(await cp.reference(cfg, 1)).then((i) => `stored step ${i.step}`, (e: Error) => e.message);
    const second = await cp.store(await cp.reference(cfg, 2)).then((i) => `stored step ${i.step}`, (e: Error) => e.message);
    const after = (await cp.list(cfg)).map((c) => c.step);
    const still = await cp.inspect(cfg, 1).then((s) => s.stepsDone, (e: Error) => e.message);
    return { first, second, after, still };
  }, big);
  await cdp.send('Storage.overrideQuotaForOrigin', { origin });
  expect(r.first).toBe('stored step 1');
  expect(r.second).toMatch(/^storage full: the checkpoint of step 2 \(2\d\d\.\d kB\) was not saved: the browser refused the space \(QuotaExceededError\); the stored checkpoints are unchanged/);
  expect(r.after).toEqual([1]);
  expect(r.still).toBe(1);
  // With the quota lifted the same save goes through.
  const lifted = await page.evaluate(async (patch) => {
    const cfg = { ...window.pipelab.defaultConfig(), ...patch };
    const cp = window.pipelab.checkpoints;
    await cp.store(await cp.reference(cfg, 2));
    const steps = (await cp.list(cfg)).map((c) => c.step);
    await cp.remove(cfg);
    return steps;
  }, big);
  expect(lifted).toEqual([1, 2]);
});

test('storage refused (IndexedDB throws, as in private browsing): every call says so, and the page goes on', async ({ page }) => {
  await page.addInitScript(() => {
    IDBFactory.prototype.open = () => {
      throw new DOMException('The user denied permission to access the database.', 'SecurityError');
    };
  });
  await open(page);
  const r = await page.evaluate(async (tiny) => {
    const cfg = { ...window.pipelab.defaultConfig(), ...tiny };
    const cp = window.pipelab.checkpoints;
    const saved = await cp.store(await cp.reference(cfg, 1)).then(() => 'stored', (e: Error) => e.message);
    const listed = await cp.list(cfg).then(() => 'listed', (e: Error) => e.message);
    return { saved, listed, defaults: window.pipelab.defaultConfig().ranks };
  }, TINY);
  expect(r.saved).toMatch(
    /^storage unavailable: the checkpoint of step 1 \([\d.]+ kB\) was not saved: the browser refuses this page's storage \(SecurityError: The user denied permission to access the database\.; private browsing or blocked site data\?\); the stored checkpoints are unchanged$/,
  );
  expect(r.listed).toMatch(/^storage unavailable: the stored checkpoints could not be listed: the browser refuses this page's storage \(SecurityError/);
  expect(r.defaults).toBe(4);
});
