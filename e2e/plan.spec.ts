/** The profiling pass in the browser: one Worker and one WebGPU device per block, read back as a profile that plans. */
import type { Locator, Page } from '@playwright/test';
import { test, expect, watchErrors } from './page-errors.ts';

/** The Simulate view's Plan panel on a pasted profile (written as JSON), and the page's errors from before it opened. */
async function pastedPlan(page: Page, profile: object): Promise<{ panel: Locator; errors: string[] }> {
  const errors = watchErrors(page);
  await page.goto('./?view=simulate');
  const panel = page.getByTestId('plan-panel');
  await panel.getByText('Plan: where to cut').click();
  await panel.getByLabel('Profile source').selectOption('pasted');
  await panel.getByLabel('Profile JSON').fill(JSON.stringify(profile));
  return { panel, errors };
}

test('window.pipelab.profile measures every block and the profile plans', async ({ page }) => {
  test.setTimeout(240_000);
  await page.goto('./');
  await page.waitForFunction(() => !!window.pipelab);
  const profile = await page.evaluate(async () => {
    const cfg = { ...window.pipelab.defaultConfig(), layers: 3, hidden: 32, batchSize: 64, microbatches: 4, steps: 2, evalEvery: 0 };
    return window.pipelab.profile(cfg);
  });
  const { parseProfile } = await import('../src/plan/profile.ts');
  const { planPartition } = await import('../src/plan/partition.ts');
  expect(parseProfile(profile)).toEqual(profile);
  expect(profile.blocks.length).toBeGreaterThanOrEqual(4);
  expect(profile.comm).toHaveLength(profile.blocks.length - 1);
  for (const b of profile.blocks) {
    expect(b.F).toBeGreaterThan(0);
    expect(b.I + b.W).toBeGreaterThan(0);
    expect(b.heldBytes).toBeGreaterThan(0);
  }
  expect(profile.source).toMatch(/measured on .* \((GPU timestamps|wall time)\), 16 rows per micro-batch/);
  expect(planPartition(profile, 2).ranges).toHaveLength(2);
  expect(await page.evaluate(() => window.pipelab.liveWorkers())).toBe(0);
});

test('the page plans: the profile as a table, the three cuts, the auto schedule within the cap, a measured profile', async ({ page }) => {
  test.setTimeout(240_000);
  await page.goto('./?view=simulate&layers=3&hidden=32');
  const panel = page.getByTestId('plan-panel');
  await panel.getByText('Plan: where to cut').click();
  const rows = panel.getByTestId('plan-profile').locator('tbody tr');
  await expect(rows).toHaveCount(4);
  await expect(panel.getByTestId('plan-splits').locator('tbody tr')).toHaveCount(3);
  // The third cut is by the profile's times: the FLOPs estimate's until a profiling pass measured them.
  await expect(panel.getByTestId('plan-cut-measured').getByRole('rowheader')).toHaveText('times of the FLOPs estimate');
  await panel.getByLabel('Memory cap (micro-batches per rank)').fill('1');
  const schedules = panel.getByTestId('plan-schedules');
  await expect(schedules.locator('tbody tr').first()).toContainText('auto');
  await expect(schedules.locator('tbody tr').first()).toContainText('yes');
  // 1F1B holds as many micro-batches as ranks on rank 0: over a cap of 1.
  await expect(schedules.locator('tbody tr', { hasText: '1f1b' })).toContainText('no');
  await panel.getByTestId('plan-measure').click();
  await expect(panel.getByLabel('Profile source')).toHaveValue('measured', { timeout: 120_000 });
  await expect(panel.getByTestId('plan-cut-measured').getByRole('rowheader')).toHaveText('times of the profiling pass (measured)');
  await expect(panel).toContainText(/measured on .* \((GPU timestamps|wall time)\)/);
  // The lanes probe: the measured profile knows this machine's lanes, so the plan shows both predictions.
  await expect(panel).toContainText(/\d(\.\d)? effective lanes/);
  await expect(schedules).toContainText('auto, this machine (shared device)');
  await expect(schedules).toContainText('auto, p independent GPUs');
  await expect(rows).toHaveCount(4);
  const [dl] = await Promise.all([page.waitForEvent('download'), panel.getByRole('button', { name: 'Export profile (JSON)' }).click()]);
  expect(dl.suggestedFilename()).toBe('pipelab-profile.json');
});

test('a run named auto keeps within its memCap; a run may cut by block count', async ({ page }) => {
  test.setTimeout(180_000);
  await page.goto('./?schedule=auto&memCap=1&partition=blocks&ranks=2');
  await page.waitForFunction(() => !!window.pipelab);
  const r = await page.evaluate(async () => {
    const { config, errors } = window.pipelab.urlConfig();
    const rep = await window.pipelab.run({ ...config, layers: 3, hidden: 16, batchSize: 32, microbatches: 4, steps: 2, evalEvery: 0 });
    // live activations per rank, in its own order: +1 at F, −1 at W or B
    const peaks = rep.schedule.order.map((list) => {
      let n = 0, peak = 0;
      for (const a of list) {
        n += a.op === 'F' ? 1 : a.op === 'W' || a.op === 'B' ? -1 : 0;
        peak = Math.max(peak, n);
      }
      return peak;
    });
    return { errors, config: { schedule: config.schedule, memCap: config.memCap, partition: config.partition }, peaks, stageBlocks: rep.stageBlocks, losses: rep.losses.length, live: window.pipelab.liveWorkers() };
  });
  expect(r.errors).toEqual([]);
  expect(r.config).toEqual({ schedule: 'auto', memCap: 1, partition: 'blocks' });
  expect(r.peaks).toEqual([1, 1]);
  expect(r.stageBlocks).toEqual([[0, 2], [2, 4]]);
  expect(r.losses).toBe(2);
  expect(r.live).toBe(0);
});

test('the Train view shows auto\'s memory bound beside each stage: its cap of micro-batches, and the stash each stage measured within it', async ({ page }) => {
  test.setTimeout(180_000);
  await page.goto('./?schedule=auto&memCap=2&ranks=4&microbatches=8&steps=2&evalEvery=0');
  await page.getByRole('button', { name: '▶ Run' }).click();
  await expect(page.getByRole('status')).toHaveAttribute('data-status', 'done', { timeout: 150_000 });
  const toBytes = (n: string, unit: string) => Number(n) * (unit === 'MiB' ? 1024 * 1024 : unit === 'KiB' ? 1024 : 1);
  for (const stage of [0, 1, 2, 3]) {
    const row = page.getByTestId('run-numbers').getByRole('row').filter({ has: page.getByRole('rowheader', { name: new RegExp(`stage ${stage}$`) }) });
    const measured = /([\d.]+)\s*(B|KiB|MiB)/.exec(await row.getByRole('cell').first().innerText());
    const bound = /^· ≤ ([\d.]+) (B|KiB|MiB)$/.exec((await row.getByTestId('stash-estimate').innerText()).trim());
    expect(measured, `stage ${stage}`).not.toBeNull();
    expect(bound, `stage ${stage}`).not.toBeNull();
    // One decimal of rounding on each side.
    expect(toBytes(measured![1], measured![2])).toBeLessThanOrEqual(toBytes(bound![1], bound![2]) * 1.01);
    // The cap held: at most 2 micro-batches' activations on any stage.
    expect(await row.getByRole('cell').first().innerText()).toMatch(/^[12] micro-batch/);
  }
});

test('the Plan panel runs each cut for real and shows its measured makespan; "Use this cut" sets the cut and the link keeps it', async ({ page }) => {
  test.setTimeout(300_000);
  // The names char-MLP, 6 blocks on 3 ranks: its heavy first block makes the FLOPs cut [1, 3, 2] differ from the block-count cut [2, 2, 2].
  await page.goto('./?view=simulate&dataset=names&layers=5&hidden=16&ranks=3&batchSize=16&microbatches=4&steps=4');
  const panel = page.getByTestId('plan-panel');
  await panel.getByText('Plan: where to cut').click();
  const splits = panel.getByTestId('plan-splits');
  await expect(splits.locator('tbody tr')).toHaveCount(3);
  await expect(splits).toContainText('mean of 3 steps');
  await expect(panel).toContainText('min(steps, 8) = 4 steps');
  // Cuts planned for another number of stages cannot be used or run: one sentence says what to change.
  await panel.getByLabel('Ranks to plan for').fill('2');
  await expect(panel.getByTestId('plan-cut-mismatch')).toHaveText('These cuts are for 2 stages but the run has ranks × virtual = 3: set “Ranks to plan for” to 3 (or the run\'s ranks to 2) to use or run them.');
  await expect(panel.getByTestId('plan-run-cuts')).toBeDisabled();
  await expect(panel.getByTestId('plan-use-blocks')).toBeDisabled();
  await panel.getByLabel('Ranks to plan for').fill('3');
  await panel.getByTestId('plan-run-cuts').click();
  const read = async (by: string) => {
    const cell = panel.getByTestId(`plan-cut-makespan-${by}`);
    await expect(cell).toHaveAttribute('data-ms', /^\d/, { timeout: 180_000 });
    return { ms: Number(await cell.getAttribute('data-ms')), stageBlocks: JSON.parse((await cell.getAttribute('data-stage-blocks')) ?? 'null') as number[][], text: await cell.textContent() };
  };
  const blocks = await read('blocks');
  const flops = await read('flops');
  const measured = await read('measured');
  await expect(panel.getByTestId('plan-run-cuts')).toBeEnabled({ timeout: 60_000 });
  console.log(`cuts measured: blocks ${blocks.text} ${JSON.stringify(blocks.stageBlocks)}, flops ${flops.text} ${JSON.stringify(flops.stageBlocks)}, measured ${measured.text}`);
  for (const r of [blocks, flops, measured]) {
    expect(r.ms).toBeGreaterThan(0);
    expect(r.text).toMatch(/^\d+(\.\d+)? ms$/);
  }
  // Each run cut where its row says; different cuts are different runs.
  expect(blocks.stageBlocks).toEqual([[0, 2], [2, 4], [4, 6]]);
  expect(flops.stageBlocks).toEqual([[0, 1], [1, 4], [4, 6]]);
  expect(measured.stageBlocks).toEqual(flops.stageBlocks);
  expect(measured.ms).toBe(flops.ms); // one run for the two rows with the same cut
  await expect(panel.getByTestId(`plan-cut-bubble-blocks`)).toHaveText(/^\d+(\.\d+)?%$/);
  await expect(panel.getByTestId('plan-cut-error')).toHaveCount(0);
  expect(await page.evaluate(() => window.pipelab.liveWorkers())).toBe(0);

  // "Use this cut": the run configuration takes the block-count cut, and the link carries it.
  await panel.getByTestId('plan-use-blocks').click();
  await expect(panel.getByTestId('plan-cut-blocks')).toContainText('in use (cut=2,2,2)');
  await expect.poll(() => new URL(page.url()).searchParams.get('cut')).toBe('2,2,2');
  expect(page.url()).toContain('cut=2,2,2');
  expect(new URL(page.url()).searchParams.get('partition')).toBe('cut');
  await page.goto(page.url().replace('view=simulate', 'view=run'));
  await page.waitForFunction(() => !!window.pipelab);
  const fromLink = await page.evaluate(() => window.pipelab.urlConfig());
  expect(fromLink.errors).toEqual([]);
  expect(fromLink.config.partition).toBe('cut');
  expect(fromLink.config.cut).toEqual([2, 2, 2]);
  await expect(page.getByLabel('Cut stages by')).toHaveValue('cut');
  await expect(page.getByLabel('Blocks per stage (cut)')).toHaveValue('2,2,2');
  // A cut that does not fit is named under its field.
  await page.getByLabel('Blocks per stage (cut)').fill('2,2');
  await expect(page.locator('form.config')).toContainText('cut = [2, 2]: has 2 stages; ranks × virtual = 3 stages need 3 entries');
});

test('a profile from a data-parallel cluster plans dp replicas: each stage’s all-reduce, and dp refused without the cluster’s ring', async ({ page }) => {
  test.setTimeout(120_000);
  const blocks = [0, 1, 2, 3].map((i) => ({ name: `b${i}`, F: 1, I: 1, W: 1, heldBytes: 1000, paramBytes: 4000 * (i + 1) }));
  const allReduce = { replicas: 2, latency: 0.05, bandwidth: 1e5, samples: [{ bytes: 1000, time: 0.11 }, { bytes: 100000, time: 1.1 }] };
  const { panel, errors } = await pastedPlan(page, { version: 1, unit: 'ms', source: 'a cluster', blocks, comm: [0.1, 0.1, 0.1], lanes: 8, allReduce });
  await panel.getByLabel('Ranks to plan for').fill('2');
  await panel.getByLabel('Data-parallel replicas to plan for').fill('2');
  // Stages of blocks 0–1 and 2–3: 12000 and 28000 bytes; a ring of 2: 2 · 0.05 + bytes / 1e5 ms.
  await expect(panel.getByTestId('plan-mesh')).toContainText('2 replicas × 2 ranks: all-reduce per stage 0.22, 0.38');
  await panel.getByLabel('Profile JSON').fill(JSON.stringify({ version: 1, unit: 'ms', source: 'one machine', blocks, comm: [0.1, 0.1, 0.1] }));
  await expect(panel.getByRole('alert')).toContainText('profile.allReduce = undefined: is missing: planning dp = 2 replicas needs the all-reduce measured on the cluster');
  await expect(panel.getByTestId('plan-mesh')).toHaveCount(0);
  await panel.getByLabel('Data-parallel replicas to plan for').fill('1');
  await expect(panel.getByTestId('plan-schedules')).toBeVisible();
  expect(errors).toEqual([]);
});

test('a profile from a tensor-parallel cluster plans tp: one worker’s pieces and collectives, and a tp it was not measured with refused', async ({ page }) => {
  test.setTimeout(120_000);
  const blocks = [0, 1, 2, 3].map((i) => ({ name: `b${i}`, F: 1, I: 1, W: 1, heldBytes: 1000 }));
  const tpAllReduce = { replicas: 2, latency: 0.05, bandwidth: 1e5, samples: [{ bytes: 1000, time: 0.11 }, { bytes: 100000, time: 1.1 }] };
  // Blocks 0–2 each wait for two all-reduces of 4000 bytes each way (0.14 ms each on the ring of 2); the last for none.
  const ar = { coll: 'tp-all-reduce', bytes: 4000 };
  const tp = { t: 2, blocks: blocks.map((b, i) => ({ F: 0.6, I: 0.6, W: 0.6, heldBytes: 600, forward: i < 3 ? [ar, ar] : [], backward: i < 3 ? [ar, ar] : [] })) };
  const { panel, errors } = await pastedPlan(page, { version: 1, unit: 'ms', source: 'a tp cluster', blocks, comm: [0.1, 0.1, 0.1], tpAllReduce, tp });
  await panel.getByLabel('Ranks to plan for').fill('2');
  await panel.getByLabel('Tensor-parallel workers to plan for').fill('2');
  await expect(panel.getByTestId('plan-tp')).toContainText('2 tp workers per stage, planned as one of them computes');
  // Blocks 0–1 | 2–3 (or 0–2 | 3): the collectives per stage are a multiple of 0.28 ms.
  const text = (await panel.getByTestId('plan-tp').textContent()) ?? '';
  const forward = /F ([\d.]+), ([\d.]+)/.exec(text)!.slice(1).map(Number);
  expect(forward.reduce((a, b) => a + b, 0)).toBeCloseTo(3 * 0.28, 2);
  await panel.getByLabel('Tensor-parallel workers to plan for').fill('4');
  await expect(panel.getByRole('alert')).toContainText('tp = 4: must be the tp the profile was measured with (profile.tp.t = 2)');
  await expect(panel.getByTestId('plan-tp')).toHaveCount(0);
  await panel.getByLabel('Tensor-parallel workers to plan for').fill('1');
  await expect(panel.getByTestId('plan-schedules')).toBeVisible();
  expect(errors).toEqual([]);
});

test('the Plan panel plans ZeRO over the replicas: each worker’s model states, ZeRO-3 gathering before every action, and why a shared machine is not predicted', async ({ page }) => {
  test.setTimeout(120_000);
  const blocks = [0, 1, 2, 3].map((i) => ({ name: `b${i}`, F: 1, I: 1, W: 1, heldBytes: 1000, paramBytes: 4000 }));
  const allReduce = { replicas: 2, latency: 0.05, bandwidth: 1e3, samples: [{ bytes: 1000, time: 1.1 }] };
  const { panel, errors } = await pastedPlan(page, { version: 1, unit: 'ms', source: 'a cluster', blocks, comm: [0.1, 0.1, 0.1], lanes: 2, allReduce });
  await panel.getByLabel('Ranks to plan for').fill('2');
  await expect(panel.getByLabel('ZeRO stage to plan for')).toBeDisabled();
  await panel.getByLabel('Data-parallel replicas to plan for').fill('2');
  // Stages of 8000 bytes: unsharded states 4 × 8000 = 32000 B (31.3 KiB) a worker; ZeRO-3 over 2 halves them.
  await expect(panel.getByTestId('plan-states')).toContainText('per stage: 31.3 KiB, 31.3 KiB');
  const makespan = async () => Number(await panel.getByTestId('plan-schedules').locator('tbody tr').first().locator('td').first().textContent());
  const plain = await makespan();
  await panel.getByLabel('ZeRO stage to plan for').selectOption('3a');
  await expect(panel.getByTestId('plan-states')).toContainText('per stage: 15.6 KiB, 15.6 KiB');
  await expect(panel.getByTestId('plan-no-shared')).toContainText("ZeRO-3's collectives between the actions are simulated on independent devices only; this machine's 2 lanes are shared by 4 workers");
  expect(await makespan()).toBeGreaterThan(plain);
  await expect(panel.getByRole('alert')).toHaveCount(0);
  expect(errors).toEqual([]);
});
