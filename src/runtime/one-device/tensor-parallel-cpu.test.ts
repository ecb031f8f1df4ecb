/**
 * dp × tp × pp on the float64 CPU reference, in-process over real MessageChannels:
 * each stage's GPT blocks (heads, MLP columns) or hidden linears split over its
 * tp workers (Megatron's column / row pairs, nn/tp-shard.ts), their activations
 * summed or gathered between layers (tp-collective.ts), must compute exactly
 * what one device computes (≤ 1e-12 relative), losses and whole weights; and
 * beside the streams without a flush, what the same stream computes with whole
 * layers (PipeDream-2BW's one-device stale rule; PipeDream's tp = 1 run).
 */
import { describe, expect, it } from 'vitest';
import { CpuBackend } from '../../nn/cpu-backend.ts';
import { oneDeviceRun } from '../../nn/testing/one-device.ts';
import { trainDoubleBuffered } from '../../nn/train-double-buffered.ts';
import { tpParams } from '../../nn/tp-params.ts';
import { buildModelSpec } from '../../nn/model-config.ts';
import { laneOf } from '../../schedule/timeline.ts';
import { runPipeline } from '../coordinator.ts';
import { InProcessRankHost } from '../executor/in-process-host.ts';
import { defaultRunConfig, toTrainConfig, validateRunConfig, type RunConfig } from '../../config/run-config.ts';
import { relErrByName } from '../../util/rel-err.ts';

const cpuHosts = () => (w: number) => new InProcessRankHost(w, new CpuBackend());

function gpt(over: Partial<RunConfig>): RunConfig {
  const base = defaultRunConfig();
  const cfg: RunConfig = {
    ...base, dataset: 'names', model: 'gpt', layers: 3, heads: 4, width: 16, blockSize: 16,
    schedule: '1f1b', ranks: 2, batchSize: 8, microbatches: 2, steps: 2, optimizer: 'adamw', lr: 0.01, evalEvery: 0, ...over,
  };
  validateRunConfig(cfg);
  return cfg;
}

function mlp(over: Partial<RunConfig>): RunConfig {
  const base = defaultRunConfig();
  const cfg: RunConfig = { ...base, layers: 3, hidden: 8, batchSize: 16, microbatches: 2, steps: 2, optimizer: 'adamw', lr: 0.01, evalEvery: 0, ...over };
  validateRunConfig(cfg);
  return cfg;
}

async function expectEqualsOneDevice(cfg: RunConfig) {
  const report = await runPipeline(cfg, { hostFactory: cpuHosts(), readWeights: true, recvTimeoutMs: 5000 });
  const ref = await oneDeviceRun(toTrainConfig(cfg));
  expect(report.losses).toHaveLength(cfg.steps);
  let worst = 0;
  for (let i = 0; i < cfg.steps; i++) {
    const d = Math.abs(report.losses[i] - ref.losses[i]) / Math.abs(ref.losses[i]);
    worst = Math.max(worst, d);
    expect(d, `loss of step ${i}`).toBeLessThan(1e-12);
  }
  // Throws unless the run gave every parameter, whole (a tp or ZeRO-3 gather that lost a piece fails).
  for (const [n, d] of Object.entries(relErrByName(report.weights, ref.params))) {
    worst = Math.max(worst, d);
    expect(d, n).toBeLessThan(1e-12);
  }
  if (cfg.dp > 1 && cfg.zero !== 3) expect(report.replicaMismatch).toBe(0);
  // The parameters tp does not split (embeddings, LayerNorms, biases of row-split layers, the head) agree on every tp worker.
  expect(report.tpMismatch).toBe(0);
  console.log(`tp equality, dp ${cfg.dp} × tp ${cfg.tp} × pp ${cfg.ranks} ${cfg.schedule}${cfg.zero ? ` ZeRO-${cfg.zero}` : ''}${cfg.sequenceParallel ? ' sp' : ''}: worst relative difference ${worst.toExponential(2)}`);
  return report;
}

describe('dp × tp × pp on the CPU reference equals one device', () => {
  for (const schedule of ['1f1b', 'zb-h1', 'interleaved-1f1b'] as const) {
    for (const tp of [2, 4]) {
      it(`GPT ${schedule} tp=${tp} p=2`, async () => {
        await expectEqualsOneDevice(gpt({ schedule, tp, virtual: schedule === 'interleaved-1f1b' ? 2 : 1 }));
      });
    }
  }

  it('GPT dp=2 tp=2 p=2 with ZeRO-1, 2 and 3 (per step and per action), and tp=2 with recomputation', async () => {
    await expectEqualsOneDevice(gpt({ dp: 2, tp: 2, zero: 1 }));
    await expectEqualsOneDevice(gpt({ dp: 2, tp: 2, zero: 2, schedule: 'zb-h1' }));
    await expectEqualsOneDevice(gpt({ dp: 2, tp: 2, zero: 3 }));
    await expectEqualsOneDevice(gpt({ dp: 2, tp: 2, zero: 3, reshard: 'microbatch', ranks: 1 }));
    await expectEqualsOneDevice(gpt({ tp: 2, recompute: true, schedule: 'gpipe' }));
  });

  it('GPT with sequence parallelism: 1F1B tp 2 and ZB-H1 tp 4 at p 2, one stage at tp 2, dp 2 with ZeRO-3, full and selective recomputation', async () => {
    const sp = { sequenceParallel: true } as const;
    const r = await expectEqualsOneDevice(gpt({ ...sp, tp: 2 }));
    // Each block's forward: two gathers and two reduce-scatters; its backward: three gathers (dy, and the LayerNorm outputs, in one), two reduce-scatters and the LayerNorms' sum.
    const kinds = new Map<string, number>();
    for (const iv of r.timeline.intervals) if (iv.op === 'collective' && iv.coll?.startsWith('tp-')) kinds.set(iv.coll, (kinds.get(iv.coll) ?? 0) + 1);
    expect(kinds.get('tp-reduce-scatter')).toBeGreaterThan(0);
    expect(kinds.get('tp-all-gather')).toBeGreaterThan(0);
    await expectEqualsOneDevice(gpt({ ...sp, tp: 4, schedule: 'zb-h1' }));
    await expectEqualsOneDevice(gpt({ ...sp, tp: 2, ranks: 1 }));
    await expectEqualsOneDevice(gpt({ ...sp, dp: 2, tp: 2, zero: 3 }));
    await expectEqualsOneDevice(gpt({ ...sp, tp: 2, recompute: true, schedule: 'gpipe' }));
    await expectEqualsOneDevice(gpt({ ...sp, tp: 2, recomputeAttention: true }));
  });

  it('GPT with sequence parallelism on the schedules whose ranks hold several stages: interleaved v 2, ZB-V, DualPipe (copies summed per tp worker)', async () => {
    const sp = { sequenceParallel: true, tp: 2 } as const;
    await expectEqualsOneDevice(gpt({ ...sp, schedule: 'interleaved-1f1b', virtual: 2 }));
    await expectEqualsOneDevice(gpt({ ...sp, schedule: 'zb-v', virtual: 2 }));
    await expectEqualsOneDevice(gpt({ ...sp, schedule: 'dualpipe', layers: 3, microbatches: 4 }));
  });

  for (const model of ['mlp', 'char-mlp'] as const) {
    it(`${model}: 1F1B tp=2 p=2, ZB-H1 tp=4 p=2, dp=2 tp=2 p=2 ZeRO-1`, async () => {
      const data = model === 'mlp' ? {} : { dataset: 'names' as const, model, context: 3, embedDim: 4 };
      await expectEqualsOneDevice(mlp({ ...data, tp: 2 }));
      await expectEqualsOneDevice(mlp({ ...data, tp: 4, schedule: 'zb-h1' }));
      await expectEqualsOneDevice(mlp({ ...data, tp: 2, dp: 2, zero: 1 }));
    });
  }

  it('tp lanes and collectives in the timeline: every worker draws its tp all-reduces, 4 per block forward and backward (2 each way)', async () => {
    const cfg = gpt({ tp: 2, layers: 3, ranks: 1, microbatches: 2 });
    const report = await runPipeline(cfg, { hostFactory: cpuHosts(), recvTimeoutMs: 5000 });
    const t = report.timeline;
    expect(t.tp).toBe(2);
    for (const lane of [0, 1]) {
      const ar = t.intervals.filter((iv) => iv.op === 'collective' && iv.coll === 'tp-all-reduce' && laneOf(t, iv) === lane);
      // 3 blocks × 2 micro-batches × (2 forward + 2 backward).
      expect(ar).toHaveLength(3 * 2 * 4);
      // Each part is one micro-batch's activations [rows·T, C] in float64, sent to the one other member.
      for (const iv of ar) expect(iv.bytes).toBe(8 * (cfg.batchSize / cfg.microbatches) * (cfg.blockSize ?? 0) * (cfg.width ?? 0));
    }
  });

  it('the split covers what Megatron splits, and nothing whole is split', () => {
    const rules = tpParams(buildModelSpec(gpt({ tp: 2 })));
    expect([...rules.keys()].filter((k) => k.startsWith('transformer.h.0.'))).toEqual([
      'transformer.h.0.attn.c_attn.weight', 'transformer.h.0.attn.c_attn.bias', 'transformer.h.0.attn.c_proj.weight',
      'transformer.h.0.mlp.c_fc.weight', 'transformer.h.0.mlp.c_fc.bias', 'transformer.h.0.mlp.c_proj.weight',
    ]);
    expect(rules.has('lm_head.weight')).toBe(false);
  });

});

describe('tp beside the streams without a flush (PipeDream-2BW, PipeDream)', () => {
  // Each tp worker keeps its own pieces' weight versions; the versions and updates are the schedule's, the split Megatron's.
  async function expectClose(cfg: RunConfig, ref: { losses: number[]; params: Record<string, ArrayLike<number>> | undefined }) {
    const report = await runPipeline(cfg, { hostFactory: cpuHosts(), readWeights: true, recvTimeoutMs: 5000 });
    expect(report.losses).toHaveLength(cfg.steps);
    for (let i = 0; i < cfg.steps; i++) expect(Math.abs(report.losses[i] - ref.losses[i]) / Math.abs(ref.losses[i]), `loss of step ${i}`).toBeLessThan(1e-12);
    expect(ref.params, 'the reference run read its weights').toBeDefined();
    for (const [n, e] of Object.entries(relErrByName(report.weights, ref.params!))) expect(e, n).toBeLessThan(1e-12);
    expect(report.tpMismatch).toBe(0);
    for (const w of Object.values(report.weightStash ?? {})) expect(w.versions).toBeGreaterThanOrEqual(cfg.schedule === 'pipedream-2bw' ? 2 : 1);
  }

  it('GPT 2BW tp=2 p=2 (and with sequence parallelism), and dp=2 × tp=2 × p=2 (8 workers), equal the one-device stale rule', async () => {
    const cfg = gpt({ schedule: 'pipedream-2bw', tp: 2, steps: 3 });
    await expectClose(cfg, await trainDoubleBuffered(new CpuBackend(), toTrainConfig(cfg)));
    const mesh = gpt({ schedule: 'pipedream-2bw', tp: 2, dp: 2, steps: 3, batchSize: 16 });
    await expectClose(mesh, await trainDoubleBuffered(new CpuBackend(), toTrainConfig(mesh)));
    // Sequence parallelism on the stream: each tp worker's weight versions, its rows.
    const sp = gpt({ schedule: 'pipedream-2bw', tp: 2, steps: 3, sequenceParallel: true });
    await expectClose(sp, await trainDoubleBuffered(new CpuBackend(), toTrainConfig(sp)));
  });

  it('char-MLP PipeDream tp=2 p=2, and the GPT with sequence parallelism, equal the same run with whole layers', async () => {
    const cfg = mlp({ dataset: 'names', model: 'char-mlp', context: 3, embedDim: 4, schedule: 'pipedream', tp: 2, microbatches: 4, steps: 3 });
    const whole = await runPipeline({ ...cfg, tp: 1 }, { hostFactory: cpuHosts(), readWeights: true, recvTimeoutMs: 5000 });
    await expectClose(cfg, { losses: whole.losses, params: whole.weights });
    // PipeDream updates after every backward: the LayerNorms' partial gradients are summed over the tp group each time.
    const sp = gpt({ schedule: 'pipedream', tp: 2, microbatches: 4, steps: 3, sequenceParallel: true });
    const spWhole = await runPipeline({ ...sp, tp: 1, sequenceParallel: false }, { hostFactory: cpuHosts(), readWeights: true, recvTimeoutMs: 5000 });
    await expectClose(sp, { losses: spWhole.losses, params: spWhole.weights });
  });
});

describe('what a tp worker holds', () => {
  it('each worker of a tp 2 stage holds 1/2 of the split tensors and all of the rest: weights at rest equal the count from the model', async () => {
    const cfg = gpt({ tp: 2, ranks: 1, layers: 2, optimizer: 'sgd', momentum: 0.9 });
    const report = await runPipeline(cfg, { hostFactory: cpuHosts(), recvTimeoutMs: 5000 });
    const spec = buildModelSpec(cfg);
    const C = cfg.width ?? 0, V = 28, T = cfg.blockSize ?? 0;
    // Independent count: a block's 12C² + 13C values, of which c_attn (3C² + 3C), c_fc (4C² + 4C) and both projections' weights (C² + 4C²) split.
    const block = 12 * C * C + 13 * C, split = 12 * C * C + 7 * C;
    const embed = V * C + T * C, head = 2 * C + V * C;
    const perWorker = embed + 2 * (block - split / 2) + head;
    expect(spec.blocks).toHaveLength(3);
    for (const h of report.heldBytesPerWorker ?? []) {
      expect(h.weights).toBe(4 * perWorker);
      expect(h.formula.weights).toBe(4 * perWorker);
    }
    expect(report.heldBytesPerWorker).toHaveLength(2);
  });
});
