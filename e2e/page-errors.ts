/**
 * Every spec imports `test` and `expect` from here, not from '@playwright/test': its `page` fails the test on any
 * uncaught error in the page (an exception or an unhandled rejection), listed with the test's own failures, instead
 * of logging it and passing. `watchErrors` also collects console errors, for tests that expect none of those either.
 */
import { test as base, expect, type Page } from '@playwright/test';

export { expect };

export const test = base.extend({
  page: async ({ page }, use) => {
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.stack ?? e.message));
    await use(page);
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
