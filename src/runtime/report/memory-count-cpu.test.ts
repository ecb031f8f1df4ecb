/**
 * The allocator's count (nn/memory-ledger.ts) checked against the formulas the page and the planner use, on the
 * float64 CPU host with real workers' code (4 bytes a value, as the page's float32): the ZeRO paper's model states
 * at dp = 4 (16Ψ → 10Ψ → 7Ψ → 4Ψ bytes at rest for AdamW, plus one gathered stage for ZeRO-3 at the peak), Ψ counted
 * from the model's layers; and each worker's steady-state peak beside held-bytes.ts's formula per schedule.
 */
import { describe, expect, it } from 'vitest';
import { CpuBackend } from '../../nn/cpu-backend.ts';
import { byKind, liveTotal } from '../../nn/memory-ledger.ts';
import { buildModelSpec } from '../../nn/model-config.ts';
import { layerParamCount } from '../../nn/model-spec.ts';
import { Stage } from '../../nn/stage.ts';
import { defaultRunConfig, withDataset, type RunConfig } from '../../config/run-config.ts';
import { runPipeline } from '../coordinator.ts';
import { InProcessRankHost } from '../executor/in-process-host.ts';

const hosts = (r: number) => new InProcessRankHost(r, new CpuBackend());
const charMlp = (over: Partial<RunConfig>): RunConfig => ({ ...withDataset(defaultRunConfig(), 'names'), steps: 2, evalEvery: 0, batchSize: 32, ranks: 2, microbatches: 4, ...over });
const gpt = (over: Partial<RunConfig>): RunConfig => ({ ...defaultRunConfig(), dataset: 'names', model: 'gpt', layers: 2, heads: 2, width: 16, blockSize: 16, batchSize: 16, microbatches: 4, steps: 2, evalEvery: 0, ranks: 2, schedule: '1f1b', ...over });
const run = (cfg: RunConfig) => runPipeline(cfg, { hostFactory: hosts, recvTimeoutMs: 20000 });
const psiOf = (cfg: RunConfig) => buildModelSpec({ ...cfg }).blocks.reduce((n, b) => n + b.layers.reduce((m, l) => m + layerParamCount(l), 0), 0);

describe('ZeRO 0–3 at dp = 4, AdamW, float32: the model states the device holds', () => {
  for (const [name, make] of [['char-MLP', charMlp], ['GPT', gpt]] as const) {
    it(`${name}: 16Ψ, 10Ψ, 7Ψ, 4Ψ at rest; the peak adds what a backward and a gather hold, never more for ZeRO-1 than ZeRO-0`, async () => {
      const peaks: number[] = [];
      for (const [zero, states] of [[0, 16], [1, 10], [2, 7], [3, 4]] as const) {
        const cfg = make({ dp: 4, ranks: 1, zero, optimizer: 'adamw', microbatches: 2 });
        const psi = psiOf(cfg);
        const report = await run(cfg);
        expect(report.memory).toHaveLength(4);
        for (const [w, m] of (report.memory ?? []).entries()) {
          // At rest: the count after the step's update, by kind.
          const rest = byKind(m.samples[m.samples.length - 1].live);
          // Chunks of Ψ values cut in 4 differ by one value: a few bytes either way.
          expect(Math.abs(rest.weights + rest.grads + rest.optimizer - states * psi)).toBeLessThanOrEqual(16);
          expect(rest.gathered + rest.stash).toBe(0);
          const held = report.heldBytesPerWorker[w];
          const peak = held.measured?.peak ?? NaN;
          if (zero === 3) expect(held.measured?.byKind.gathered).toBe(4 * psi);
          if (w === 0) peaks.push(peak);
          // The plan bounds what the replicas stage up by one chunk of a stage (memory-budget.ts): within 15% under it.
          if (name === 'char-MLP') expect(peak / held.formula.peak).toBeGreaterThan(0.85), expect(peak).toBeLessThanOrEqual(held.formula.peak);
          // The GPT's formula counts a backward's working set as all W reads (run-limits.ts afterInput), its saved inputs twice: an upper bound.
          else expect(peak / held.formula.peak).toBeGreaterThan(0.75), expect(peak).toBeLessThanOrEqual(held.formula.peak);
        }
      }
      expect(peaks[1]).toBeLessThan(peaks[0]);
      expect(peaks[2]).toBeLessThan(peaks[0]);
    });
  }
});

describe("each worker's steady-state peak beside the formula (held-bytes.ts formula.peak)", () => {
  const within10: [string, RunConfig][] = [
    ['GPipe (m stashed)', charMlp({ schedule: 'gpipe' })],
    ['1F1B (p − r stashed)', charMlp({ schedule: '1f1b' })],
    ['interleaved 1F1B', charMlp({ schedule: 'interleaved-1f1b', virtual: 2 })],
    ['ZB-H1', charMlp({ schedule: 'zb-h1' })],
    ['ZB-V', charMlp({ schedule: 'zb-v', virtual: 2 })],
    ['DualPipe', charMlp({ schedule: 'dualpipe' })],
    ['DualPipe-V', charMlp({ schedule: 'dualpipe-v', virtual: 2 })],
    ["PipeDream-2BW's second weight version", charMlp({ schedule: 'pipedream-2bw' })],
    ['full recomputation', charMlp({ recompute: true })],
  ];
  for (const [name, cfg] of within10) {
    it(`${name}: within 10% on every worker`, async () => {
      const report = await run(cfg);
      for (const h of report.heldBytesPerWorker) expect(Math.abs((h.measured?.peak ?? NaN) / h.formula.peak - 1)).toBeLessThan(0.1);
    });
  }
  it('ZeRO-3 at dp = 2 × p = 2: at most the plan, and within 15% of it (a chunk of a stage staged up is bounded, not counted)', async () => {
    const report = await run(charMlp({ dp: 2, zero: 3 }));
    for (const h of report.heldBytesPerWorker) {
      const r = (h.measured?.peak ?? NaN) / h.formula.peak;
      expect(r).toBeGreaterThan(0.85);
      expect(r).toBeLessThanOrEqual(1);
    }
  });
  // The GPT without sequence parallelism: a backward's working set is smaller than all W reads; the formula bounds it.
  const bounded: [string, RunConfig][] = [
    ['GPT 1F1B', gpt({})],
    ['GPT, selective recomputation', gpt({ recomputeAttention: true })],
    ["GPT, tp 2 (each worker's slices)", gpt({ tp: 2 })],
    ["GPT, tp 2 with sequence parallelism (the rows' 1/t)", gpt({ tp: 2, sequenceParallel: true })],
  ];
  for (const [name, cfg] of bounded) {
    it(`${name}: at most the formula, and more than 3/4 of it`, async () => {
      const report = await run(cfg);
      for (const h of report.heldBytesPerWorker) {
        const r = (h.measured?.peak ?? NaN) / h.formula.peak;
        expect(r).toBeGreaterThan(0.75);
        expect(r).toBeLessThanOrEqual(1);
      }
    });
  }

  it("the report's memory lanes: each worker's samples on the step's clock, their most live bytes its step peak", async () => {
    const report = await run(charMlp({ steps: 1 }));
    for (const [w, m] of (report.memory ?? []).entries()) {
      expect(m.samples.length).toBeGreaterThan(2);
      for (const s of m.samples) expect(liveTotal(s)).toBeLessThanOrEqual(liveTotal(m.peak));
      expect(m.peak.t).toBeGreaterThanOrEqual(0);
      expect(report.heldBytesPerWorker[w].measured?.peak).toBe(liveTotal(m.peak));
    }
  });
});

describe('freed storage is not zeros: a missed gather breaks the step', () => {
  it('a stage whose weights were freed and not gathered back refuses its forward, naming the tensor', async () => {
    const be = new CpuBackend();
    const spec = buildModelSpec({ ...charMlp({}) });
    const st = new Stage(be, spec, 0, [0, spec.blocks.length], 1);
    for (const p of st.params) be.freeStorage(p.value);
    const x = be.tensor(new Array(spec.input.cols * 2).fill(1), [2, spec.input.cols], spec.input.dtype);
    await expect(st.forward(0, x, be.tensor([1, 2], [2], 'i32'), 0.5)).rejects.toThrow(/storage freed.*missed gather/);
  });
});
