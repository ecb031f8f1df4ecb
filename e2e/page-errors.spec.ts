/**
 * The shared `page` of e2e/page-errors.ts fails a test on an uncaught error in the page: a test that throws one
 * (and an unhandled rejection) in an otherwise passing page must fail, so it is marked as expected to fail.
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
