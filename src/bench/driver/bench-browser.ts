/**
 * The bench page in Chromium, as `npm run bench` and the GPU probe
 * (browser-probe.ts, scripts/gpu-browser-bench.sh) open it: dist/ served by
 * `vite preview` on 127.0.0.1, Chromium started by e2e/chromium.ts with the
 * adapter asked for (SwiftShader or one of its GPU recipes), bench.html loaded
 * and window.pipelabBench ready.
 */
import { chromium, type Browser, type Page } from 'playwright';
import { preview } from 'vite';
import { chromiumLaunchOptions, type BrowserGpu } from '../../../e2e/chromium.ts';

export interface Served {
  url: string;
  close(): Promise<void>;
}

/** Serves a built dist/ folder of the app; `root` is the repository (vite's config). */
export async function serveDist(root: string, dist: string): Promise<Served> {
  const server = await preview({ root, logLevel: 'warn', build: { outDir: dist }, preview: { host: '127.0.0.1', port: 0, strictPort: false } });
  const url = server.resolvedUrls?.local[0];
  if (!url) throw new Error('vite preview did not report a URL');
  return { url, close: () => new Promise<void>((r) => server.httpServer.close(() => r())) };
}

export interface BenchPage {
  browser: Browser;
  page: Page;
  close(): Promise<void>;
}

/** Starts Chromium for `gpu`, opens `${url}bench.html` and waits for the bench API; page errors go to stderr under `label`. */
export async function openBenchPage(url: string, gpu: BrowserGpu, label = 'bench'): Promise<BenchPage> {
  const browser = await chromium.launch(chromiumLaunchOptions(gpu));
  try {
    const page = await browser.newPage();
    page.on('pageerror', (e) => console.error(`${label} page error: ${e.message}`));
    page.on('console', (m) => {
      if (m.type() === 'error' && !m.text().startsWith('Failed to load resource')) console.error(`${label} page console: ${m.text()}`);
    });
    page.on('response', (r) => {
      if (r.status() >= 400) console.error(`${label} page: ${r.status()} for ${r.url()}`);
    });
    await page.goto(`${url}bench.html`);
    await page.waitForFunction(() => window.pipelabBench?.ready === true, null, { timeout: 60_000 });
    return { browser, page, close: () => browser.close() };
  } catch (e) {
    await browser.close();
    throw e;
  }
}
