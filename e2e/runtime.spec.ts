/**
 * The pipeline runtime for real: one module Worker and one WebGPU device per
 * rank in headless Chromium, micro-batches over MessageChannels.
 */
import type { Page } from '@playwright/test';
import { test, expect, openApp } from './page-errors.ts';
import { generateSchedule, SCHEDULE_NAMES, SCHEDULES, type ScheduleName } from '../src/schedule/registry.ts';
import { execFileSync } from 'node:child_process';
import type { RunConfig } from '../src/config/run-config.ts';
import type { DoubleBufferedResult } from '../src/nn/train-double-buffered.ts';
import { relErr } from '../src/util/rel-err.ts';

/** Every (p, m, v) of p in {2, 4}, m in {1, 4, 8} that the schedule accepts; Hanayo, kept small, one and two waves on 2 ranks. */
function pairs(name: ScheduleName): [number, number, number][] {
  if (name === 'hanayo') return [[2, 4, 2], [2, 4, 4]];
  const kind = SCHEDULES[name];
  const v = kind.virtualFor(2);
  const out: [number, number, number][] = [];
  for (const p of [2, 4]) {
    for (const m of [1, 4, 8]) {
      try {
        kind.validateParams(p, m, v);
        out.push([p, m, v]);
      } catch {
        // not accepted (interleaved needs m % p == 0)
      }
    }
  }
  return out;
}

test.describe('synchronous schedules train exactly like one device', () => {
  for (const name of SCHEDULE_NAMES.filter((n) => SCHEDULES[n].update === 'flush')) {
    test(name, async ({ sharedPage: page }) => {
      test.setTimeout(300_000);
      await openApp(page);
      const cases = pairs(name);
      expect(cases.length).toBeGreaterThan(0);
      const results = await page.evaluate(
        async ({ name, cases }) => {
          // One model for every case: 8 blocks hold up to p·v = 8 stages.
          const base = { ...window.pipelab.defaultConfig(), layers: 7, hidden: 12, batchSize: 16, steps: 2, evalEvery: 0, schedule: name as never };
          // One reference per m, kept on the shared page for the next schedule's test (one device runs no
          // schedule: the same base and m give the same training, whichever schedule asked first).
          type Ref = Awaited<ReturnType<typeof window.pipelab.runSingleDevice>>;
          const kept = window as unknown as { oneDeviceRefs?: Map<string, Ref> };
          const refs = (kept.oneDeviceRefs ??= new Map<string, Ref>());
          const out = [];
          for (const [p, m, v] of cases) {
            const cfg = { ...base, ranks: p, microbatches: m, virtual: v };
            const key = JSON.stringify({ ...base, schedule: undefined, microbatches: m });
            if (!refs.has(key)) refs.set(key, await window.pipelab.runSingleDevice(cfg));
            const ref = refs.get(key)!;
            const rep = await window.pipelab.run(cfg, { readWeights: true });
            let maxLoss = 0, maxWeight = 0;
            rep.losses.forEach((l, i) => (maxLoss = Math.max(maxLoss, Math.abs(l - ref.losses[i]) / Math.abs(ref.losses[i]))));
            const names = Object.keys(ref.params);
            for (const k of names) {
              const a = rep.weights![k], b = ref.params[k];
              let num = 0, den = 0;
              for (let i = 0; i < b.length; i++) {
                num += (a[i] - b[i]) ** 2;
                den += b[i] ** 2;
              }
              maxWeight = Math.max(maxWeight, Math.sqrt(num / den));
            }
            const compute = rep.timeline.intervals.filter((iv) => iv.op !== 'comm' && iv.op !== 'collective'); // DualPipe's copies' sums are collectives
            out.push({ p, m, v, maxLoss, maxWeight, weights: Object.keys(rep.weights!).length, params: names.length, lanes: new Set(compute.map((iv) => iv.rank)).size, actions: compute.length, copySums: rep.timeline.intervals.filter((iv) => iv.op === 'collective' && iv.coll === 'copy-sum').length, losses: rep.losses.length, leaked: rep.leakedBuffers, live: window.pipelab.liveWorkers(), mismatch: rep.replicaMismatch ?? null, bubble: rep.bubble });
          }
          return out;
        },
        { name, cases },
      );
      for (const r of results) {
        const label = `${name} p=${r.p} m=${r.m} v=${r.v}`;
        // Same kernels in the same order per micro-batch: only the order of the
        // micro-batch sums may differ, so 1e-5 relative is a loose bound.
        expect(r.maxLoss, label).toBeLessThan(1e-5);
        expect(r.maxWeight, label).toBeLessThan(1e-5);
        expect(r.weights, label).toBe(r.params);
        expect(r.lanes, label).toBe(r.p);
        // One interval per action (dualpipe-v splits only some backwards into I and W).
        expect(r.actions, label).toBe(generateSchedule(name, r.p, r.m, r.v).order.flat().length);
        expect(r.losses, label).toBe(2);
        expect(r.leaked, label).toBe(0);
        expect(r.live, label).toBe(0);
        // DualPipe: both model copies of every stage hold the same weights (their summed gradients agree bit for bit).
        if (SCHEDULES[name].copies > 1) {
          expect(r.mismatch, label).toBe(0);
          // The sum over the copies is drawn: one interval per stage (each rank holds one of each copy).
          expect(r.copySums, label).toBe(2 * r.p);
          const b = r.bubble;
          console.log(`${label}: max relative loss difference ${r.maxLoss.toExponential(2)}, weights ${r.maxWeight.toExponential(2)}, copies differ by ${r.mismatch}; bubble measured ${b.measured.toFixed(3)}, simulated ${b.simulated.toFixed(3)}, closed form ${b.closedForm?.toFixed(3)}`);
        }
      }
    });
  }
});

test('PipeDream asynchronous 1F1B trains and reports its stashed weight versions', async ({ sharedPage: page }) => {
  await openApp(page);
  const r = await page.evaluate(async () => {
    const cfg = { ...window.pipelab.defaultConfig(), schedule: 'pipedream' as const, hidden: 16, batchSize: 32, microbatches: 4, steps: 40, lr: 0.01, lrSchedule: 'constant' as const, evalEvery: 0 };
    // Its one window's steps are told done while it runs (through the stage-0 worker's Comlink proxy), and its
    // losses as the last stage's worker reads them back, before any onStep.
    const told: { stepsDone: number; stepsSeen: number }[] = [];
    const lossesTold: { step: number; loss: number; stepsSeen: number }[] = [];
    let stepsSeen = 0;
    const rep = await window.pipelab.run(cfg, {
      onStep: () => void stepsSeen++,
      onStreamProgress: ({ stepsDone }) => void told.push({ stepsDone, stepsSeen }),
      onStreamLoss: ({ step, loss }) => void lossesTold.push({ step, loss, stepsSeen }),
    });
    return { losses: rep.losses, stash: rep.weightStash, live: window.pipelab.liveWorkers(), told, lossesTold };
  });
  expect(r.losses).toHaveLength(40);
  expect(r.told.map((t) => t.stepsDone)).toEqual(Array.from({ length: 40 }, (_, k) => k + 1));
  expect(r.told.slice(0, -1).every((t) => t.stepsSeen === 0)).toBe(true);
  // The live losses are the report's, bit for bit, and came while the stream ran.
  expect(r.lossesTold.map((t) => [t.step, t.loss])).toEqual(r.losses.map((loss, k) => [k, loss]));
  expect(r.lossesTold.slice(0, -1).every((t) => t.stepsSeen === 0)).toBe(true);
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  expect(mean(r.losses.slice(-5))).toBeLessThan(0.9 * mean(r.losses.slice(0, 5)));
  expect(r.stash?.[0].versions).toBe(4);
  expect(r.stash?.[3].versions).toBe(1);
  expect(r.live).toBe(0);
});

/**
 * PipeDream-2BW's float64 one-device reference (src/nn/train-double-buffered.ts, the CPU tests' own) for `cfg`,
 * computed in Node under tsx (the data sets import JSON, which this process's loader does not take).
 */
function doubleBufferedReference(cfg: RunConfig): DoubleBufferedResult {
  const code = `
    const { trainDoubleBuffered } = await import('./src/nn/train-double-buffered.ts');
    const { CpuBackend } = await import('./src/nn/cpu-backend.ts');
    const { toTrainConfig } = await import('./src/config/run-config.ts');
    const r = await trainDoubleBuffered(new CpuBackend(), toTrainConfig(JSON.parse(process.argv[1])));
    const params = Object.fromEntries(Object.entries(r.params).map(([k, v]) => [k, Array.from(v)]));
    process.stdout.write(JSON.stringify({ ...r, params }));`;
  return JSON.parse(execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code, JSON.stringify(cfg)], { encoding: 'utf8', timeout: 60_000 }));
}

test('PipeDream-2BW (p = 2, m = 2) computes the float64 one-device stale rule, W(t+1) = W(t) − ν∇f(W(t−1))', async ({ sharedPage: page }) => {
  await openApp(page);
  const r = await page.evaluate(async () => {
    const cfg = { ...window.pipelab.defaultConfig(), schedule: 'pipedream-2bw' as const, ranks: 2, microbatches: 2, layers: 3, hidden: 12, batchSize: 16, steps: 4, lr: 0.01, evalEvery: 0 };
    const rep = await window.pipelab.run(cfg, { readWeights: true });
    return { cfg, losses: rep.losses, weights: Object.fromEntries(Object.entries(rep.weights!).map(([k, v]) => [k, Array.from(v)])), stash: rep.weightStash, held: rep.heldBytesPerWorker, leaked: rep.leakedBuffers, live: window.pipelab.liveWorkers() };
  });
  const cfg = r.cfg;
  const ref = doubleBufferedReference(cfg);
  expect(r.losses).toHaveLength(cfg.steps);
  const lossDiff = Math.max(...r.losses.map((l, i) => Math.abs(l - ref.losses[i]) / Math.abs(ref.losses[i])));
  const names = Object.keys(ref.params).sort();
  expect(Object.keys(r.weights).sort()).toEqual(names);
  const weightDiff = Math.max(...names.map((n) => relErr(r.weights[n], ref.params[n])));
  console.log(`pipedream-2bw p=2 m=2 in Chromium vs the float64 reference: losses ${lossDiff.toExponential(2)}, weights ${weightDiff.toExponential(2)} (relative)`);
  expect(lossDiff).toBeLessThan(1e-5);
  expect(weightDiff).toBeLessThan(1e-5);
  for (const w of Object.values(r.stash ?? {})) expect(w.versions).toBe(2);
  for (const h of r.held) expect(h.weights).toBe(2 * h.formula.weights);
  expect(r.leaked).toBe(0);
  expect(r.live).toBe(0);
});

test.describe('faults end the run with a message, never a hang', () => {
  const faults: [string, { kind: string; action: string; step?: number }, RegExp][] = [
    ['a worker that throws', { kind: 'throw', action: '2F1' }, /rank 2, stage 2, action 2F1, step 0: injected fault: the stage kernel threw/],
    ['a lost device', { kind: 'lose-device', action: '1B0' }, /^rank 1, stage 1, action 1\w+, step 0: .*WebGPU device was lost/],
    ['a crashed worker', { kind: 'crash-worker', action: '3F0' }, /rank 3: its worker crashed/],
    // The receiver of the lost activation and the rank it then leaves without a gradient both wait:
    // whichever began waiting first reports first; both name rank, stage and action.
    [
      'a missing message',
      { kind: 'drop-message', action: '0F2' },
      /^(rank 1, stage 1, action 1F2, step 0: rank 1 waited 4\.0 s for the activation of micro-batch 2 from rank 0|rank 0, stage 0, action 0B\d, step 0: rank 0 waited 4\.0 s for the gradient of micro-batch \d from rank 1) \(stage \d\) for \d[FB]\d and it never came$/,
    ],
    ['a malformed message', { kind: 'malformed-message', action: '1F0' }, /rank 2 got a malformed message from rank 1: buffer\.byteLength/],
  ];
  for (const [what, fault, message] of faults) {
    test(what, async ({ sharedPage: page }) => {
      await openApp(page);
      const r = await page.evaluate(async (fault) => {
        const cfg = { ...window.pipelab.defaultConfig(), hidden: 8, batchSize: 16, microbatches: 4, steps: 2, evalEvery: 0 };
        const t0 = performance.now();
        let error = '';
        try {
          await window.pipelab.run({ ...cfg, fault: fault as never }, { recvTimeoutMs: 4000, stepTimeoutMs: 30000 });
        } catch (e) {
          error = (e as Error).message;
        }
        const ms = performance.now() - t0;
        const liveAfterFault = window.pipelab.liveWorkers();
        const next = await window.pipelab.run(cfg);
        return { error, ms, liveAfterFault, nextLosses: next.losses, liveAfterNext: window.pipelab.liveWorkers() };
      }, fault);
      expect(r.error).toMatch(message);
      expect(r.ms).toBeLessThan(30_000);
      expect(r.liveAfterFault).toBe(0);
      expect(r.nextLosses.every(Number.isFinite)).toBe(true);
      expect(r.liveAfterNext).toBe(0);
    });
  }

  test('a non-finite loss in step 1 is named, and the run recovers from step 0 (the start is a checkpoint for free)', async ({ sharedPage: page }) => {
    await openApp(page);
    const r = await page.evaluate(async () => {
      const cfg = { ...window.pipelab.defaultConfig(), hidden: 8, batchSize: 16, microbatches: 4, steps: 2, evalEvery: 0 };
      const report = await window.pipelab.run({ ...cfg, fault: { kind: 'nan-loss', action: '3F0', step: 1 } }, { recvTimeoutMs: 4000, stepTimeoutMs: 30000 });
      return { failure: report.recovery?.failure ?? 'no failure', fromStep: report.recovery?.fromStep, losses: report.losses, live: window.pipelab.liveWorkers() };
    });
    expect(r.failure).toMatch(/step 1: the loss is NaN/);
    expect(r.fromStep).toBe(0);
    expect(r.losses).toHaveLength(2);
    expect(r.losses.every(Number.isFinite)).toBe(true);
    expect(r.live).toBe(0);
  });
});

test('a PipeDream-2BW stream on 2 replicas paused through automation for 2.5 s, 10× a worker\'s wait for a message: the same losses and weights as without the pause', async ({ sharedPage: page }) => {
  await openApp(page);
  const r = await page.evaluate(async () => {
    const cfg = { ...window.pipelab.defaultConfig(), schedule: 'pipedream-2bw' as const, dp: 2, ranks: 2, microbatches: 4, hidden: 16, steps: 40, evalEvery: 0 };
    const plain = await window.pipelab.run(cfg, { readWeights: true });
    const sw = window.pipelab.pauseSwitch();
    let pausedAt = 0;
    let doneWhilePaused = 0;
    const t0 = performance.now();
    const paused = await window.pipelab.run(cfg, {
      readWeights: true,
      recvTimeoutMs: 250,
      pause: sw,
      onStreamProgress: ({ stepsDone }) => {
        if (!pausedAt && stepsDone >= 3) {
          pausedAt = performance.now();
          sw.set(true);
          setTimeout(() => sw.set(false), 2500);
        } else if (sw.isPaused && performance.now() - pausedAt > 300) doneWhilePaused++;
      },
    });
    const wall = performance.now() - t0;
    const same = (a: Record<string, ArrayLike<number>>, b: Record<string, ArrayLike<number>>) => Object.keys(a).every((k) => Array.from(a[k]).every((v, i) => v === b[k][i]));
    return { pausedAt, doneWhilePaused, lossesEqual: plain.losses.every((l, i) => l === paused.losses[i]), weightsEqual: same(plain.weights!, paused.weights!), wall, streamMs: paused.makespanMs.measured, plainMs: plain.makespanMs.measured };
  });
  console.log(`2BW dp 2 × p 2 paused 2.5 s: the stream took ${r.streamMs.toFixed(0)} ms (${r.wall.toFixed(0)} ms wall), unpaused ${r.plainMs.toFixed(0)} ms`);
  expect(r.pausedAt).toBeGreaterThan(0);
  expect(r.doneWhilePaused).toBe(0);
  expect(r.lossesEqual).toBe(true);
  expect(r.weightsEqual).toBe(true);
  // The pause is cut out of the stream's makespan: about the unpaused stream's, not 2.5 s more.
  expect(r.streamMs).toBeLessThan(r.plainMs + 1250);
});

test('bad configurations are rejected before any worker starts', async ({ sharedPage: page }) => {
  await openApp(page);
  const r = await page.evaluate(async () => {
    const base = window.pipelab.defaultConfig();
    // Counted from here: the shared page may hold workers started by the tests before.
    const started0 = window.pipelab.startedWorkers();
    const bad = [
      { ...base, ranks: 8 },
      { ...base, microbatches: 7 },
      { ...base, schedule: 'zigzag' as never },
      { ...base, schedule: 'zb-v' as const, virtual: 3, layers: 15 },
    ];
    const errors = [];
    for (const cfg of bad) {
      try {
        await window.pipelab.run(cfg);
        errors.push('accepted');
      } catch (e) {
        errors.push((e as Error).message);
      }
    }
    return { errors, started: window.pipelab.startedWorkers() - started0 };
  });
  expect(r.errors[0]).toMatch(/^ranks = 8: ranks × virtual = 8 stages, but the model has only 4 blocks/);
  expect(r.errors[1]).toMatch(/^microbatches = 7: must divide batchSize = 64 evenly/);
  expect(r.errors[2]).toMatch(/^schedule = "zigzag": must be one of/);
  expect(r.errors[3]).toMatch(/^virtual = 3: zb-v holds exactly 2 stages per rank/);
  expect(r.started).toBe(0);
});

test('no leaks: 50 runs in a row leave no GPU buffers alive and no workers beyond the warm pair', async ({ page }) => {
  test.setTimeout(400_000);
  await openApp(page);
  const r = await page.evaluate(async () => {
    const cfg = { ...window.pipelab.defaultConfig(), ranks: 2, layers: 1, hidden: 8, batchSize: 8, microbatches: 2, steps: 1, evalEvery: 0 };
    let leaked = 0, maxLive = 0, maxWarm = 0;
    for (let i = 0; i < 50; i++) {
      const rep = await window.pipelab.run({ ...cfg, seed: i });
      leaked += rep.leakedBuffers;
      maxLive = Math.max(maxLive, window.pipelab.liveWorkers());
      maxWarm = Math.max(maxWarm, window.pipelab.warmWorkers());
    }
    return { leaked, maxLive, maxWarm, started: window.pipelab.startedWorkers(), live: window.pipelab.liveWorkers(), warm: window.pipelab.warmWorkers() };
  });
  // The first run starts two workers; every later run finds them warm (a run that leaked a buffer, failed or lost its
  // device would not hand them on, and the next run would start new ones).
  expect(r.started).toBe(2);
  expect(r.warm).toBe(2);
  expect(r.maxWarm).toBe(2);
  expect(r.live).toBe(0);
  expect(r.maxLive).toBe(0);
  expect(r.leaked).toBe(0);
});

test('the measured timeline: one clock for all ranks, communication as intervals, GPU time from timestamp queries; no wait per action', async ({ sharedPage: page }) => {
  await openApp(page);
  const r = await page.evaluate(async () => {
    const adapter = await navigator.gpu.requestAdapter();
    const timestamps = !!adapter?.features.has('timestamp-query');
    const rep = await window.pipelab.run({ ...window.pipelab.defaultConfig(), hidden: 16, batchSize: 32, microbatches: 4, steps: 2, evalEvery: 0 });
    return { timestamps, intervals: rep.timeline.intervals, meanGpuOpMs: rep.meanGpuOpMs ?? null, ranks: rep.schedule.ranks, stageToRank: rep.schedule.stageToRank, counts: rep.steps.map((s) => s.counts) };
  });
  const compute = r.intervals.filter((iv) => iv.op !== 'comm');
  // Per rank, actions run one at a time and in the schedule's causal order across ranks:
  // a stage's forward of a micro-batch starts after the previous stage's forward ended.
  for (let rank = 0; rank < r.ranks; rank++) {
    const mine = compute.filter((iv) => iv.rank === rank).sort((a, b) => a.start - b.start);
    for (let i = 1; i < mine.length; i++) expect(mine[i].start).toBeGreaterThanOrEqual(mine[i - 1].end - 1e-6);
  }
  for (const iv of compute.filter((c) => c.op === 'F' && c.stage > 0)) {
    const prev = compute.find((c) => c.op === 'F' && c.stage === iv.stage - 1 && c.mb === iv.mb)!;
    expect(iv.start, `${iv.stage}F${iv.mb} after ${prev.stage}F${prev.mb}`).toBeGreaterThanOrEqual(prev.end);
  }
  // Each stage worker counts its waits on its GPU: one per send, plus one for the last rank's losses (the action spans
  // are read a step late, not waited for; runtime/executor/waits-gpu.test.ts checks the same rule exactly on Dawn) —
  // never one per action.
  expect(r.counts.length).toBe(2);
  for (const step of r.counts) {
    expect(step).toHaveLength(r.ranks);
    for (const c of step) {
      const sends = c.rank === r.ranks - 1 ? 4 : c.rank === 0 ? 4 : 8;
      expect(c.waits, `rank ${c.rank}`).toBe(sends + (c.rank === r.ranks - 1 ? 1 : 0));
      expect(c.actions).toBe(8);
      expect(c.crossings).toBe(c.rank === 0 || c.rank === r.ranks - 1 ? 4 : 8);
    }
  }
  const kinds = new Set(r.intervals.filter((iv) => iv.op === 'comm').map((iv) => iv.comm));
  for (const k of ['readback', 'transfer', 'upload', 'send']) expect(kinds.has(k as never), k).toBe(true);
  test.info().annotations.push({ type: 'gpu time', description: r.timestamps ? 'timestamp queries' : 'no timestamp queries: wall time only (fallback)' });
  if (r.timestamps) {
    for (const iv of compute) {
      expect(iv.gpuMs, `${iv.stage}${iv.op}${iv.mb}`).toBeGreaterThan(0);
      // The GPU's own time fits inside the wall interval (timestamps may be rounded to ~0.1 ms).
      expect(iv.gpuMs!).toBeLessThanOrEqual(iv.end - iv.start + 0.2);
    }
    expect(Object.keys(r.meanGpuOpMs ?? {})).toHaveLength(4);
  } else {
    // The fallback: actions are timed by the wall clock only, and the report claims no GPU times.
    for (const iv of compute) expect(iv.gpuMs, `${iv.stage}${iv.op}${iv.mb}`).toBeUndefined();
    expect(r.meanGpuOpMs).toBeNull();
  }
});

test('the page shows PipeDream-2BW\'s two weight versions per stage after a run', async ({ page }) => {
  await page.goto('./?schedule=pipedream-2bw&ranks=2&microbatches=2&steps=4&evalEvery=2&hidden=16');
  await page.waitForFunction(() => !!window.pipelab);
  await expect(page.getByText('steps; a stream evaluates at its start and end only')).toBeVisible();
  await page.getByRole('button', { name: '▶ Run' }).click();
  const rows = page.getByTestId('weight-versions');
  await expect(rows).toHaveCount(2, { timeout: 120_000 });
  // Its validation: the initial weights and the last step's only (evalEvery = 2 asks for more; the note says why not).
  await expect(page.getByTestId('validation-note')).toHaveText(
    'Validation: mean loss on the held-out split, with the initial weights and after the last step (inside a stream its stages never hold one step’s weights at the same moment).',
  );
  await expect.poll(async () => JSON.parse((await page.getByTestId('loss-panel').getAttribute('data-validation')) ?? '[]').length).toBe(2);
  for (let s = 0; s < 2; s++) await expect(rows.nth(s).locator('td').first()).toHaveText(/^2 · /);
  // Its numbers are the stream's, one window of all 4 steps: its makespan carries 4 batches.
  const numbers = page.getByTestId('run-numbers');
  const makespan = numbers.getByRole('row', { name: /^Makespan of the stream \(4 steps\), ms/ });
  const shown = await makespan.locator('td').first().innerText();
  const ms = Number(shown.replace(/[^\d.]/g, '')) * (shown.endsWith(' s') ? 1000 : 1);
  const sps = Number((await numbers.getByRole('row', { name: /^Samples per second \(steps × batch ÷ makespan\)/ }).locator('td').first().innerText()).replace(/[^\d.]/g, ''));
  const batch = await page.evaluate(() => window.pipelab.defaultConfig().batchSize);
  expect(Math.abs(sps - (4 * batch * 1000) / ms)).toBeLessThanOrEqual(1 + 0.01 * sps);
});

test('a PipeDream-2BW stream shows its progress while it runs, pauses (every worker held between its actions) and resumes, and ■ Stop ends it at a step boundary, keeping its steps', async ({ page }) => {
  await page.goto('./?schedule=pipedream-2bw&ranks=4&microbatches=8&steps=1000&evalEvery=0');
  await page.waitForFunction(() => !!window.pipelab);
  await page.getByRole('button', { name: '▶ Run' }).click();
  const bar = page.getByRole('progressbar', { name: 'Training progress' });
  const done = async () => Number(await bar.getAttribute('aria-valuenow'));
  // The steps move while the one window runs (before, they all landed at its end).
  await expect.poll(done, { timeout: 120_000 }).toBeGreaterThanOrEqual(20);
  // Said beside the buttons while it runs, not only in a tooltip.
  await expect(page.getByTestId('run-hint')).toHaveText('One stream: ❚❚ Pause holds every worker between actions; ■ Stop ends it at the next step boundary');
  // Its losses are drawn as they land (before, the loss read "—" until the stream's end).
  const lossFigure = page.locator('.progress-stats div').filter({ has: page.locator('dt', { hasText: /^loss$/ }) }).locator('dd');
  await expect(lossFigure).toHaveText(/^\d+\.\d{4}$/);
  expect(await page.evaluate(() => window.pipelab.liveWorkers())).toBeGreaterThan(0);

  // Pause: the workers hold (the steps stop moving) for as long as it lasts, far past a worker's wait for a message.
  const status = page.getByTestId('status-line').getByRole('status');
  await page.getByRole('button', { name: '❚❚ Pause' }).click();
  await expect(status).toHaveAttribute('data-status', 'paused');
  await expect(status).toHaveText(/^Paused at step \d+ of 1000: every worker holds before its next action\.$/);
  await page.waitForTimeout(500);
  const held = await done();
  await page.waitForTimeout(3000);
  expect(await done()).toBe(held);
  await page.getByRole('button', { name: '▶ Resume' }).click();
  await expect(status).toHaveAttribute('data-status', 'running');
  await expect.poll(done, { timeout: 60_000 }).toBeGreaterThan(held + 2);

  const t0 = Date.now();
  await page.getByRole('button', { name: /Stop/ }).click();
  await expect(status).toHaveAttribute('data-status', 'stopped', { timeout: 60_000 });
  const stoppedInMs = Date.now() - t0;
  const text = await status.innerText();
  const kept = Number(/^Stopped after (\d+) of 1000 steps\.$/.exec(text)?.[1]);
  console.log(`2BW stream stopped ${stoppedInMs} ms after ■ Stop, keeping ${kept} of 1000 steps`);
  expect(kept).toBeGreaterThanOrEqual(20);
  expect(kept).toBeLessThan(1000);
  await expect(page.getByTestId('run-numbers').getByRole('row', { name: new RegExp(`^Makespan of the stream \\(${kept} steps\\), ms`) })).toBeVisible();
  await expect(page.getByTestId('run-timeline')).toContainText('bubble, stream drawn');
  await expect(page.getByTestId('run-timeline')).toContainText(`Opened on its first 4 steps; Fit draws all ${kept}.`);
  // The prediction beside it is of the kept steps too: 1F1B's closed form over kept × m micro-batches, 3(kept·m + p − 1) u.
  const unitRow = page.getByTestId('run-numbers').getByRole('row', { name: /^Makespan, unit time/ });
  expect(Number((await unitRow.locator('td').nth(2).innerText()).replace(/[^\d.]/g, ''))).toBe(3 * (kept * 8 + 3));
  expect(await page.evaluate(() => window.pipelab.liveWorkers())).toBe(0);
  await expect(page.getByTestId('run-hint')).toContainText('R runs, pauses, resumes');
});

test('the untrained model\'s held-out loss is the validation curve\'s first point from the first steps on, not only at the end', async ({ page }) => {
  await page.goto('./?steps=40&ranks=2&evalEvery=0');
  await page.waitForFunction(() => !!window.pipelab);
  await page.getByRole('button', { name: '▶ Run' }).click();
  const points = async () => JSON.parse((await page.getByTestId('loss-panel').getAttribute('data-validation')) ?? '[]') as { step: number; loss: number }[];
  await expect.poll(async () => (await points()).map((p) => p.step), { timeout: 120_000 }).toContain(0);
  // Seen while the run goes on: the last step's point (added when the run ends) is not there yet.
  const first = await points();
  expect(first.map((p) => p.step)).toEqual([0]);
  expect(first[0].loss).toBeGreaterThan(0);
  // The end adds the last step's, and keeps the one point for step 0.
  await expect.poll(async () => (await points()).map((p) => p.step), { timeout: 180_000 }).toEqual([0, 39]);
  expect((await points())[0].loss).toBe(first[0].loss);
});

test('the held-out loss is computed in a worker of its own, off the page\'s thread that starts every step', async ({ page }) => {
  await page.goto('./?dataset=names&model=gpt&layers=2&heads=2&width=8&steps=4&ranks=2&microbatches=2&evalEvery=2');
  await page.waitForFunction(() => !!window.pipelab);
  await page.getByRole('button', { name: '▶ Run' }).click();
  const points = async () => JSON.parse((await page.getByTestId('loss-panel').getAttribute('data-validation')) ?? '[]') as { step: number; loss: number }[];
  // The untrained model's (step 0), every evalEvery steps' (step 1), the last step's (3).
  await expect.poll(async () => (await points()).map((p) => p.step), { timeout: 180_000 }).toEqual([0, 1, 3]);
  // An untrained GPT predicts about uniformly over the 27 characters: ln 27 = 3.30 nats, give or take its random logits.
  const first = (await points())[0].loss;
  expect(Math.abs(first - Math.log(27))).toBeLessThan(0.15);
  expect(page.workers().some((w) => w.url().includes('eval-worker'))).toBe(true);
});
