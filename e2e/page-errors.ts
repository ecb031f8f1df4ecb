/**
 * Every spec imports `test` and `expect` from here, not from '@playwright/test': its `page` fails the test on any
 * uncaught error in the page (an exception or an unhandled rejection), listed with the test's own failures, instead
 * of logging it and passing. `watchErrors` also collects console errors, for tests that expect none of those either.
 *
 * `sharedPage` is one page for all the tests of a spec file that ask for it (`async ({ sharedPage: page }) => ...`):
 * its app, its warm Web Workers, their WebGPU devices and compiled kernels are paid for once per file, not once per
 * test. It fails a test on an uncaught page error just as `page` does, counting only the errors raised while that
 * test ran (and any raised between the file's previous test and this one). A test that fails ends the Playwright
 * worker, so the tests after it start on a fresh page; a spec whose tests need a fresh page keep asking for `page`.
 */
import { test as base, expect, type BrowserContext, type Page } from '@playwright/test';

export { expect };

interface FilePage {
  /** The spec file and the viewport it was opened for (a describe's test.use may ask for another). */
  key: string;
  context: BrowserContext;
  page: Page;
  errors: string[];
}

// The shared page of the spec file being run (one Playwright worker runs one file's tests in order).
let current: FilePage | null = null;

export const test = base.extend<{ sharedPage: Page }>({
  page: async ({ page }, use) => {
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.stack ?? e.message));
    await use(page);
    expect(errors, 'uncaught errors in the page').toEqual([]);
  },
  sharedPage: async ({ browser, viewport }, use, testInfo) => {
    const key = `${testInfo.file} at ${JSON.stringify(viewport)}`;
    let leftOver: string[] = [];
    if (current && (current.key !== key || current.page.isClosed())) {
      // Errors raised after the previous page's last test ended still fail a test: this one, naming that page.
      leftOver = current.errors.splice(0).map((e) => `after the last test of ${current!.key}: ${e}`);
      await current.context.close();
      current = null;
    }
    if (!current) {
      // The project's context options (baseURL, viewport) apply to a context made during a test.
      const context = await browser.newContext();
      const page = await context.newPage();
      const errors: string[] = [];
      page.on('pageerror', (e) => errors.push(e.stack ?? e.message));
      current = { key, context, page, errors };
    }
    const mine = current;
    await use(mine.page);
    const errors = [...leftOver, ...mine.errors.splice(0)];
    expect(errors, 'uncaught errors in the page').toEqual([]);
  },
});

/** The page's uncaught errors and console errors, collected from now on (a test ends expecting none). */
export function watchErrors(page: Page): string[] {
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(`pageerror: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(`console.error: ${m.text()}`);
  });
  return errors;
}

/**
 * The app at ./ with window.pipelab ready. A page that has it already (a `sharedPage` after the file's first test)
 * is kept as it is, with its warm workers: only automation runs follow, which take their whole configuration.
 */
export async function openApp(page: Page): Promise<void> {
  if (page.url() !== 'about:blank' && (await page.evaluate(() => !!window.pipelab))) return;
  await page.goto('./');
  await page.waitForFunction(() => !!window.pipelab);
}
