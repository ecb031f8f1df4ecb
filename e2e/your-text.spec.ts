/**
 * "Your text" in the page, in headless Chromium (SwiftShader): a file picked
 * (setInputFiles) trains the GPT on 4 pipelined workers, the held-out loss
 * falls and sampled text is shown, no request leaves the page; bad files are
 * refused naming the file and the rule; a large file is read without freezing
 * the page; a link names its text by hash and refuses another file; the
 * example loads from its preset; and on SwiftShader the default GPT stays small,
 * saying why.
 */
import { mkdtempSync, writeFileSync, openSync, ftruncateSync, closeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import type { Page, TestInfo } from '@playwright/test';
import { test, expect } from './page-errors.ts';
import { keepScreenshot } from './screens.ts';

const dir = mkdtempSync(join(tmpdir(), 'pipelab-text-'));

function file(name: string, data: string | Uint8Array): string {
  const p = join(dir, name);
  writeFileSync(p, data);
  return p;
}

/** A small text whose lines repeat with variations (a model learns its letters and words in a few steps). */
function shipLog(lines: number): string {
  const words = ['the', 'whale', 'sea', 'ship', 'mast', 'harpoon', 'captain', 'sails', 'wind', 'deck'];
  let s = '';
  for (let i = 0; i < lines; i++) s += `Day ${i}: the ${words[i % 10]} and the ${words[(i * 7) % 10]} by the ${words[(i * 3) % 10]}.\n`;
  return s;
}

const SMALL_GPT = 'model=gpt&layers=3&heads=2&width=16&blockSize=16&ranks=4&microbatches=4&batchSize=16&schedule=1f1b&lr=0.01';

/** The page after a text run, at a desktop and a phone width (kept under test-results/screens/). */
async function shoot(page: Page, info: TestInfo): Promise<void> {
  for (const [width, height] of [[1440, 900], [390, 844]] as const) {
    await page.setViewportSize({ width, height });
    await keepScreenshot(page, info, `your-text-${width}`);
  }
}

async function pick(page: Page, path: string): Promise<void> {
  await page.getByTestId('text-file').setInputFiles(path);
}

test('a picked text trains the GPT on 4 pipelined workers: held-out loss falls, samples of the text appear, nothing leaves the page', async ({ page, baseURL }, info) => {
  test.setTimeout(300_000);
  const origin = new URL(baseURL as string).origin;
  const foreign: string[] = [];
  page.on('request', (r) => {
    const u = new URL(r.url());
    if (u.protocol !== 'data:' && u.protocol !== 'blob:' && u.origin !== origin) foreign.push(r.url());
  });
  const text = shipLog(400);
  await page.goto(`./?dataset=text&${SMALL_GPT}&steps=8&evalEvery=4`);
  await pick(page, file('ship-log.txt', text));
  await expect(page.getByTestId('text-loaded')).toContainText(`ship-log.txt: ${text.length.toLocaleString('en-US')} characters, ${new Set(text).size} symbols`);
  // The link's fields held while the text was asked for, and the text is named by its hash in the link.
  await expect(page.getByLabel('Heads', { exact: true })).toHaveValue('2');
  await expect(page.getByLabel('Steps', { exact: true })).toHaveValue('8');
  await expect(page).toHaveURL(/textHash=[0-9a-f]{16}/);
  await expect(page.getByTestId('url-problems')).toHaveCount(0);

  // Steps per second before Run.
  await page.getByRole('button', { name: 'Estimate steps per second' }).click();
  await expect(page.getByTestId('speed-estimate')).toContainText(/About [0-9.]+ steps\/s on this device .*: 8 steps ≈/, { timeout: 120_000 });

  await page.getByRole('button', { name: '▶ Run' }).click();
  const samples = page.getByRole('list', { name: 'Sampled text' });
  await expect(samples.locator('li')).toHaveCount(3, { timeout: 240_000 });
  await expect(page.getByTestId('text-samples')).toContainText('After 8 steps', { timeout: 120_000 });
  // Every prompt is a piece of the text; every continuation is 160 characters of its symbols.
  const items = await samples.locator('li').evaluateAll((lis) => lis.map((li) => ({ prompt: li.querySelector('.prompt')?.textContent ?? '', cont: li.querySelector('.continuation')?.textContent ?? '' })));
  const alphabet = new Set(text);
  for (const it of items) {
    expect(text).toContain(it.prompt);
    expect(it.prompt).toHaveLength(16);
    expect([...it.cont]).toHaveLength(160);
    for (const ch of it.cont) expect(alphabet.has(ch), JSON.stringify(ch)).toBe(true);
  }
  // On 4 workers; the held-out loss fell from the initial weights' (step 0, near ln V) to the trained ones'.
  await expect(page.getByText('1F1B · 4 ranks × 4 micro-batches')).toBeVisible();
  await expect(page.getByTestId('loss-panel')).toHaveAttribute('data-validation', /"step":7/, { timeout: 60_000 });
  const vals = JSON.parse((await page.getByTestId('loss-panel').getAttribute('data-validation')) ?? '[]') as { step: number; loss: number }[];
  expect(vals[0].step).toBe(0);
  expect(vals.at(-1)?.step).toBe(7);
  expect(Math.abs(vals[0].loss - Math.log(alphabet.size))).toBeLessThan(0.1);
  expect(vals.at(-1)!.loss).toBeLessThan(vals[0].loss - 0.3);
  // Temperature: a lower one draws again.
  await page.getByLabel('Sampling temperature').fill('0.3');
  await expect(page.getByText('Temperature 0.30')).toBeVisible();
  await shoot(page, info);
  expect(foreign).toEqual([]);
});

test('a text run at dp = 2 × 2 ranks (4 workers, the gradients all-reduced) trains from a link that names the mesh', async ({ page }) => {
  test.setTimeout(240_000);
  const text = shipLog(300);
  await page.goto(`./?dataset=text&model=gpt&layers=3&heads=2&width=16&blockSize=16&dp=2&ranks=2&microbatches=2&batchSize=16&schedule=1f1b&lr=0.01&steps=4&evalEvery=0`);
  await pick(page, file('ship-log.txt', text));
  await expect(page.getByTestId('text-loaded')).toContainText('ship-log.txt');
  await expect(page.getByLabel('Replicas (dp)', { exact: true })).toHaveValue('2');
  await page.getByRole('button', { name: '▶ Run' }).click();
  await expect(page.getByTestId('allreduce-step')).toBeVisible({ timeout: 180_000 });
  await expect(page.getByTestId('run-timeline').locator('.timeline-plot')).toHaveAttribute('aria-label', /2 replicas × 2 ranks = 4 workers/);
  await expect(page.getByTestId('text-samples')).toContainText('After 4 steps', { timeout: 60_000 });
  await expect(page.getByRole('list', { name: 'Sampled text' }).locator('li')).toHaveCount(3);
});

test('window.pipelab: loadText keeps a text; a run on it on 4 WebGPU workers equals one device; a bad text is refused naming it and the rule', async ({ page }) => {
  test.setTimeout(240_000);
  await page.goto('./?dataset=spiral');
  const text = shipLog(300);
  const r = await page.evaluate(async (text) => {
    const kept = await window.pipelab.loadText('ship-log.txt', text);
    const base = {
      ...window.pipelab.defaultConfig(),
      dataset: 'text' as const, textHash: kept.hash, model: 'gpt' as const, layers: 3, heads: 2, width: 16, blockSize: 16,
      batchSize: 8, microbatches: 4, ranks: 4, schedule: '1f1b' as const, steps: 3, evalEvery: 0, optimizer: 'adamw' as const, lr: 0.01,
    };
    const ref = await window.pipelab.runSingleDevice(base);
    const rep = await window.pipelab.run(base, { readWeights: true });
    let maxLoss = 0, maxWeight = 0;
    rep.losses.forEach((l, i) => (maxLoss = Math.max(maxLoss, Math.abs(l - ref.losses[i]) / Math.abs(ref.losses[i]))));
    for (const k of Object.keys(ref.params)) {
      const a = rep.weights![k], b = ref.params[k];
      let num = 0, den = 0;
      for (let i = 0; i < b.length; i++) {
        num += (a[i] - b[i]) ** 2;
        den += b[i] ** 2;
      }
      maxWeight = Math.max(maxWeight, Math.sqrt(num / den));
    }
    let refused = '';
    try {
      await window.pipelab.loadText('aaaa.txt', 'a'.repeat(100));
    } catch (e) {
      refused = (e as Error).message;
    }
    return { kept, refLosses: ref.losses, maxLoss, maxWeight, steps: rep.losses.length, refused };
  }, text);
  expect(r.kept).toMatchObject({ hash: createHash('sha256').update(text).digest('hex').slice(0, 16), symbols: new Set(text).size, characters: text.length });
  expect(r.steps).toBe(3);
  // The GPT starts near uniform over the text's symbols.
  expect(Math.abs(r.refLosses[0] - Math.log(new Set(text).size))).toBeLessThan(0.1);
  expect(r.maxLoss).toBeLessThan(1e-5);
  expect(r.maxWeight).toBeLessThan(1e-5);
  expect(r.refused).toContain('text file "aaaa.txt" = "\\"a\\" × 100": holds one repeated character');
});

test('bad files are refused, each naming the file and the rule', async ({ page }) => {
  test.setTimeout(120_000);
  await page.goto(`./?dataset=text&${SMALL_GPT}&steps=4`);
  const error = page.getByTestId('text-error');
  const cases: [string, string | Uint8Array, string][] = [
    ['photo.png', new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0x0d]), 'text file "photo.png" = "byte 0x00 at offset 8": is not text (a NUL byte: a binary file?)'],
    ['empty.txt', '', 'text file "empty.txt" = "0 bytes": is empty'],
    ['aaaa.txt', 'a'.repeat(5000), 'text file "aaaa.txt" = "\\"a\\" × 5000": holds one repeated character'],
    ['latin1.txt', new Uint8Array([0x63, 0x61, 0x66, 0xe9, 0x0a]), 'text file "latin1.txt" = "bytes e9 0a at offset 3": is not valid UTF-8'],
    ['hanzi.txt', Array.from({ length: 600 }, (_, i) => String.fromCodePoint(0x4e00 + i)).join('').repeat(3), 'text file "hanzi.txt" = "600 distinct characters": has more than the 256 symbols a vocabulary holds'],
  ];
  for (const [name, data, message] of cases) {
    await pick(page, file(name, data));
    await expect(error, name).toContainText(message);
  }
  // Shorter than two blocks: read, but the run is refused, naming the file and the rule.
  await pick(page, file('short.txt', 'Call me Ishmael.'));
  await expect(page.getByTestId('text-loaded')).toContainText('short.txt: 16 characters');
  // (The link's blockSize = 16 is refused with this text, so the text's default block size stands: the rule names it.)
  await expect(page.locator('.config-problem')).toContainText(/text file "short\.txt" = "16 characters": is shorter than two blocks of blockSize \+ 1 = \d+ characters/);
  await expect(page.getByRole('button', { name: '▶ Run' })).toBeDisabled();
});

test('a 200 MB file is refused from its size before it is read; a 4 MB one is read without freezing the page', async ({ page }) => {
  test.setTimeout(180_000);
  await page.goto(`./?dataset=text&${SMALL_GPT}&steps=4`);
  // A sparse 200 MB file: the page must refuse it from file.size alone.
  const big = join(dir, 'huge.txt');
  const fd = openSync(big, 'w');
  ftruncateSync(fd, 200 * 1024 * 1024);
  closeSync(fd);
  await pick(page, big);
  await expect(page.getByTestId('text-error')).toContainText('text file "huge.txt" = "200 MiB": is larger than the 4 MiB a text may be (it is not read');

  // A small text first, so that the page's first render of a runnable configuration (its schedule
  // simulated and drawn) is not counted as reading the large one.
  await pick(page, file('short-log.txt', shipLog(50)));
  await expect(page.getByTestId('text-loaded')).toContainText('short-log.txt');
  await expect(page.getByRole('button', { name: '▶ Run' })).toBeEnabled({ timeout: 60_000 });
  // Just under the limit: watch the main thread's long tasks while it is read, checked and kept.
  const text = shipLog(70_000).slice(0, 4 * 1024 * 1024 - 1024);
  await page.evaluate(() => {
    const w = window as unknown as { longTasks: number[] };
    w.longTasks = [];
    new PerformanceObserver((list) => {
      for (const e of list.getEntries()) w.longTasks.push(e.duration);
    }).observe({ type: 'longtask' });
  });
  const t0 = Date.now();
  await pick(page, file('long-voyage.txt', text));
  await expect(page.getByTestId('text-loaded')).toContainText('long-voyage.txt', { timeout: 60_000 });
  const took = Date.now() - t0;
  // Half a second more (the text is also kept in IndexedDB, after it shows), then a frame, so the observer has reported.
  await page.waitForTimeout(500);
  await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
  const longTasks = await page.evaluate(() => (window as unknown as { longTasks: number[] }).longTasks);
  console.log(`4 MB text: kept in ${took} ms; main-thread long tasks (ms): ${JSON.stringify(longTasks.map((d) => Math.round(d)))}`);
  expect(Math.max(0, ...longTasks)).toBeLessThan(200);
});

test('a link names its text by hash: it asks for the file, refuses another one, and applies the link with the right one', async ({ page }) => {
  test.setTimeout(120_000);
  const text = shipLog(300);
  const h = createHash('sha256').update(text).digest('hex').slice(0, 16);
  await page.goto(`./?dataset=text&textHash=${h}&${SMALL_GPT}&steps=12&evalEvery=6`);
  await expect(page.getByTestId('text-pending')).toContainText(`content hash ${h}`);
  await expect(page.getByTestId('url-problems')).toHaveCount(0);
  // The link stays as it came while its text is asked for.
  await expect(page).toHaveURL(new RegExp(`textHash=${h}`));
  await pick(page, file('other.txt', text + 'one more line\n'));
  await expect(page.getByTestId('text-error')).toContainText(`text file "other.txt" = `);
  await expect(page.getByTestId('text-error')).toContainText(`has another content hash than the text the link names (${h}): pick the file the run was made from`);
  await pick(page, file('ship-log.txt', text));
  await expect(page.getByTestId('text-loaded')).toContainText(`Hash ${h}`);
  await expect(page.getByTestId('text-pending')).toHaveCount(0);
  await expect(page.getByLabel('Steps', { exact: true })).toHaveValue('12');
  await expect(page.getByLabel('Width (C)', { exact: true })).toHaveValue('16');
  await expect(page.getByRole('button', { name: '▶ Run' })).toBeEnabled({ timeout: 60_000 });
});

test('the example preset reads Moby-Dick from the page itself; on SwiftShader the default GPT stays small and the page says why', async ({ page }) => {
  test.setTimeout(120_000);
  await page.goto('./?dataset=names');
  await expect(page.getByTestId('gpt-sizing')).toHaveText(
    "Default GPT: the small 2 layers × 4 heads × 32 wide, because it is SwiftShader, a software renderer on the CPU (google swiftshader); makemore's 4 layers × 4 heads × 64 wide takes seconds a step without a GPU.",
  );
  await page.locator('[data-preset="your-text"] a').first().click();
  await expect(page.getByTestId('text-loaded')).toContainText('moby-dick.txt: 1,190,317 characters, 83 symbols', { timeout: 60_000 });
  await expect(page.getByTestId('text-loaded')).toContainText('public domain');
  await expect(page.getByLabel('Model', { exact: true })).toHaveValue('gpt');
  await expect(page).toHaveURL(/dataset=text&textHash=fe282a57094ed62e/);
  await expect(page.getByRole('button', { name: '▶ Run' })).toBeEnabled();
});

test('nothing lost on your own text: after a reload the page reads the text it kept and resumes the stopped run from its checkpoint', async ({ page }) => {
  test.setTimeout(180_000);
  const text = shipLog(300);
  const h = createHash('sha256').update(text).digest('hex').slice(0, 16);
  await page.goto(`./?dataset=text&${SMALL_GPT}&steps=6&evalEvery=0`);
  await pick(page, file('kept-log.txt', text));
  await expect(page.getByTestId('text-loaded')).toContainText(`Hash ${h}`);
  await expect(page).toHaveURL(new RegExp(`textHash=${h}`));
  // Three steps of the run in the URL, then stopped (saved at the stop).
  const stopped = await page.evaluate(async () => {
    const { config } = window.pipelab.urlConfig();
    const stop = new AbortController();
    const r = await window.pipelab.run(config, { signal: stop.signal, onStep: (p) => (p.step + 1 === 3 ? stop.abort() : undefined) });
    return { losses: r.losses.length, stored: (await window.pipelab.checkpoints.list(config)).map((c) => c.step) };
  });
  expect(stopped).toEqual({ losses: 3, stored: [3] });

  // A reload: the link names the text by hash only, and the page has it kept: no file is asked for.
  await page.reload();
  await expect(page.getByTestId('text-loaded')).toContainText(`Hash ${h}`, { timeout: 30_000 });
  await expect(page.getByTestId('text-loaded')).toContainText('kept-log.txt');
  await expect(page.getByTestId('text-pending')).toHaveCount(0);
  await page.getByRole('button', { name: 'Resume run from step 3' }).click({ timeout: 30_000 });
  await expect(page.getByRole('progressbar', { name: 'Training progress' })).toHaveAttribute('aria-valuenow', '6', { timeout: 120_000 });

  // Forgotten: the next reload asks for the file again.
  await page.getByTestId('text-forget').click();
  await expect(page.getByTestId('text-loaded')).toContainText('Kept texts forgotten: a reload will ask for the file again.');
  await page.reload();
  await expect(page.getByTestId('text-pending')).toContainText(`content hash ${h}`);
  await expect(page.getByTestId('text-loaded')).toHaveCount(0);
});

test('the page keeps the last four texts it read, the oldest dropped first', async ({ page }) => {
  test.setTimeout(120_000);
  await page.goto(`./?dataset=text&${SMALL_GPT}`);
  const hashes: string[] = [];
  for (let i = 0; i < 5; i++) {
    const text = shipLog(60 + i);
    hashes.push(createHash('sha256').update(text).digest('hex').slice(0, 16));
    await pick(page, file(`log-${i}.txt`, text));
    await expect(page.getByTestId('text-loaded')).toContainText(`Hash ${hashes[i]}`);
  }
  const kept = async () =>
    page.evaluate(
      () =>
        new Promise<string[]>((resolve, reject) => {
          const r = indexedDB.open('pipelab-texts');
          r.onerror = () => reject(r.error);
          r.onsuccess = () => {
            const q = r.result.transaction('texts', 'readonly').objectStore('texts').getAllKeys();
            q.onsuccess = () => resolve((q.result as string[]).slice().sort());
            q.onerror = () => reject(q.error);
          };
        }),
    );
  await expect.poll(kept).toEqual(hashes.slice(1).sort());
});
