/**
 * What a newcomer meets, at three window sizes (1440×900, 800×900, 390×844):
 * the first-visit explanation and glossary (remembered once dismissed),
 * presets that are plain links, a page no wider than the window, Run near the
 * top, the Compare table scrolling inside its box, the Plan panel's cuts
 * table fitting a tablet and scrolling in its box on a phone, a status line
 * that says it is the Train view's off that view, zoom buttons clear of the
 * badge, the skip link, the R shortcut, focus after Run, honest status lines,
 * labelled numbers that agree, the gap attribution, the full legend, the live
 * decision boundary, the loss chart's axes and hover values and its tick size
 * on a phone, and flags in export hints kept on one line.
 * Screenshots go to e2e/screenshots/ (ignored by git).
 */
import type { Page } from '@playwright/test';
import { test, expect } from './page-errors.ts';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';

const SIZES = [
  { name: 'wide', width: 1440, height: 900 },
  { name: 'tablet', width: 800, height: 900 },
  { name: 'phone', width: 390, height: 844 },
] as const;

const SHOTS = join(import.meta.dirname, 'screenshots');

async function shot(page: Page, name: string): Promise<void> {
  mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: false });
}

async function status(page: Page): Promise<string> {
  return (await page.getByRole('status').getAttribute('data-status')) ?? '';
}

async function waitForStatus(page: Page, statuses: string[], timeout = 150_000): Promise<void> {
  await expect.poll(() => status(page), { timeout, intervals: [100, 250, 500] }).toMatch(new RegExp(`^(${statuses.join('|')})$`));
}

async function noHorizontalOverflow(page: Page): Promise<{ scroll: number; inner: number }> {
  return page.evaluate(() => ({ scroll: document.documentElement.scrollWidth, inner: window.innerWidth }));
}

function overlaps(a: { x: number; y: number; width: number; height: number }, b: { x: number; y: number; width: number; height: number }): boolean {
  return a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height;
}

async function waitForWebGpu(page: Page): Promise<void> {
  await expect(page.getByRole('status')).toContainText('Ready to train', { timeout: 30_000 });
}

for (const size of SIZES) {
  test.describe(`at ${size.width}×${size.height}`, () => {
    test.use({ viewport: { width: size.width, height: size.height } });

    test('first visit: explanation, glossary, presets; fits the window; Run near the top; zoom clear of the badge', async ({ page }) => {
      await page.goto('./');
      await waitForWebGpu(page);
      const intro = page.getByTestId('intro');
      await expect(intro).toBeVisible();
      await expect(intro.getByRole('heading', { name: 'What you are looking at' })).toBeVisible();
      // The glossary names every word the page uses.
      await intro.getByText(/^Glossary/).click();
      const glossary = page.getByRole('definition');
      for (const term of ['Rank', 'Stage', 'Micro-batch', 'Bubble', 'Makespan', 'F / B / I / W', 'Virtual stage', 'Recomputation', 'Replica (dp)', 'Tensor parallel (tp)', 'ZeRO 1 · 2 · 3', 'Stream (PipeDream)']) {
        await expect(page.getByRole('term').filter({ hasText: new RegExp(`^${term.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}$`) })).toBeVisible();
      }
      expect(await glossary.count()).toBeGreaterThanOrEqual(12);
      // Seven lessons and two training presets (a book or your text; makemore's GPT), each a link.
      const presets = intro.getByRole('list', { name: 'Presets' }).getByRole('listitem');
      await expect(presets).toHaveCount(9);
      for (const lesson of ['micro-batches grow', 'Interleaving cuts the bubble', 'Zero bubble splits the backward', 'PipeDream never flushes', 'Recomputation trades time for memory', 'Selective recomputation saves less memory', 'Tensor parallelism splits each layer']) {
        await expect(presets.filter({ hasText: lesson }).getByRole('link').first()).toHaveAttribute('href', /^\?.*schedule=/);
      }
      for (const lesson of ['A GPT learns a book', 'makemore’s GPT']) {
        await expect(presets.filter({ hasText: lesson }).getByRole('link').first()).toHaveAttribute('href', /model=gpt/);
      }
      await shot(page, `${size.name}-first-visit`);

      // No horizontal overflow, Run within the first screen.
      const o = await noHorizontalOverflow(page);
      expect(o.scroll).toBeLessThanOrEqual(o.inner);
      const run = page.getByRole('button', { name: '▶ Run' });
      const box = (await run.boundingBox())!;
      expect(box.y + box.height).toBeLessThan(size.height * 0.6);
      // The zoom buttons do not cover the badge's text.
      const badge = page.getByTestId('run-timeline').locator('.bubble-badge');
      await badge.scrollIntoViewIfNeeded();
      const badgeParts = [await page.getByTestId('badge-bubble').boundingBox(), await page.getByTestId('badge-makespan').boundingBox()];
      const zoom = page.getByTestId('run-timeline').getByRole('toolbar');
      for (const b of await zoom.getByRole('button').all()) {
        const bb = (await b.boundingBox())!;
        for (const part of badgeParts) expect(overlaps(bb, part!)).toBe(false);
      }
      await shot(page, `${size.name}-timeline`);

      // Dismissed, it stays away on the next visit; "What is this?" brings it back.
      await intro.getByRole('button', { name: 'Hide the introduction' }).click();
      await expect(page.getByTestId('intro')).toHaveCount(0);
      await page.reload();
      await waitForWebGpu(page);
      await expect(page.getByTestId('intro')).toHaveCount(0);
      await shot(page, `${size.name}-returning`);
      await page.getByRole('button', { name: 'What is this?' }).click();
      await expect(page.getByTestId('intro')).toBeVisible();
    });

    test('the skip link leads to the run controls and the R shortcut is written on the page', async ({ page }) => {
      await page.goto('./');
      await expect(page.getByRole('button', { name: '▶ Run' })).toBeVisible();
      await page.keyboard.press('Tab');
      const skip = page.getByRole('link', { name: 'Skip to the run controls' });
      await expect(skip).toBeFocused();
      const sb = (await skip.boundingBox())!;
      expect(sb.y).toBeGreaterThanOrEqual(0);
      await page.keyboard.press('Enter');
      await expect(page.locator('#run-controls')).toBeFocused();
      await expect(page.locator('#run-controls .shortcut-hint')).toBeVisible();
      await expect(page.getByRole('button', { name: '▶ Run' })).toHaveAttribute('aria-keyshortcuts', 'R');
    });

    test('Compare and Simulate fit the window; the Compare table scrolls inside its box', async ({ page }) => {
      await page.goto('./?view=compare');
      await expect(page.getByTestId('compare-table')).toBeVisible();
      let o = await noHorizontalOverflow(page);
      expect(o.scroll).toBeLessThanOrEqual(o.inner);
      const scroller = page.getByTestId('compare-table').locator('.table-scroll');
      const fits = await scroller.evaluate((el) => ({ client: el.clientWidth, box: el.parentElement!.clientWidth }));
      expect(fits.client).toBeLessThanOrEqual(fits.box);
      await shot(page, `${size.name}-compare`);
      // The status line is the Train view's run: off that view it says so.
      await expect(page.locator('.status-line')).toContainText('Train view: ');
      await page.getByRole('tab', { name: 'Simulate at scale' }).click();
      o = await noHorizontalOverflow(page);
      expect(o.scroll).toBeLessThanOrEqual(o.inner);
      await expect(page.locator('.status-line')).toContainText('Train view: ');
      await shot(page, `${size.name}-simulate`);
      // The Plan panel's cuts table fits a tablet; on a phone it scrolls in its own box and "Use this cut" is reachable there.
      await page.getByTestId('plan-panel').getByText('Plan: where to cut').click();
      const cuts = page.getByRole('region', { name: /Cuts table/ });
      await expect(cuts.getByTestId('plan-use-flops')).toHaveCount(1);
      const w = await cuts.evaluate((el) => ({ scroll: el.scrollWidth, client: el.clientWidth, box: el.parentElement!.clientWidth }));
      expect(w.client).toBeLessThanOrEqual(w.box);
      if (size.width >= 800) expect(w.scroll).toBeLessThanOrEqual(w.client);
      await cuts.evaluate((el) => el.scrollTo({ left: el.scrollWidth }));
      const [rb, bb] = [(await cuts.boundingBox())!, (await cuts.getByTestId('plan-use-flops').boundingBox())!];
      expect(bb.x + bb.width).toBeLessThanOrEqual(rb.x + rb.width + 1);
      expect(bb.x).toBeGreaterThanOrEqual(rb.x - 1);
      o = await noHorizontalOverflow(page);
      expect(o.scroll).toBeLessThanOrEqual(o.inner);
      await page.getByRole('tab', { name: 'Train' }).click();
      await expect(page.locator('.status-line')).not.toContainText('Train view:');
    });
  });
}

test.describe('at 1440×900', () => {
  test.use({ viewport: { width: 1440, height: 900 } });

  test('a preset is a link like any other configuration; a click loads it in place', async ({ page }) => {
    await page.goto('./');
    const link = page.getByTestId('intro').getByRole('link', { name: 'then interleaved, 2 chunks per rank' });
    const href = (await link.getAttribute('href'))!;
    expect(href).toContain('schedule=interleaved-1f1b');
    expect(href).toContain('virtual=2');
    await link.click();
    await expect(page.getByLabel('Schedule', { exact: true })).toHaveValue('interleaved-1f1b');
    await expect(page.getByLabel('Virtual stages per rank')).toHaveValue('2');
    expect(new URL(page.url()).searchParams.get('schedule')).toBe('interleaved-1f1b');
    // The same link opened cold gives the same configuration.
    const fromClick = await page.evaluate(() => window.pipelab.urlConfig());
    await page.goto(`./${href}`);
    expect(await page.evaluate(() => window.pipelab.urlConfig())).toEqual(fromClick);
  });

  test('choosing interleaved 1F1B sets 2 virtual stages and the depth they need', async ({ page }) => {
    await page.goto('./');
    await page.getByLabel('Schedule', { exact: true }).selectOption('interleaved-1f1b');
    await expect(page.getByLabel('Virtual stages per rank')).toHaveValue('2');
    await expect(page.getByLabel('Depth (layers)')).toHaveValue('7');
    await expect(page.locator('.config-problem')).toHaveCount(0);
    // Raising v past the depth offers the fix in one click.
    await page.getByLabel('Virtual stages per rank').fill('3');
    await expect(page.getByTestId('depth-fix')).toContainText('12 stages need at least 12 blocks');
    await expect(page.getByRole('status')).toContainText('Not ready:');
    await expect(page.getByRole('status')).not.toContainText('Ready to train');
    await page.getByRole('button', { name: 'Set depth to 11' }).click();
    await expect(page.locator('.config-problem')).toHaveCount(0);
    await expect(page.getByRole('status')).toContainText('Ready to train');
    // Unit time: simulated and closed form agree at v = 2 (they were 28.5 u against 57 u).
    await page.getByLabel('Virtual stages per rank').fill('2');
    const row = page.getByTestId('run-numbers').getByRole('row', { name: /Makespan, unit time/ });
    await expect(row).toContainText('28.5 u');
    await expect(row.getByRole('cell').nth(2)).toHaveText('28.5 u');
  });

  test('the README’s names link opens the model that choosing Names gives', async ({ page }) => {
    await page.goto('./?dataset=names&ranks=4&microbatches=8&schedule=1f1b&steps=50');
    const fromLink = await page.evaluate(() => window.pipelab.urlConfig());
    await page.goto('./');
    await page.getByLabel('Data set').selectOption('names');
    await page.getByLabel('Steps').fill('50');
    expect(await page.evaluate(() => window.pipelab.urlConfig())).toEqual(fromLink);
    expect(fromLink.errors).toEqual([]);
    expect(fromLink.config).toMatchObject({ hidden: 128, activation: 'gelu', batchSize: 256 });
  });

  test('skip link, R shortcut, focus after Run, and Stop while starting is not a failure', async ({ page }) => {
    await page.goto('./?steps=400&evalEvery=0&hidden=16');
    await waitForWebGpu(page);
    await page.keyboard.press('Tab');
    await expect(page.getByRole('link', { name: 'Skip to the run controls' })).toBeFocused();
    await page.keyboard.press('Enter');
    await expect(page.locator('#run-controls')).toBeFocused();
    // The shortcut is documented on the page.
    await expect(page.locator('.shortcut-hint')).toContainText('R');
    // R starts; Stop at once, while the workers start, is a stop.
    await page.keyboard.press('r');
    // Stop in the same frame the page says it is starting the workers (before any step).
    const stoppedWhile = await page.evaluate(async () => {
      const st = () => document.querySelector('[role=status]')?.getAttribute('data-status');
      while (st() === 'idle') await new Promise((r) => requestAnimationFrame(r));
      const was = st();
      [...document.querySelectorAll('button')].find((b) => b.textContent === '■ Stop')?.click();
      return was;
    });
    expect(stoppedWhile).toBe('starting');
    await waitForStatus(page, ['stopped', 'done', 'error']);
    expect(await status(page)).toBe('stopped');
    await expect(page.getByRole('status')).not.toContainText('failed');
    await expect(page.getByRole('alert')).toHaveCount(0);
    // Run by mouse: focus stays on the run button (now Pause), and R pauses.
    await page.getByRole('button', { name: '▶ Run' }).click();
    await waitForStatus(page, ['running']);
    const focused = await page.evaluate(() => document.activeElement?.textContent ?? document.activeElement?.tagName);
    expect(focused).toBe('❚❚ Pause');
    // Step cannot act while a run runs; it says so without dropping focus.
    await expect(page.getByRole('button', { name: 'Step', exact: true })).toHaveAttribute('aria-disabled', 'true');
    await page.locator('body').press('r');
    await waitForStatus(page, ['paused']);
    await page.keyboard.press('r');
    await waitForStatus(page, ['running', 'done']);
    await page.getByRole('button', { name: '■ Stop' }).click();
    await waitForStatus(page, ['stopped', 'done']);
  });

  test('after a run: numbers labelled and agreeing, gap attribution, full legend, live boundary, loss axes and hover', async ({ page }) => {
    await page.goto('./?ranks=4&microbatches=8&schedule=1f1b&steps=6&evalEvery=1&hidden=32');
    await waitForWebGpu(page);
    // Live decision boundary: one step, held, and the boundary is there before the run ends.
    await page.getByRole('button', { name: 'Step', exact: true }).click();
    await waitForStatus(page, ['paused']);
    await expect(page.getByTestId('results').locator('canvas')).toBeVisible({ timeout: 30_000 });
    await page.getByRole('button', { name: '▶ Resume' }).click();
    await waitForStatus(page, ['done'], 120_000);

    const numbers = page.getByTestId('run-numbers');
    await expect(numbers.getByRole('columnheader', { name: /measured/ })).toContainText('mean of steps 2–6');
    // The badge and the table's "step drawn" row: the same quantity, the same value.
    const badge = (await page.getByTestId('badge-bubble').textContent())!;
    const drawnRow = numbers.getByRole('row', { name: /Bubble, step drawn above/ });
    await expect(drawnRow.getByRole('cell').first()).toHaveText(badge);
    // No row mixes ms and unit time.
    for (const row of await numbers.getByRole('row').all()) {
      const t = (await row.textContent()) ?? '';
      expect(/\d ms/.test(t) && /\d u\b/.test(t), t).toBe(false);
    }
    // The gap attribution: closed form to measured in four checkable rows that add up.
    const gap = page.getByTestId('gap-attribution');
    await expect(gap.locator('tr[data-gap]')).toHaveCount(4);
    const bubbleRow = numbers.getByRole('row', { name: /^Bubble\b/ }).first();
    const measuredBubble = (await bubbleRow.getByRole('cell').first().textContent())!;
    await expect(gap.locator('tr[data-gap="device"] td').last()).toHaveText(measuredBubble);
    const closedCell = (await bubbleRow.getByRole('cell').nth(2).textContent())!;
    await expect(gap.locator('tr[data-gap="closed"] td').last()).toHaveText(closedCell.split(' ')[0]);
    await expect(gap).toContainText('ranks sharing one device');

    // The legend names every mark drawn, the comm marks each with its own label.
    const legend = page.getByTestId('run-timeline').getByRole('list', { name: 'Timeline legend' });
    await expect(legend).toContainText('idle (the bubble)');
    for (const kind of ['send', 'transfer', 'recv-wait', 'readback upload']) await expect(legend.locator(`li[data-comm="${kind}"]`)).toHaveCount(1);
    await expect(legend).toContainText('GPU → CPU');
    // The README's picture of the timeline is this run's, taken here so it stays true (docs/images/timeline.png).
    await page.getByTestId('run-timeline').screenshot({ path: join(import.meta.dirname, '..', 'docs', 'images', 'timeline.png') });

    // Loss chart: axis labels and the value under the pointer.
    const chart = page.getByTestId('loss-panel').locator('svg');
    await expect(chart.locator('text.axis-label')).toHaveText(['step', 'loss (nats)']);
    await chart.scrollIntoViewIfNeeded();
    const cb = (await chart.boundingBox())!;
    await page.mouse.move(cb.x + cb.width * 0.97, cb.y + cb.height * 0.5);
    const losses = ((await page.getByTestId('loss-panel').locator('figure').getAttribute('data-losses')) ?? '').split(',').map(Number);
    await expect(page.getByTestId('loss-hover')).toContainText(`step 6: training loss ${losses[5].toFixed(4)}`);
    await shot(page, 'wide-after-run');
  });

  test('Compare: every measured row says where its gap comes from, and agrees with its panel', async ({ page }) => {
    await page.goto('./?view=compare&compare.schedules=1f1b,zb-h1&compare.steps=2&compare.virtual=2&hidden=16');
    await waitForWebGpu(page);
    await page.getByRole('button', { name: '▶ Measure each' }).click();
    for (const name of ['1f1b', 'zb-h1']) await expect(page.getByTestId(`gap-${name}`)).toContainText('pp', { timeout: 120_000 });
    const table = page.getByTestId('compare-table');
    for (const [name, label] of [['1f1b', '1F1B'], ['zb-h1', 'ZB-H1']] as const) {
      const row = table.getByRole('row', { name: new RegExp(`^${label}`) });
      const parts = ((await page.getByTestId(`gap-${name}`).textContent()) ?? '').split(' · ');
      expect(parts).toHaveLength(3);
      // Table and panel: the same step, the same bubble.
      const badge = (await page.getByTestId(`compare-${name}`).getByTestId('badge-bubble').textContent())!;
      await expect(row.getByRole('cell').nth(4)).toHaveText(badge);
    }
    await shot(page, 'wide-compare-measured');
  });
});

test.describe('at 390×844 after a run', () => {
  test.use({ viewport: { width: 390, height: 844 } });

  test('nothing overflows the window once the numbers, the gap table and the results are there', async ({ page }) => {
    await page.goto('./?steps=3&evalEvery=0&hidden=16');
    await waitForWebGpu(page);
    await page.getByRole('button', { name: '▶ Run' }).click();
    await waitForStatus(page, ['done'], 120_000);
    await expect(page.getByTestId('gap-attribution')).toBeVisible();
    const o = await noHorizontalOverflow(page);
    expect(o.scroll).toBeLessThanOrEqual(o.inner);
    await page.getByTestId('run-numbers').scrollIntoViewIfNeeded();
    await shot(page, 'phone-after-run-numbers');
    await page.getByTestId('gap-attribution').scrollIntoViewIfNeeded();
    await shot(page, 'phone-after-run-gap');
    // The loss chart is drawn at its box's width, not shrunk: its tick labels keep their size.
    const chart = await page.getByTestId('loss-panel').locator('svg').evaluate((svg: SVGSVGElement) => ({
      drawn: svg.viewBox.baseVal.width,
      shown: svg.getBoundingClientRect().width,
      tick: parseFloat(getComputedStyle(svg.querySelector('.tick')!).fontSize),
    }));
    expect(Math.abs(chart.drawn - chart.shown)).toBeLessThanOrEqual(1);
    expect(chart.tick).toBeGreaterThanOrEqual(10);
    // A command-line flag in an export hint stays on one line.
    const flag = page.locator('code.flag', { hasText: '--nproc_per_node=' });
    await flag.scrollIntoViewIfNeeded();
    expect(await flag.evaluate((el) => el.getClientRects().length)).toBe(1);
  });
});
