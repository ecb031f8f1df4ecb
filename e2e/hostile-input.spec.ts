/**
 * Issue 10 on the built page: hostile configurations through window.pipelab.run
 * are refused before any worker starts, with the same messages as the URL and
 * the page; a run is cancelled through its signal and leaves no worker; random
 * configurations either are refused or complete while the page keeps answering.
 */
import type { Page } from '@playwright/test';
import { test, expect, openApp } from './page-errors.ts';
import fc from 'fast-check';

async function open(page: Page, query = ''): Promise<void> {
  await page.goto(`./${query}`);
  await page.waitForFunction(() => !!window.pipelab);
}

test('hostile configurations are refused before any worker starts, naming field, value and rule', async ({ sharedPage: page }) => {
  await openApp(page);
  const results = await page.evaluate(async () => {
    const base = () => ({ ...window.pipelab.defaultConfig() }) as Record<string | symbol, unknown>;
    const cases: [string, () => unknown][] = [
      ['fault null', () => ({ ...base(), fault: null })],
      ['a function', () => ({ ...base(), lr: () => 0.01 })],
      ['a Symbol', () => ({ ...base(), schedule: Symbol('1f1b') })],
      ['a throwing getter', () => Object.defineProperty(base(), 'ranks', { enumerable: true, get: () => { throw new Error('boom'); } })],
      ['an unknown key', () => ({ ...base(), stages: 4 })],
      ['__proto__', () => JSON.parse(`{"__proto__": 1, ${JSON.stringify(base()).slice(1)}`)],
      ['lr = MIN_VALUE', () => ({ ...base(), lr: Number.MIN_VALUE })],
      ['PipeDream steps 1e6 × 64', () => ({ ...base(), schedule: 'pipedream', steps: 1e6, microbatches: 64 })],
      ['batch and micro-batches 65536', () => ({ ...base(), batchSize: 65536, microbatches: 65536 })],
      ['hidden 4096, layers 64, ranks 16', () => ({ ...base(), hidden: 4096, layers: 64, ranks: 16 })],
      ['a 10-million-character schedule', () => ({ ...base(), schedule: 'x'.repeat(10_000_000) })],
      ['dp 0', () => ({ ...base(), dp: 0 })],
      ['dp 1.5', () => ({ ...base(), dp: 1.5 })],
      ['dp 5 × ranks 4', () => ({ ...base(), dp: 5 })],
      ['batch not divisible by dp × microbatches', () => ({ ...base(), dp: 3, ranks: 2 })],
      ['zero 1 with dp 1', () => ({ ...base(), zero: 1 })],
      ['zero 4', () => ({ ...base(), dp: 2, zero: 4 })],
      ['PipeDream with dp 2', () => ({ ...base(), dp: 2, ranks: 2, schedule: 'pipedream' })],
    ];
    const out: { name: string; message: string; started: number; ms: number }[] = [];
    for (const [name, make] of cases) {
      const before = window.pipelab.startedWorkers();
      const t0 = performance.now();
      let message = 'accepted';
      try {
        await window.pipelab.run(make() as never);
      } catch (e) {
        message = (e as Error).message;
      }
      out.push({ name, message, started: window.pipelab.startedWorkers() - before, ms: performance.now() - t0 });
    }
    return out;
  });
  const expected: Record<string, RegExp> = {
    'fault null': /^fault = null: must be an object \{kind, action, step\?, replica\?\} or absent$/,
    'a function': /^lr = a function: must be plain JSON/,
    'a Symbol': /^schedule = Symbol\(1f1b\): must be plain JSON/,
    'a throwing getter': /^ranks = "a getter": could not be read \(boom\)$/,
    'an unknown key': /^stages = 4: is not a known configuration key; the nearest is "steps"$/,
    __proto__: /^__proto__ = 1: is not a known configuration key; the nearest is "/,
    'lr = MIN_VALUE': /^lr = 5e-324: must be at least 0\.000001/,
    'PipeDream steps 1e6 × 64': /^steps = 1000000: PipeDream runs steps × microbatches as one stream/,
    'batch and micro-batches 65536': /^microbatches = 65536: must be at most 1024/,
    'hidden 4096, layers 64, ranks 16': /^hidden = 4096: a rank would hold about .* GiB/,
    'a 10-million-character schedule': /^schedule = "x{60}…" \(10000000 characters\): must be one of /,
    'dp 0': /^dp = 0: must be an integer between 1 and 16$/,
    'dp 1.5': /^dp = 1\.5: must be an integer$/,
    'dp 5 × ranks 4': /^dp = 5: dp × ranks = 5 × 4 = 20 workers; at most 16 workers run in one tab$/,
    'batch not divisible by dp × microbatches': /^batchSize = 64: must be divisible by dp × microbatches = 3 × 8 = 24/,
    'zero 1 with dp 1': /^zero = 1: ZeRO-1 shards across data-parallel replicas; it needs dp ≥ 2 \(dp = 1\)$/,
    'zero 4': /^zero = 4: must be 0 \(off\), 1 \(optimizer state sharded across the dp replicas\), 2 \(and gradients\) or 3 \(and weights: FSDP\)$/,
    'PipeDream with dp 2': /^dp = 2: pipedream updates each stage's weights after every backward, with no point at which replicas could sum their gradients/,
  };
  for (const r of results) {
    expect(r.message, r.name).toMatch(expected[r.name]);
    expect(r.message.length, r.name).toBeLessThan(300);
    expect(r.started, r.name).toBe(0);
  }
  expect(await page.evaluate(() => window.pipelab.liveWorkers())).toBe(0);
});

test('the page and urlConfig() word URL problems the same, and refuse hex, binary and unknown keys', async ({ page }) => {
  await open(page, '?lr=Infinity&seed=0x10&ranks=0b11&hiden=32');
  const { errors, config } = await page.evaluate(() => window.pipelab.urlConfig());
  expect(errors).toEqual([
    'seed = "0x10": must be a number in decimal notation, such as 12 or 0.01',
    'ranks = "0b11": must be a number in decimal notation, such as 12 or 0.01',
    'hiden = "32": is not a known URL key; the nearest is "hidden"',
    'lr = Infinity: must be a finite number',
  ]);
  expect(config.seed).not.toBe(16);
  expect(config.ranks).not.toBe(3);
  const shown = page.getByTestId('url-problems');
  for (const e of errors) await expect(shown).toContainText(e);
  // The automation entry words the same value the same way.
  const viaRun = await page.evaluate(async () => {
    try {
      await window.pipelab.run({ ...window.pipelab.defaultConfig(), lr: Infinity });
      return 'accepted';
    } catch (e) {
      return (e as Error).message;
    }
  });
  expect(viaRun).toBe('lr = Infinity: must be a finite number');
});

test('a run is cancelled through its signal and leaves no worker', async ({ sharedPage: page }) => {
  test.setTimeout(120_000);
  await openApp(page);
  const r = await page.evaluate(async () => {
    const cfg = { ...window.pipelab.defaultConfig(), hidden: 8, batchSize: 16, microbatches: 4, steps: 1000, evalEvery: 0 };
    // Counted from here (the shared page may keep workers warm from the tests before).
    const started0 = window.pipelab.startedWorkers();
    const warm0 = window.pipelab.warmWorkers();
    // Cancelled after its third step: a report of three steps.
    const stop = new AbortController();
    const report = await window.pipelab.run(cfg, { signal: stop.signal, onStep: ({ step }) => step === 2 && stop.abort() });
    const afterSteps = window.pipelab.liveWorkers();
    // Cancelled while its workers start: no report, a message that says so.
    const early = new AbortController();
    const running = window.pipelab.run(cfg, { signal: early.signal });
    while (window.pipelab.liveWorkers() < cfg.ranks) await new Promise((res) => setTimeout(res, 5));
    early.abort();
    const message = await running.then(() => 'resolved', (e: Error) => e.message);
    return { steps: report.losses.length, afterSteps, message, live: window.pipelab.liveWorkers(), started: window.pipelab.startedWorkers() - started0, warm0 };
  });
  expect(r.steps).toBe(3);
  expect(r.afterSteps).toBe(0);
  expect(r.message).toBe('the run was cancelled before its first step finished');
  expect(r.live).toBe(0);
  // The cancelled run ended cleanly: the second run took its 4 warm workers (src/runtime/executor/warm-workers.ts) and ended them;
  // the first started the 4 that were not warm already.
  expect(r.warm0).toBeLessThanOrEqual(4);
  expect(r.started).toBe(4 - r.warm0);
});

test('random configurations are refused or complete, and the page keeps answering', async ({ sharedPage: page }) => {
  test.setTimeout(300_000);
  await openApp(page);
  const hostile = fc.constantFrom<unknown>(null, NaN, -1, 0, 1.5, 1e9, '3', 65536);
  const pick = <T>(valid: fc.Arbitrary<T>) => fc.oneof({ arbitrary: valid, weight: 3 }, { arbitrary: hostile, weight: 1 });
  const configs = fc.sample(
    fc.record({
      ranks: pick(fc.integer({ min: 1, max: 4 })),
      hidden: pick(fc.integer({ min: 2, max: 12 })),
      microbatches: pick(fc.constantFrom(1, 2, 4)),
      schedule: pick(fc.constantFrom('gpipe', '1f1b', 'zb-h1', 'pipedream')),
      steps: pick(fc.integer({ min: 1, max: 3 })),
    }),
    { numRuns: 6, seed: 10 },
  );
  const seen = { refused: 0, done: 0 };
  for (const over of configs) {
    const before = await page.evaluate(() => window.pipelab.startedWorkers());
    await page.evaluate((o) => {
      const w = window as unknown as { __outcome?: string };
      w.__outcome = undefined;
      window.pipelab
        .run({ ...window.pipelab.defaultConfig(), layers: 3, batchSize: 16, evalEvery: 0, ...(o as object) } as never)
        .then((rep) => (w.__outcome = `done ${rep.losses.length}`))
        .catch((e: Error) => (w.__outcome = `refused ${e.message}`));
    }, over);
    // While it runs, a trivial evaluate comes back within a second.
    for (;;) {
      const t0 = Date.now();
      const outcome = await page.evaluate(() => (window as unknown as { __outcome?: string }).__outcome);
      expect(Date.now() - t0, JSON.stringify(over)).toBeLessThan(1000);
      if (outcome !== undefined) {
        const started = (await page.evaluate(() => window.pipelab.startedWorkers())) - before;
        if (outcome.startsWith('refused')) {
          expect(outcome, JSON.stringify(over)).toMatch(/^refused [\w.]+ = .+: .+/);
          expect(started, outcome).toBe(0);
          seen.refused++;
        } else {
          seen.done++;
          expect(outcome).toBe(`done ${(over as { steps: number }).steps}`);
        }
        break;
      }
      await page.waitForTimeout(100);
    }
    expect(await page.evaluate(() => window.pipelab.liveWorkers())).toBe(0);
  }
  // Both sides of the property were exercised.
  expect(seen.refused).toBeGreaterThan(0);
  expect(seen.done).toBeGreaterThan(0);
});

test('a huge micro-batch count typed into the form is named and does not freeze the page', async ({ page }) => {
  await open(page);
  await page.getByRole('tab', { name: 'Train' }).click();
  await page.getByLabel('Micro-batches', { exact: true }).fill('1000000');
  const t0 = Date.now();
  expect(await page.evaluate(() => 1 + 1)).toBe(2);
  expect(Date.now() - t0).toBeLessThan(1000);
  await expect(page.locator('.config-problem')).toContainText('microbatches = 1000000');
  await expect(page.getByRole('button', { name: '▶ Run' })).toBeDisabled();
});

test('a value a field cannot take is named while typed, and leaving the field puts back the value in use saying what was not taken', async ({ page }) => {
  await open(page);
  await page.getByRole('tab', { name: 'Train' }).click();
  const ranks = page.getByLabel('Stages (ranks)', { exact: true });
  await ranks.fill('0');
  await expect(page.getByText('must be at least 1', { exact: true })).toBeVisible();
  await expect(ranks).toHaveAttribute('aria-invalid', 'true');
  await ranks.press('Tab');
  // Before, the field went back to 4 and the reason vanished with the typed value.
  await expect(ranks).toHaveValue('4');
  await expect(page.getByText('“0” was not taken (must be at least 1): Stages (ranks) stays 4.')).toBeVisible();
  await expect(ranks).not.toHaveAttribute('aria-invalid', 'true');
  await expect(page.getByTestId('status-line')).toContainText('on 4 ranks');
  // The next edit clears it.
  await ranks.fill('2');
  await expect(page.getByText(/was not taken/)).toHaveCount(0);
  // The same in the planner's fields (a number past the page's limit on devices).
  await page.getByRole('tab', { name: 'Simulate at scale' }).click();
  await page.getByText('Plan a real model on N devices').click();
  const devices = page.getByLabel('Devices (N)', { exact: true });
  await devices.fill('100000');
  await devices.press('Tab');
  await expect(devices).toHaveValue('64');
  await expect(page.getByText(/^“100000” was not taken \(must be at most \d+\): Devices \(N\) stays 64\.$/)).toBeVisible();
});
