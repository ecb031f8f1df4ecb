/**
 * The GPT through the pipeline runtime on the float64 CPU reference: every
 * synchronous schedule at p ∈ {2, 4} computes what one device computes (losses
 * and weights to 1e-12), with the residual stream [mb·T, C] crossing the stage
 * boundaries; PipeDream's asynchronous 1F1B runs it too.
 */
import { describe, expect, it } from 'vitest';
import { CpuBackend } from '../../nn/cpu-backend.ts';
import { relErrByName } from '../../util/rel-err.ts';
import { trainSingleDevice } from '../../nn/train.ts';
import { oneDeviceRun } from '../../nn/testing/one-device.ts';
import { SCHEDULE_NAMES, SCHEDULES, type ScheduleName } from '../../schedule/registry.ts';
import { runPipeline } from '../coordinator.ts';
import { InProcessRankHost } from '../executor/in-process-host.ts';
import { configFromQuery, configToQuery, defaultRunConfig, toTrainConfig, type RunConfig } from '../../config/run-config.ts';

const hosts = (r: number) => new InProcessRankHost(r, new CpuBackend());


function gptConfig(over: Partial<RunConfig>): RunConfig {
  return {
    ...defaultRunConfig(),
    dataset: 'names',
    model: 'gpt',
    layers: 3,
    heads: 2,
    width: 6,
    blockSize: 16,
    batchSize: 8,
    microbatches: 4,
    steps: 2,
    optimizer: 'adamw',
    lr: 0.01,
    evalEvery: 0,
    ...over,
  };
}


// The synchronous ('flush') schedules: those that compute what one device would.
const SYNCHRONOUS: ScheduleName[] = SCHEDULE_NAMES.filter((n) => SCHEDULES[n].update === 'flush');
const cases: [ScheduleName, number, number, number][] = [];
for (const name of SYNCHRONOUS) {
  const kind = SCHEDULES[name];
  const v = kind.virtualFor(2);
  for (const p of [2, 4]) {
    // DualPipe takes m ≥ 2p.
    const m = kind.copies > 1 ? Math.max(4, 2 * p) : 4;
    try {
      kind.validateParams(p, m, v);
      cases.push([name, p, v, m]);
    } catch {
      // not a pair this schedule takes
    }
  }
}

describe('the GPT through the pipeline equals single-device training (CPU reference)', () => {
  it('covers every synchronous schedule at p = 2 and p = 4', () => {
    expect(new Set(cases.map((c) => c[0]))).toEqual(new Set(SYNCHRONOUS));
    expect(SYNCHRONOUS).toEqual([...SCHEDULE_NAMES]);
    for (const name of SYNCHRONOUS) expect(cases.filter((c) => c[0] === name).map((c) => c[1])).toEqual([2, 4]);
  });

  it.each(cases)('%s p=%i v=%i m=%i', async (schedule, p, v, m) => {
    const cfg = gptConfig({ schedule, ranks: p, virtual: v, microbatches: m, layers: Math.max(3, p * v - 1) });
    const report = await runPipeline(cfg, { hostFactory: hosts, readWeights: true, recvTimeoutMs: 10000 });
    const ref = await oneDeviceRun(toTrainConfig(cfg));
    expect(report.losses).toHaveLength(cfg.steps);
    for (let i = 0; i < cfg.steps; i++) expect(Math.abs(report.losses[i] - ref.losses[i])).toBeLessThan(1e-12 * Math.abs(ref.losses[i]));
    expect(Object.keys(ref.params)).toContain('transformer.h.0.attn.c_attn.weight');
    for (const [n, e] of Object.entries(relErrByName(report.weights, ref.params))) expect(e, n).toBeLessThan(1e-12);
  });

  it.each([['1f1b', 1], ['zb-h1', 1], ['1f1b', 2]] as const)('selective recomputation (%s, tp %i): the losses and weights of one device without it, each stage holding less', async (schedule, tp) => {
    const cfg = gptConfig({ schedule, ranks: 2, tp, layers: 3 });
    const plain = await runPipeline(cfg, { hostFactory: hosts, recvTimeoutMs: 10000 });
    const selective = await runPipeline({ ...cfg, recomputeAttention: true }, { hostFactory: hosts, readWeights: true, recvTimeoutMs: 10000 });
    const ref = await oneDeviceRun(toTrainConfig(cfg));
    expect(ref.losses.length).toBe(cfg.steps);
    for (let i = 0; i < cfg.steps; i++) expect(Math.abs(selective.losses[i] - ref.losses[i])).toBeLessThan(1e-12 * Math.abs(ref.losses[i]));
    for (const [n, e] of Object.entries(relErrByName(selective.weights, ref.params))) expect(e, n).toBeLessThan(1e-12);
    // Both stages hold transformer blocks: each keeps less.
    for (const stage of [0, 1]) expect(selective.peakStashBytes[stage], `stage ${stage}`).toBeLessThan(plain.peakStashBytes[stage]);
  });

  it('PipeDream on one rank is per-micro-batch training (each micro-batch normalised by its own targets)', async () => {
    const cfg = gptConfig({ schedule: 'pipedream', ranks: 1, layers: 2, batchSize: 16, microbatches: 4, steps: 2, lrSchedule: 'constant' });
    const report = await runPipeline(cfg, { hostFactory: hosts, readWeights: true });
    const ref = await trainSingleDevice(new CpuBackend(), { ...toTrainConfig(cfg), batchSize: 4, microbatches: 1, steps: 8 });
    for (const [n, e] of Object.entries(relErrByName(report.weights, ref.params))) expect(e, n).toBeLessThan(1e-12);
  });

  it('PipeDream at p = 4 trains the GPT, each backward on the weights its forward used', async () => {
    const cfg = gptConfig({ schedule: 'pipedream', ranks: 4, layers: 3, batchSize: 32, microbatches: 4, steps: 12, lr: 0.01, lrSchedule: 'constant' });
    const report = await runPipeline(cfg, { hostFactory: hosts });
    expect(report.losses).toHaveLength(cfg.steps);
    const head = report.losses.slice(0, 3).reduce((a, b) => a + b) / 3;
    const tail = report.losses.slice(-3).reduce((a, b) => a + b) / 3;
    expect(tail).toBeLessThan(head * 0.95);
    expect(report.weightStash?.[0].versions).toBe(4);
  });
});

describe('bad GPT configurations are refused before any rank starts (runtime, automation and URL alike)', () => {
  const bad: [string, Partial<RunConfig>, RegExp][] = [
    ['heads that do not divide the width', { heads: 4, width: 6 }, /^heads = 4: must divide width = 6/],
    ['a block size shorter than the longest name + 1', { blockSize: 15 }, /^blockSize = 15: must be at least the longest name \+ 1 = 16/],
    ['more stages than blocks', { ranks: 4, layers: 2 }, /^ranks = 4: ranks × virtual = 4 stages, but the model has only 3 blocks/],
    ['the GPT on a 2-D set', { dataset: 'spiral' }, /^dataset = "spiral": must be "names" or "text" for model "gpt"/],
    // The memory estimate counts what a block keeps per name: T rows of the residual stream, qkv, the MLP's 4C, H·T² attention.
    ['a batch whose attention and activations pass the memory limit', { layers: 3, width: 256, heads: 16, blockSize: 64, batchSize: 8192, microbatches: 1 }, /^batchSize = 8192: .*activations/],
  ];
  it.each(bad)('%s', async (_what, over, message) => {
    const started: number[] = [];
    const factory = (r: number) => {
      started.push(r);
      return hosts(r);
    };
    await expect(runPipeline(gptConfig(over), { hostFactory: factory })).rejects.toThrow(message);
    expect(started).toEqual([]);
  });

  it('a link carries heads, width and block size; a bad one is reported by field, value and rule', () => {
    const cfg = gptConfig({ heads: 3, width: 12, blockSize: 20 });
    const back = configFromQuery(configToQuery(cfg));
    expect(back.errors).toEqual([]);
    expect([back.config.model, back.config.heads, back.config.width, back.config.blockSize]).toEqual(['gpt', 3, 12, 20]);
    const { config, errors } = configFromQuery('dataset=names&model=gpt&width=10&heads=4');
    // heads goes back to its default (4), which still clashes with the given width, so width goes back too.
    expect(errors[0].message).toBe('heads = 4: must divide width = 10 (each head takes width / heads columns)');
    expect(errors.map((e) => e.field)).toEqual(['heads', 'width']);
    expect(config.model).toBe('gpt');
    expect(config.width! % config.heads!).toBe(0);
  });
});
