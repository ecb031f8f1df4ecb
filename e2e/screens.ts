/** Full-page screenshots kept under test-results/screens/ and attached to the test's report. */
import type { Page, TestInfo } from '@playwright/test';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';

export async function keepScreenshot(page: Page, info: TestInfo, name: string): Promise<void> {
  const dir = join(info.project.outputDir, 'screens');
  mkdirSync(dir, { recursive: true });
  const path = join(dir, `${name}.png`);
  await page.screenshot({ path, fullPage: true });
  await info.attach(name, { path, contentType: 'image/png' });
}
