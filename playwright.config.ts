import { defineConfig } from '@playwright/test';
import { chromiumLaunchOptions } from './e2e/chromium.ts';

const port = Number(process.env.PIPELAB_E2E_PORT ?? 4317);
// The built app to serve (vite build's outDir); another folder lets two test runs share a checkout.
const dist = process.env.PIPELAB_DIST ?? 'dist';

// Tests run against the built app (dist/) served by `vite preview`.
export default defineConfig({
  testDir: 'e2e',
  testMatch: /.*\.spec\.ts/,
  timeout: 180_000,
  expect: { timeout: 30_000 },
  fullyParallel: false,
  workers: 1,
  retries: 0,
  reporter: [['list']],
  outputDir: 'test-results',
  use: {
    baseURL: `http://127.0.0.1:${port}/`,
    launchOptions: chromiumLaunchOptions(),
    screenshot: 'only-on-failure',
  },
  webServer: [
    {
      command: `npx vite preview --host 127.0.0.1 --port ${port} --strictPort --outDir ${dist}`,
      url: `http://127.0.0.1:${port}/`,
      reuseExistingServer: false,
      timeout: 60_000,
    },
    {
      // The dev server `npm run dev` runs (React StrictMode, unbundled modules): e2e/dev-server.spec.ts.
      command: `npx vite --host 127.0.0.1 --port ${port + 1} --strictPort`,
      url: `http://127.0.0.1:${port + 1}/`,
      reuseExistingServer: false,
      timeout: 60_000,
    },
  ],
});
