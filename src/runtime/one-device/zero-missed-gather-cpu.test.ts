/**
 * A missed ZeRO-3 gather breaks the equality with one device (issue 52): the run-level fault 'skip-gather'
 * (config/fault-spec.ts) leaves one action's gathered weights unwritten while its stage's buffers get storage back from
 * the pool (the all-gather still runs, so the ring stays in step). The run completes; the comparison the equality
 * tests make (zero-sharding-cpu.test.ts: losses and the joined weights against one float64 device, ≤ 1e-12) must
 * fail, and the same comparison on the same run without the fault must pass.
 */
import { describe, expect, it } from 'vitest';
import { CpuBackend } from '../../nn/cpu-backend.ts';
import { trainSingleDevice } from '../../nn/train.ts';
import { runPipeline } from '../coordinator.ts';
import { InProcessRankHost } from '../executor/in-process-host.ts';
import { defaultRunConfig, toTrainConfig, validateRunConfig, type RunConfig } from '../../config/run-config.ts';
import { ConfigError } from '../../util/errors.ts';
import { maxRelErr } from '../../util/rel-err.ts';

const cfgOf = (over: Partial<RunConfig>): RunConfig => ({ ...defaultRunConfig(), layers: 3, hidden: 6, batchSize: 16, microbatches: 2, steps: 2, optimizer: 'adamw', lr: 0.01, evalEvery: 0, schedule: '1f1b', ranks: 2, dp: 2, zero: 3, ...over });

/** The equality tests' measure: the worst relative difference of the losses and the joined weights from one device. */
async function worstAgainstOneDevice(cfg: RunConfig): Promise<number> {
  const report = await runPipeline(cfg, { hostFactory: (w) => new InProcessRankHost(w, new CpuBackend()), readWeights: true, recvTimeoutMs: 5000 });
  const ref = await trainSingleDevice(new CpuBackend(), toTrainConfig(cfg));
  expect(report.losses).toHaveLength(cfg.steps);
  let worst = 0;
  for (let i = 0; i < cfg.steps; i++) worst = Math.max(worst, Math.abs(report.losses[i] - ref.losses[i]) / Math.abs(ref.losses[i]));
  return Math.max(worst, maxRelErr(report.weights, ref.params));
}

describe('a missed ZeRO-3 gather breaks the equality with one device', () => {
  // A worker's weights are whole until the end of step 0, its first free: with reshard = step, stage 1 first gathers at step 1's 1F0.
  for (const [reshard, action, step] of [['microbatch', '0F1', 0], ['step', '1F0', 1]] as const) {
    it(`reshard = ${reshard}: skipping ${action}'s gather in step ${step} on replica 0 takes the run off one device's numbers; without it they agree`, async () => {
      const cfg = cfgOf({ reshard });
      expect(await worstAgainstOneDevice(cfg)).toBeLessThan(1e-12);
      const faulty = { ...cfg, fault: { kind: 'skip-gather' as const, action, step, replica: 0 } };
      validateRunConfig(faulty);
      expect(await worstAgainstOneDevice(faulty)).toBeGreaterThan(1e-6);
    });
  }

  it('is refused where nothing gathers: without ZeRO-3, or at an action that reads no weights', () => {
    expect(() => validateRunConfig(cfgOf({ zero: 2, fault: { kind: 'skip-gather', action: '0F0' } }))).toThrow(ConfigError);
    expect(() => validateRunConfig(cfgOf({ schedule: 'zb-h1', fault: { kind: 'skip-gather', action: '0W0' } }))).toThrow(/skip-gather needs zero = 3 and an action that reads the weights/);
  });
});
