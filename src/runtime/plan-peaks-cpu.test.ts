/**
 * The planner's per-worker peak beside the page's own count (issue 54, part 4), on the float64 CPU host (4 bytes a
 * value, as the page's float32): a small run is profiled (measure-profile.ts: one block a rank, its stash and the
 * allocator's count of each block's worker), planned from that profile (plan.ts makePlan, rankPeakBytes), then run on
 * the plan's cut under the planned schedule; each worker's steady-state high-water mark (nn/memory-ledger.ts) is
 * within 10% of the planner's figure for its rank.
 */
import { describe, expect, it } from 'vitest';
import { CpuBackend } from '../nn/cpu-backend.ts';
import { runPipeline } from './coordinator.ts';
import { InProcessRankHost } from './executor/in-process-host.ts';
import { defaultRunConfig, withDataset, type RunConfig } from '../config/run-config.ts';
import { measureProfile } from './measure-profile.ts';
import { makePlan, rankPeakBytes } from '../plan/plan.ts';
import { generateSchedule } from '../schedule/index.ts';

const runCpu = (c: RunConfig) => runPipeline(c, { hostFactory: (r) => new InProcessRankHost(r, new CpuBackend()), recvTimeoutMs: 20000 });
const gpt: RunConfig = { ...withDataset(defaultRunConfig(), 'names'), model: 'gpt', layers: 3, heads: 2, width: 16, blockSize: 16, batchSize: 16, microbatches: 4, ranks: 2, optimizer: 'adamw', steps: 3, evalEvery: 0 };
const mlp: RunConfig = { ...defaultRunConfig(), layers: 5, batchSize: 32, microbatches: 4, ranks: 3, optimizer: 'adamw', steps: 3, evalEvery: 0 };

describe("the planner's per-worker peak beside the count", () => {
  const cases: [string, RunConfig, 'gpipe' | '1f1b' | 'zb-h1'][] = [
    ['the GPT, 1F1B on 2 ranks', gpt, '1f1b'],
    ['the GPT, GPipe on 2 ranks', gpt, 'gpipe'],
    ['the MLP, ZB-H1 on 3 ranks', mlp, 'zb-h1'],
  ];
  for (const [title, cfg, schedule] of cases) {
    it(`${title}: every worker within 10% of its rank's planned peak`, async () => {
      const measured = await measureProfile(cfg, runCpu);
      // The bytes are what is checked: one time a block and no crossing cost, so that the cut (balanced by time) is
      // the same every run.
      const profile = { ...measured, blocks: measured.blocks.map((b) => ({ ...b, F: 1, I: 1, W: 1, B: 2 })), comm: measured.comm.map(() => 0) };
      const plan = makePlan({ profile, ranks: cfg.ranks, microbatches: cfg.microbatches, cap: { microbatches: cfg.microbatches } });
      const planned = rankPeakBytes(profile, plan, generateSchedule(schedule, cfg.ranks, cfg.microbatches));
      expect(planned).not.toBeNull();
      const cut = plan.partition.ranges.map(([a, b]) => b - a);
      const report = await runCpu({ ...cfg, schedule, partition: 'cut', cut });
      expect(report.stageBlocks).toEqual(plan.partition.ranges);
      report.heldBytesPerWorker.forEach((h, w) => {
        const measured = h.measured?.peak ?? NaN;
        expect(Math.abs(measured / planned![w] - 1)).toBeLessThan(0.1);
      });
    });
  }
});
