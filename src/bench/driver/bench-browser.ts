/**
 * The bench page in Chromium, as `npm run bench` and the GPU probe
 * (browser-probe.ts, scripts/gpu-browser-bench.sh) open it: dist/ served on
 * 127.0.0.1 (static-server.ts), Chromium started by e2e/chromium.ts with the
 * adapter asked for (SwiftShader or one of its GPU recipes), bench.html loaded
 * and window.pipelabBench ready.
 */
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type Page } from 'playwright';
import { chromiumLaunchOptions, type BrowserGpu } from '../../../e2e/chromium.ts';

/**
 * The repository's folder: PIPELAB_ROOT when set (a one-file bundle of the
 * driver, scripts/bundle-browser-bench.mjs, lives elsewhere), else three up from here.
 */
export function benchRoot(): string {
  const fromEnv = process.env.PIPELAB_ROOT;
  return fromEnv ? resolve(fromEnv) : resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
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

/**
 * chrome://gpu's text (its sections live in shadow roots, so it is walked by
 * hand): what the browser says of its GPU process, for a recipe that gave no
 * hardware adapter. Cut to `max` characters.
 */
export async function chromeGpuText(browser: Browser, max = 200_000): Promise<string> {
  const page = await browser.newPage();
  try {
    await page.goto('chrome://gpu');
    await page.waitForTimeout(2000);
    // A string, not a function: tsx's helpers (__name) do not exist in the page.
    const text = await page.evaluate<string>(`(() => {
      const out = [];
      const walk = (n) => {
        if (n.nodeType === Node.TEXT_NODE) {
          const t = n.textContent.trim();
          if (t) out.push(t);
          return;
        }
        if (n.nodeName === 'STYLE' || n.nodeName === 'SCRIPT') return;
        if (n.shadowRoot) n.shadowRoot.childNodes.forEach(walk);
        n.childNodes.forEach(walk);
      };
      walk(document.body);
      return out.join('\\n');
    })()`);
    return text.slice(0, max);
  } finally {
    await page.close();
  }
}
