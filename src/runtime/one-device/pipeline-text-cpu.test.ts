/**
 * "Your text" through the pipeline runtime on the float64 CPU reference: the
 * GPT and the char-MLP on a text, on 4 pipelined ranks, compute what one device
 * computes (losses and weights to 1e-12); the ranks build their data from the
 * corpus the coordinator hands them with their init.
 */
import { describe, expect, it } from 'vitest';
import { buildCorpus } from '../../data/text-corpus.ts';
import { registerCorpus } from '../../data/text-registry.ts';
import { CpuBackend } from '../../nn/cpu-backend.ts';
import { trainSingleDevice } from '../../nn/train.ts';
import { runPipeline } from '../coordinator.ts';
import { InProcessRankHost } from '../executor/in-process-host.ts';
import { defaultRunConfig, toTrainConfig, withDataset, type RunConfig } from '../../config/run-config.ts';
import type { RankInit, RankPorts } from '../executor/rank-host.ts';
import { relErrByName } from '../../util/rel-err.ts';

const TEXT = 'It is a way I have of driving off the spleen, and regulating the circulation. '.repeat(12) + 'Ünïcode: 🐋 ahoy!\n';
const corpus = buildCorpus('spleen.txt', TEXT, '5eed5eed5eed5eed');
registerCorpus(corpus);

/** In-process ranks that record the init each one was given. */
const inits: RankInit[] = [];
class RecordingHost extends InProcessRankHost {
  override init(init: RankInit, ports: RankPorts) {
    inits.push(init);
    return super.init(init, ports);
  }
}
const hosts = (w: number) => new RecordingHost(w, new CpuBackend());

function textConfig(over: Partial<RunConfig>): RunConfig {
  return {
    ...withDataset(defaultRunConfig(), 'text', corpus.hash),
    layers: 3, heads: 2, width: 8, blockSize: 12, batchSize: 8, microbatches: 4, steps: 3, lr: 0.01, evalEvery: 0, ranks: 4,
    ...over,
  };
}

describe('a text through the pipeline equals single-device training (CPU reference)', () => {
  it.each([
    ['gpt', '1f1b'],
    ['gpt', 'zb-h1'],
    ['char-mlp', 'gpipe'],
  ] as const)('%s, %s, 4 ranks', async (model, schedule) => {
    await expectEqualsOneDevice(textConfig({ model, schedule, ...(model === 'char-mlp' ? { context: 4, hidden: 16, embedDim: 6 } : {}) }));
  });

  it('gpt, 1f1b, dp=2 × 2 ranks (4 workers; each replica on its half of the batch, gradients all-reduced), with and without ZeRO-1', async () => {
    for (const zero of [0, 1] as const) {
      const report = await expectEqualsOneDevice(textConfig({ model: 'gpt', schedule: '1f1b', dp: 2, ranks: 2, zero }));
      expect(report.replicaMismatch).toBe(0);
    }
  });
});

/** Runs `cfg` on 4 in-process workers and on one device: same losses and weights (≤ 1e-12), every worker handed the text. */
async function expectEqualsOneDevice(cfg: RunConfig) {
  const model = cfg.model;
  inits.length = 0;
  const report = await runPipeline(cfg, { hostFactory: hosts, readWeights: true, recvTimeoutMs: 10000 });
  // Every rank was handed the text itself: the configuration names it by hash only.
  expect(inits.map((i) => i.corpus?.hash)).toEqual(Array(cfg.dp * cfg.ranks).fill(corpus.hash));
  expect(inits).toHaveLength(4);
  const ref = await trainSingleDevice(new CpuBackend(), toTrainConfig(cfg));
  expect(report.losses).toHaveLength(cfg.steps);
  // The GPT's first loss is near ln(V): its head starts near uniform over the text's symbols (N(0, 0.02) weights).
  if (model === 'gpt') expect(Math.abs(ref.losses[0] - Math.log(corpus.symbols.length))).toBeLessThan(0.05);
  for (let i = 0; i < cfg.steps; i++) expect(Math.abs(report.losses[i] - ref.losses[i])).toBeLessThan(1e-12 * Math.abs(ref.losses[i]));
  for (const [n, e] of Object.entries(relErrByName(report.weights, ref.params))) expect(e, n).toBeLessThan(1e-12);
  return report;
}
