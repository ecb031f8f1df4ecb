/**
 * The proof that a run leaves the tab intact: the page's "Export for PyTorch"
 * zip, run under Debian's torchrun (CPU, gloo, one process per rank), prints
 * the same loss at every step as the same run in headless Chromium (WebGPU
 * workers), within 1e-4 relative, and writes the same final weights (per
 * tensor ‖Δ‖/‖w‖ < 1e-4); dp × pp runs (dp = 2 replicas of a p = 2 pipeline,
 * 4 workers in the tab, torchrun with 4 processes, replica-major) as well,
 * and PipeDream-2BW's one stream on dp = 2 replicas. The cases' bundles are exported first, then torchrun runs
 * them all in one launch per world size (its processes import torch once) while each test runs its case in the tab
 * (one page for all the cases, through window.pipelab.run with the configuration each link gave).
 * Needs python3-torch (scripts/install-deps.sh).
 */
import type { Page } from '@playwright/test';
import { test, expect, openApp, watchErrors } from './page-errors.ts';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { maxRelativeDiff, maxWeightDiff, readTrainedWeights, runTorchrunMany, withoutKeyBias, type TorchrunResult } from '../src/export/testing/torchrun.ts';
import type { RunConfig } from '../src/config/run-config.ts';

/** Changes to the page's default configuration (the page module graph is not loaded in Node: it imports JSON data). */
type Change = Partial<RunConfig>;
const mlp: Change = { layers: 7, hidden: 16, batchSize: 32, microbatches: 8, steps: 6, evalEvery: 0 };
const CASES: { title: string; cfg: Change }[] = [
  { title: '1f1b, p = 4', cfg: { ...mlp, schedule: '1f1b', ranks: 4 } },
  { title: 'zb-h1, p = 4', cfg: { ...mlp, schedule: 'zb-h1', ranks: 4 } },
  { title: 'interleaved-1f1b, p = 4, v = 2', cfg: { ...mlp, schedule: 'interleaved-1f1b', ranks: 4, virtual: 2 } },
  {
    title: 'gpipe, p = 2, names char-MLP',
    cfg: { ...mlp, dataset: 'names', model: 'char-mlp', activation: 'gelu', layers: 3, hidden: 32, context: 3, embedDim: 8, microbatches: 4, schedule: 'gpipe', ranks: 2 },
  },
  {
    title: '1f1b, p = 2, names GPT (attention blocks, boundary [mb, T, C])',
    cfg: { ...mlp, dataset: 'names', model: 'gpt', layers: 3, heads: 2, width: 8, batchSize: 8, microbatches: 4, lr: 0.01, schedule: '1f1b', ranks: 2 },
  },
  // PipeDream-2BW: no flush, the whole run one stream with two weight versions a stage (stream.py).
  { title: 'pipedream-2bw, dp 2 × p 2 (one stream of 6 × 4 micro-batches; each block all-reduced over the replicas)', cfg: { ...mlp, schedule: 'pipedream-2bw', ranks: 2, dp: 2, microbatches: 4 } },
  // dp × pp: each schedule meets each model once, one with ZeRO-1 and one without (src/export/torch-export-dp.test.ts
  // runs the other pairs against the float64 single-device loop).
  {
    title: 'dp 2 × p 2, 1f1b, ZeRO-1, names char-MLP',
    cfg: { ...mlp, dataset: 'names', model: 'char-mlp', layers: 3, hidden: 16, context: 3, embedDim: 8, batchSize: 32, microbatches: 4, steps: 4, schedule: '1f1b', ranks: 2, dp: 2, zero: 1 },
  },
  {
    title: 'dp 2 × p 2, zb-h1, names GPT',
    cfg: { ...mlp, dataset: 'names', model: 'gpt', layers: 3, heads: 2, width: 8, batchSize: 16, microbatches: 4, steps: 4, lr: 0.01, schedule: 'zb-h1', ranks: 2, dp: 2 },
  },
];

/** Opens the page with the default configuration changed by `change`, through its URL; returns that configuration. */
async function openWith(page: Page, change: Change): Promise<RunConfig> {
  await page.goto('./');
  await page.waitForFunction(() => !!window.pipelab);
  const cfg = { ...(await page.evaluate(() => window.pipelab.defaultConfig())), ...change };
  await page.goto(`./?${new URLSearchParams(Object.entries(cfg).map(([k, v]) => [k, String(v)])).toString()}`);
  await page.waitForFunction(() => !!window.pipelab);
  expect(await page.evaluate(() => window.pipelab.urlConfig())).toEqual({ config: cfg, errors: [] });
  return cfg;
}

/** The page's own export of the configuration open in `page`: a zip holding one folder, unpacked; the folder. */
async function exportBundle(page: Page, cfg: RunConfig): Promise<string> {
  // For dp × ranks processes (the hint says how many).
  await expect(page.getByText(`--nproc_per_node=${cfg.dp * cfg.ranks}`, { exact: true })).toBeVisible();
  const dir = mkdtempSync(join(tmpdir(), 'pipelab-e2e-torch-'));
  const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Export for PyTorch (zip)' }).click()]);
  const zip = join(dir, download.suggestedFilename());
  await download.saveAs(zip);
  execFileSync('/usr/bin/python3', ['-m', 'zipfile', '-e', zip, dir]);
  return join(dir, readdirSync(dir).find((f) => f.endsWith('-torch')) as string);
}

test.describe('the exported PyTorch program gives the tab’s losses and weights under torchrun', () => {
  const folders: string[] = [];
  const worlds: number[] = [];
  // Each case's configuration as its link gave it back (urlConfig, checked equal in openWith).
  const configs: RunConfig[] = [];
  let torchRuns: Promise<TorchrunResult[]> = Promise.resolve([]);
  test.beforeAll(async ({ browser }, info) => {
    test.setTimeout(300_000);
    const context = await browser.newContext({ baseURL: info.project.use.baseURL });
    const page = await context.newPage();
    const errors = watchErrors(page);
    for (const { cfg: change } of CASES) {
      const cfg = await openWith(page, change);
      configs.push(cfg);
      folders.push(await exportBundle(page, cfg));
      worlds.push(cfg.dp * cfg.ranks);
    }
    await context.close();
    expect(errors, 'errors in the page that exported the bundles').toEqual([]);
    // Started here, awaited by each test after its tab run: torchrun and the tab side by side.
    torchRuns = runTorchrunMany(folders.map((dir, i) => ({ dir, world: worlds[i] })), 600_000);
    torchRuns.catch(() => undefined); // a failed launch fails each test where it is awaited
  });

  CASES.forEach(({ title }, i) => {
    // The cases' tab runs share one page and its warm workers (the configuration goes in whole to window.pipelab.run).
    test(title, async ({ sharedPage: page }) => {
      test.setTimeout(720_000);
      await openApp(page);
      const cfg = configs[i];
      const folder = folders[i];

      // torchrun and the tab's run side by side (each one's step time below is under the other's load).
      const tab = await page.evaluate(async (c) => {
        const r = await window.pipelab.run(c, { readWeights: true });
        const weights = r.weights ? Object.fromEntries(Object.entries(r.weights).map(([k, v]) => [k, Array.from(v)])) : undefined;
        return { losses: r.losses, weights, stepMs: r.phases.stepsMs / r.losses.length, makespanMs: r.makespanMs.measured };
      }, cfg);
      expect(tab.losses.length).toBe(cfg.steps);

      const torch = (await torchRuns)[i];
      expect(torch.code, torch.output).toBe(0);
      expect(torch.losses.length, torch.output).toBe(cfg.steps);
      const lossDiff = maxRelativeDiff(torch.losses, tab.losses);
      const comparable = (w: Readonly<Record<string, ArrayLike<number>>>) => (cfg.model === 'gpt' ? withoutKeyBias(w, cfg.width ?? 0) : w);
      expect(tab.weights, 'the tab read its weights').toBeDefined();
      const weightDiff = maxWeightDiff(comparable(readTrainedWeights(folder)), comparable(tab.weights!));
      const torchMs = torch.stepMs.slice(1).reduce((a, b) => a + b, 0) / (torch.stepMs.length - 1);
      console.log(
        `${title}: max relative loss difference ${lossDiff.toExponential(2)}, weights ${weightDiff.toExponential(2)}; ` +
          `step time, the two running side by side: tab ${tab.stepMs.toFixed(1)} ms wall (all steps; schedule makespan ${tab.makespanMs.toFixed(1)} ms after the first), ` +
          `torchrun CPU ${torchMs.toFixed(1)} ms (steps after the first)`,
      );
      expect(lossDiff).toBeLessThan(1e-4);
      expect(weightDiff).toBeLessThan(1e-4);
    });
  });
});
