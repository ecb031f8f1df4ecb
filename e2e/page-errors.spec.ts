/**
 * The `page` and the `sharedPage` of e2e/page-errors.ts fail a test on an uncaught error in the page: a test that throws one
 * (and an unhandled rejection) in an otherwise passing page must fail, so it is marked as expected to fail; the test after it on the same shared page passes.
 */
import { test, expect } from './page-errors.ts';

test('an uncaught exception in the page fails the test (expected to fail)', async ({ page }) => {
  test.fail();
  await page.goto('./');
  await page.evaluate(() => void setTimeout(() => {
    throw new Error('a deliberate uncaught error');
  }, 0));
  await page.waitForTimeout(300);
  expect(await page.title()).toBeTruthy();
});

test('an unhandled rejection in the page fails the test (expected to fail)', async ({ page }) => {
  test.fail();
  await page.goto('./');
  await page.evaluate(() => void Promise.reject(new Error('a deliberate unhandled rejection')));
  await page.waitForTimeout(300);
});

test('a page without errors passes', async ({ page }) => {
  await page.goto('./');
  await page.waitForTimeout(300);
});

test.describe('the shared page of a spec file', () => {
  test('an uncaught exception in the shared page fails the test (expected to fail)', async ({ sharedPage: page }) => {
    test.fail();
    await page.goto('./');
    await page.evaluate(() => {
      (window as unknown as { sharedMark: number }).sharedMark = 1;
      void setTimeout(() => {
        throw new Error('a deliberate uncaught error in the shared page');
      }, 0);
    });
    await page.waitForTimeout(300);
  });

  test('the next test gets the same page, with none of the errors before it', async ({ sharedPage: page }) => {
    // The same document: the mark set by the test before is still there, no navigation in between.
    expect(await page.evaluate(() => (window as unknown as { sharedMark?: number }).sharedMark)).toBe(1);
    await page.waitForTimeout(300);
  });

  test('an unhandled rejection in the shared page fails the test (expected to fail)', async ({ sharedPage: page }) => {
    test.fail();
    await page.evaluate(() => void Promise.reject(new Error('a deliberate unhandled rejection in the shared page')));
    await page.waitForTimeout(300);
  });
});
