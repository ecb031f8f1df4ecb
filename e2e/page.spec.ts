/**
 * The playground page, end to end, against the built app: it loads clean,
 * trains 4 stages × 8 micro-batches and draws the timeline, the loss falls,
 * the configuration survives the URL, bad URL values are named, every export
 * parses, and the views without a run (simulate, compare, no WebGPU) work.
 * Screenshots of the main views go to test-results/screens/.
 */
import type { Page } from '@playwright/test';
import { test, expect, watchErrors } from './page-errors.ts';
import { readFileSync } from 'node:fs';
import { fromCsv, validateSchedule } from '../src/schedule/index.ts';
import { keepScreenshot } from './screens.ts';
import { readSafetensors } from '../src/util/safetensors.ts';

// ---- helpers ----

async function runStatus(page: Page): Promise<string> {
  return (await page.getByRole('status').getAttribute('data-status')) ?? '';
}

async function waitForStatus(page: Page, statuses: string[], timeout = 150_000): Promise<void> {
  await expect.poll(() => runStatus(page), { timeout, intervals: [250, 500, 1000] }).toMatch(new RegExp(`^(${statuses.join('|')})$`));
}

/** Pixels of a timeline canvas close to `rgb` (every other pixel sampled). */
async function countColour(page: Page, testId: string, rgb: [number, number, number]): Promise<number> {
  return page
    .getByTestId(testId)
    .locator('canvas')
    .first()
    .evaluate((el, target) => {
      const c = el as HTMLCanvasElement;
      const ctx = c.getContext('2d');
      if (!ctx) return 0;
      const d = ctx.getImageData(0, 0, c.width, c.height).data;
      let n = 0;
      for (let i = 0; i < d.length; i += 8) {
        if (Math.abs(d[i] - target[0]) < 12 && Math.abs(d[i + 1] - target[1]) < 12 && Math.abs(d[i + 2] - target[2]) < 12) n++;
      }
      return n;
    }, rgb);
}

const F_BLUE: [number, number, number] = [0x5b, 0x9c, 0xff];
const B_ORANGE: [number, number, number] = [0xff, 0x9f, 0x43];

async function download(page: Page, button: string): Promise<Buffer> {
  const [dl] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: button }).click()]);
  const path = await dl.path();
  return readFileSync(path);
}

// ---- tests without a run ----

test('the default page loads with no console errors and predicts the 1F1B bubble', async ({ page }, info) => {
  const errors = watchErrors(page);
  await page.goto('./');
  await expect(page.getByRole('heading', { name: 'PipeLab' })).toBeVisible();
  await expect(page.getByRole('status')).toContainText('Ready to train 1F1B on 4 ranks × 8 micro-batches');
  const plot = page.getByTestId('run-timeline').getByRole('group', { name: /timeline, 4 ranks/ });
  await expect(plot).toHaveAttribute('data-ranks', '4');
  // Predicted 1F1B, p = 4, m = 8: bubble 3/11 by the simulator and the closed form.
  await expect(page.getByTestId('run-numbers')).toContainText('27.3%');
  await expect.poll(() => countColour(page, 'run-timeline', F_BLUE)).toBeGreaterThan(100);
  await page.waitForTimeout(500);
  await keepScreenshot(page, info, 'train-before-run');
  expect(errors).toEqual([]);
});

test('every control has a visible label', async ({ page }) => {
  await page.goto('./');
  const controls = page.locator('main input:not([type=radio]), main select');
  const n = await controls.count();
  expect(n).toBeGreaterThan(15);
  for (let i = 0; i < n; i++) {
    const id = await controls.nth(i).getAttribute('id');
    const label = page.locator(`label[for="${id}"]`);
    await expect(label, `control ${i} (${id}) has a label`).toBeVisible();
    expect((await label.textContent())?.trim().length).toBeGreaterThan(0);
  }
});

test('a configuration survives the round trip through the URL', async ({ page }) => {
  await page.goto('./?dataset=moons&ranks=2&microbatches=4&batchSize=32&schedule=gpipe&hidden=32&lr=0.005&seed=7&steps=40');
  await expect(page.getByLabel('Data set', { exact: true })).toHaveValue('moons');
  await expect(page.getByLabel('Stages (ranks)', { exact: true })).toHaveValue('2');
  await expect(page.getByLabel('Schedule', { exact: true })).toHaveValue('gpipe');
  await expect(page.getByLabel('Width (hidden)', { exact: true })).toHaveValue('32');
  await expect(page.getByLabel('Learning rate', { exact: true })).toHaveValue('0.005');
  await expect(page.getByLabel('Seed', { exact: true })).toHaveValue('7');
  await expect(page.getByTestId('url-problems')).toHaveCount(0);

  // Edit from the keyboard; the address follows.
  await page.getByLabel('Micro-batches', { exact: true }).fill('8');
  await page.getByLabel('Schedule', { exact: true }).selectOption('zb-h1');
  await expect.poll(() => new URL(page.url()).searchParams.get('microbatches')).toBe('8');
  expect(new URL(page.url()).searchParams.get('schedule')).toBe('zb-h1');

  // Reload the link: the same configuration, field for field.
  const before = await page.evaluate(() => window.pipelab.urlConfig());
  await page.reload();
  await expect(page.getByLabel('Micro-batches', { exact: true })).toHaveValue('8');
  await expect(page.getByLabel('Schedule', { exact: true })).toHaveValue('zb-h1');
  await expect(page.getByLabel('Data set', { exact: true })).toHaveValue('moons');
  const after = await page.evaluate(() => window.pipelab.urlConfig());
  expect(after.errors).toEqual([]);
  expect(after.config).toEqual(before.config);
  expect(after.config).toMatchObject({ dataset: 'moons', ranks: 2, microbatches: 8, batchSize: 32, schedule: 'zb-h1', hidden: 32, lr: 0.005, seed: 7, steps: 40 });
});

test('an invalid URL value is named in a visible message and the rest of the configuration stays', async ({ page }, info) => {
  await page.goto('./?ranks=abc&hidden=48&microbatches=0&seed=5&view=simulate&sim.ranks=-3');
  const msg = page.getByTestId('url-problems');
  await expect(msg).toBeVisible();
  await expect(msg).toContainText('ranks = "abc": must be a number');
  await expect(msg).toContainText('microbatches = 0');
  await expect(msg).toContainText('sim.ranks = -3');
  await keepScreenshot(page, info, 'invalid-url');
  await page.getByRole('tab', { name: 'Train' }).click();
  await expect(page.getByLabel('Width (hidden)', { exact: true })).toHaveValue('48');
  await expect(page.getByLabel('Seed', { exact: true })).toHaveValue('5');
  await expect(page.getByLabel('Stages (ranks)', { exact: true })).toHaveValue('4');
  await expect(page.getByLabel('Micro-batches', { exact: true })).toHaveValue('8');
  // A bad value typed into the form is named too, and the run waits for a fix.
  await page.getByLabel('Micro-batches', { exact: true }).fill('7');
  await expect(page.locator('.config-problem')).toContainText('microbatches = 7: must divide batchSize = 64 evenly');
  await expect(page.getByRole('button', { name: '▶ Run' })).toBeDisabled();
  // The problem offers the smallest change that makes the configuration valid; one click applies it.
  await page.getByRole('button', { name: 'Set the batch to 63 (a multiple of micro-batches = 7)' }).click();
  await expect(page.locator('.config-problem')).toHaveCount(0);
  await expect(page.getByLabel('Batch size', { exact: true })).toHaveValue('63');
  await page.getByLabel('Stages (ranks)', { exact: true }).fill('8');
  await page.getByRole('button', { name: 'Deepen the model to 7 layers (a block per stage)' }).click();
  await expect(page.getByLabel('Depth (layers)', { exact: true })).toHaveValue('7');
  await expect(page.getByRole('button', { name: '▶ Run' })).toBeEnabled();
});

test('simulate only draws 64 ranks × 512 micro-batches at once and agrees with the closed form', async ({ page }, info) => {
  const errors = watchErrors(page);
  await page.goto('./?view=simulate');
  const plot = page.getByTestId('sim-timeline').getByRole('group');
  await expect(plot).toHaveAttribute('data-ranks', '64');
  await expect(plot).toHaveAttribute('data-intervals', String(64 * 512 * 2));
  // 1F1B: (p−1)/(m+p−1) = 63/575.
  await expect(page.getByRole('table')).toContainText(`${((63 / 575) * 100).toFixed(2)}%`);
  await expect.poll(() => countColour(page, 'sim-timeline', B_ORANGE)).toBeGreaterThan(1000);
  await keepScreenshot(page, info, 'simulate-64x512');

  // How fast this draws is measured by the benchmark (npm run bench -- --suite timeline), not asserted
  // in a test. Here: every wheel zoom redraws the canvas in its own frame.
  const redrawn = await plot.locator('canvas').evaluate(async (canvas) => {
    const r = canvas.getBoundingClientRect();
    const plotEl = canvas.parentElement as HTMLElement;
    const seen: (string | undefined)[] = [];
    for (let i = 0; i < 4; i++) {
      delete plotEl.dataset.drawMs;
      canvas.dispatchEvent(new WheelEvent('wheel', { deltaY: i < 2 ? -120 : 120, clientX: r.left + r.width * 0.6, clientY: r.top + 40, bubbles: true, cancelable: true }));
      await new Promise((res) => requestAnimationFrame(() => requestAnimationFrame(res)));
      seen.push(plotEl.dataset.drawMs);
    }
    return seen;
  });
  expect(redrawn).toHaveLength(4);
  for (const ms of redrawn) expect(Number(ms)).toBeGreaterThanOrEqual(0);

  // Tooltip on hover; keyboard zoom.
  const box = await plot.locator('canvas').boundingBox();
  if (!box) throw new Error('no canvas');
  await page.keyboard.press('Escape');
  await plot.focus();
  await page.keyboard.press('0');
  await page.mouse.move(box.x + box.width * 0.5, box.y + 28);
  await expect(page.getByRole('tooltip')).toContainText('rank');
  await expect(page.getByRole('tooltip')).toContainText('micro-batch');
  await page.keyboard.press('+');
  await page.keyboard.press('ArrowRight');

  // Its schedule and timeline export too.
  const csv = fromCsv((await download(page, 'Schedule (PyTorch CSV)')).toString('utf8'));
  expect([csv.ranks, csv.microbatches]).toEqual([64, 512]);
  const trace = JSON.parse((await download(page, 'Chrome trace (JSON)')).toString('utf8')) as { traceEvents: { ph: string }[] };
  expect(trace.traceEvents.filter((e) => e.ph === 'X').length).toBe(64 * 512 * 2);

  // Another schedule at scale, from the controls.
  await page.getByLabel('Schedule', { exact: true }).selectOption('zb-h1');
  await expect(plot).toHaveAttribute('data-intervals', String(64 * 512 * 3));
  expect(errors).toEqual([]);
});

test('compare shows the schedules side by side on one scale', async ({ page }, info) => {
  await page.goto('./?view=compare');
  const table = page.getByTestId('compare-table');
  await expect(table).toContainText('GPipe');
  await expect(table).toContainText('ZB-H1');
  for (const id of ['compare-gpipe', 'compare-1f1b', 'compare-interleaved-1f1b', 'compare-zb-h1']) {
    await expect(page.getByTestId(id).getByRole('group')).toHaveAttribute('data-ranks', '4');
  }
  // GPipe and 1F1B: 3/11; ZB-H1: (p−1)/(3m+p−1) = 3/27.
  await expect(table.getByRole('row', { name: /^GPipe/ })).toContainText('27.3%');
  await expect(table.getByRole('row', { name: /^ZB-H1/ })).toContainText('11.1%');
  await keepScreenshot(page, info, 'compare');
  // The picked schedules live in the URL too.
  await page.getByRole('checkbox', { name: 'GPipe', exact: true }).uncheck();
  await page.getByRole('checkbox', { name: 'ZB-V (zero bubble, V)', exact: true }).check();
  await expect.poll(() => new URL(page.url()).searchParams.get('compare.schedules')).toBe('1f1b,interleaved-1f1b,zb-h1,zb-v');
  await page.reload();
  await expect(page.getByRole('checkbox', { name: 'GPipe', exact: true })).not.toBeChecked();
  await expect(page.getByTestId('compare-zb-v').getByRole('group')).toHaveAttribute('data-ranks', '4');
});

test('one session at a time: while Compare measures, Train and window.pipelab.run are refused with a message naming it', async ({ page }) => {
  const errors = watchErrors(page);
  await page.goto('./?view=compare&compare.schedules=gpipe,1f1b&compare.steps=100&steps=100&hidden=16');
  await page.getByRole('button', { name: '▶ Measure each' }).click();
  await expect(page.getByRole('button', { name: '■ Stop measuring' })).toBeVisible();
  const refused = await page.evaluate(() =>
    window.pipelab.run({ ...window.pipelab.defaultConfig(), steps: 1, evalEvery: 0 }).then(
      () => 'started',
      (e: unknown) => (e instanceof Error ? e.message : String(e)),
    ),
  );
  expect(refused).toMatch(/^cannot start a run started through window\.pipelab\.run: a comparison measuring schedules \(Compare\) is going/);
  await page.getByRole('tab', { name: 'Train' }).click();
  await expect(page.getByRole('button', { name: '▶ Run' })).toBeDisabled();
  await expect(page.locator('.why-off')).toContainText('Cannot train now: a comparison measuring schedules (Compare) is going');
  await page.getByRole('tab', { name: 'Compare schedules' }).click();
  await page.getByRole('button', { name: '■ Stop measuring' }).click();
  await expect(page.getByRole('button', { name: '▶ Measure each' })).toBeVisible({ timeout: 120_000 });
  await page.getByRole('tab', { name: 'Train' }).click();
  await expect(page.getByRole('button', { name: '▶ Run' })).toBeEnabled();
  expect(await page.evaluate(() => window.pipelab.liveWorkers())).toBe(0);
  expect(errors).toEqual([]);
});

test('without WebGPU the page says how to turn it on and still simulates', async ({ page }, info) => {
  const errors = watchErrors(page);
  await page.goto('./?webgpu=off');
  await expect(page.getByRole('heading', { name: /WebGPU is not available/ })).toBeVisible();
  await expect(page.getByText('Chrome on Linux')).toBeVisible();
  await expect(page.getByText('#enable-unsafe-webgpu')).toBeVisible();
  await expect(page.getByRole('button', { name: '▶ Run' })).toBeDisabled();
  await expect(page.getByRole('status')).toContainText('simulation only');
  await keepScreenshot(page, info, 'no-webgpu');
  await page.getByRole('button', { name: 'Open the simulator' }).click();
  await expect(page.getByTestId('sim-timeline').getByRole('group')).toHaveAttribute('data-ranks', '64');
  expect(errors).toEqual([]);
});

// ---- a real run, then its exports ----

test.describe.serial('a run of 4 stages × 8 micro-batches', () => {
  let page: Page;
  let errors: string[];

  test.beforeAll(async ({ browser }) => {
    page = await browser.newPage({ viewport: { width: 1440, height: 1000 } });
    errors = watchErrors(page);
  });

  test.afterAll(async () => {
    await page.close();
  });

  test('completes, draws a non-empty timeline with 4 lanes, and its loss falls', async ({}, info) => {
    await page.goto('./?ranks=4&microbatches=8&schedule=1f1b&steps=16&evalEvery=0&hidden=32');
    await expect(page.getByRole('status')).toContainText('Ready to train');
    await page.getByRole('button', { name: '▶ Run' }).click();
    await waitForStatus(page, ['running', 'done', 'error']);
    await waitForStatus(page, ['done', 'error']);
    await expect(page.getByRole('status')).toContainText('Done: 16 steps');

    const plot = page.getByTestId('run-timeline').getByRole('group', { name: /measured timeline, 4 ranks/ });
    await expect(plot).toHaveAttribute('data-ranks', '4');
    expect(Number(await plot.getAttribute('data-intervals'))).toBeGreaterThanOrEqual(4 * 8 * 2);
    await expect.poll(() => countColour(page, 'run-timeline', F_BLUE)).toBeGreaterThan(100);
    await expect.poll(() => countColour(page, 'run-timeline', B_ORANGE)).toBeGreaterThan(100);

    const raw = await page.getByTestId('loss-panel').locator('figure').getAttribute('data-losses');
    const losses = (raw ?? '').split(',').map(Number);
    expect(losses).toHaveLength(16);
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    expect(mean(losses.slice(-4))).toBeLessThan(mean(losses.slice(0, 4)));

    await expect(page.getByRole('progressbar')).toHaveAttribute('aria-valuenow', '16');
    // The step on the workers' clocks: the drawn step and, after it, the losses read back and the update.
    const stepEnd = await page.getByTestId('step-end').getByRole('cell').first().innerText();
    const [wall, after] = [...stepEnd.matchAll(/([\d.,]+)\s*ms/g)].map((x) => Number(x[1].replace(/,/g, '')));
    expect(stepEnd).toContain('after the timeline');
    expect(after).toBeGreaterThanOrEqual(0);
    expect(after).toBeLessThan(wall);
    // Simulated: each rank's measured time after its last action, played after its simulated last action.
    const simEnd = await page.getByTestId('step-end-simulated').innerText();
    const [simWall, simAfter] = [...simEnd.matchAll(/([\d.,]+)\s*ms/g)].map((x) => Number(x[1].replace(/,/g, '')));
    expect(simWall).toBeGreaterThan(0);
    expect(simAfter).toBeGreaterThan(0);
    expect(simAfter).toBeLessThan(simWall);
    await expect(page.getByTestId('results').locator('canvas')).toBeVisible();
    await page.getByRole('radio', { name: 'Both' }).check();
    await expect(page.getByText(/simulated outlines scaled/)).toBeVisible();
    await page.waitForTimeout(300);
    await keepScreenshot(page, info, 'train-after-run');
    expect(errors).toEqual([]);
  });

  test('the Chrome trace export parses', async () => {
    const trace = JSON.parse((await download(page, 'Chrome trace (JSON)')).toString('utf8')) as { traceEvents: { ph: string; pid: number; tid: number; dur?: number }[] };
    const spans = trace.traceEvents.filter((e) => e.ph === 'X' && e.pid === 0);
    expect(spans.length).toBeGreaterThanOrEqual(4 * 8 * 2);
    expect(new Set(spans.map((e) => e.tid)).size).toBe(4);
    expect(spans.every((e) => typeof e.dur === 'number' && e.dur >= 0)).toBe(true);
  });

  test('the schedule CSV export reads back through the schedules reader', async () => {
    const csv = (await download(page, 'Schedule (PyTorch CSV)')).toString('utf8');
    const s = fromCsv(csv);
    expect(s.ranks).toBe(4);
    expect(s.microbatches).toBe(8);
    expect(validateSchedule(s).ok).toBe(true);
    expect(s.order[0].slice(0, 4).map((a) => `${a.stage}${a.op}${a.mb}`)).toEqual(['0F0', '0F1', '0F2', '0F3']);
  });

  test('the run report export parses', async () => {
    const report = JSON.parse((await download(page, 'Run report (JSON)')).toString('utf8')) as { config: { ranks: number; microbatches: number }; losses: number[]; bubble: { measured: number }; timeline: { ranks: number } };
    expect(report.config).toMatchObject({ ranks: 4, microbatches: 8 });
    expect(report.losses).toHaveLength(16);
    expect(report.timeline.ranks).toBe(4);
    expect(report.bubble.measured).toBeGreaterThan(0);
  });

  test('the weights export is a safetensors file', async () => {
    const bytes = new Uint8Array(await download(page, 'Weights (safetensors)'));
    const headerLength = Number(new DataView(bytes.buffer, bytes.byteOffset).getBigUint64(0, true));
    expect(headerLength % 8).toBe(0);
    const parsed = readSafetensors(bytes);
    const names = Object.keys(parsed.tensors);
    expect(names.length).toBeGreaterThanOrEqual(8);
    for (const t of Object.values(parsed.tensors)) {
      expect(t.dtype).toBe('F32');
      expect(t.data.length).toBe(t.shape.reduce((a, b) => a * b, 1));
      expect(Array.from(t.data).every(Number.isFinite)).toBe(true);
    }
    expect(parsed.metadata.format).toBe('pt');
    expect(JSON.parse(parsed.metadata.config)).toMatchObject({ ranks: 4, microbatches: 8, hidden: 32 });
  });

  test('single-step, pause and stop', async () => {
    await page.goto('./?ranks=4&microbatches=8&steps=50&evalEvery=0&hidden=16');
    await page.getByRole('button', { name: 'Step', exact: true }).click();
    await waitForStatus(page, ['paused', 'error']);
    await expect(page.getByRole('progressbar')).toHaveAttribute('aria-valuenow', '1');
    await expect(page.getByRole('status')).toContainText('Paused after step 1 of 50');
    await page.getByRole('button', { name: 'Step', exact: true }).click();
    await expect(page.getByRole('progressbar')).toHaveAttribute('aria-valuenow', '2');
    await page.getByRole('button', { name: '▶ Resume' }).click();
    await expect.poll(async () => Number(await page.getByRole('progressbar').getAttribute('aria-valuenow')), { timeout: 60_000 }).toBeGreaterThan(3);
    await page.getByRole('button', { name: '■ Stop' }).click();
    await waitForStatus(page, ['stopped', 'error']);
    await expect(page.getByRole('status')).toContainText('Stopped after');
    expect(await page.evaluate(() => window.pipelab.liveWorkers())).toBe(0);
    expect(errors).toEqual([]);
  });
});

test('a DualPipe run lists each model stage’s sum over its copies, measured beside simulated, and both timelines draw it', async ({ page }) => {
  test.setTimeout(180_000);
  const errors = watchErrors(page);
  await page.setViewportSize({ width: 1440, height: 1000 });
  await page.goto('./?ranks=4&microbatches=8&schedule=dualpipe&steps=4&evalEvery=0&hidden=16');
  await expect(page.getByRole('status')).toContainText('Ready to train');
  await page.getByRole('button', { name: '▶ Run' }).click();
  await waitForStatus(page, ['done', 'error']);
  await expect(page.getByRole('status')).toContainText('Done: 4 steps');
  // Rank r with rank 3 − r, one row per model stage, then the step with the sum and what it added.
  await expect(page.getByTestId('copy-sum-stage')).toHaveCount(4);
  await expect(page.getByTestId('copy-sum-stage').first()).toContainText('model stage 0, ranks 0 ↔ 3');
  const figures = async (id: string) => (await page.getByTestId(id).getByRole('cell').allInnerTexts()).slice(0, 2).map((x) => Number(/([\d.,]+) ms/.exec(x)?.[1].replace(/,/g, '')));
  const [stepMeasured, stepSimulated] = await figures('copy-sum-step');
  const [addedMeasured, addedSimulated] = await figures('copy-sum-added');
  for (const x of [stepMeasured, stepSimulated, addedMeasured, addedSimulated]) expect(x).toBeGreaterThan(0);
  expect(addedSimulated).toBeLessThan(stepSimulated);
  // Each timeline's badge counts the step with the copies' sum; the simulated one's is the table's simulated step.
  const timeline = page.getByTestId('run-timeline');
  await expect(timeline.getByText(/ms step with the copies’ sum/)).toBeVisible();
  await page.getByRole('radio', { name: 'Simulated' }).check();
  const badge = await timeline.getByText(/ms step with the copies’ sum/).innerText();
  expect(Number(/([\d.,]+) ms step/.exec(badge)?.[1].replace(/,/g, ''))).toBeCloseTo(stepSimulated, 0);
  expect(errors).toEqual([]);
});
