/**
 * The allocator's count (nn/memory-ledger.ts) checked against the formulas the page and the planner use, on the
 * float64 CPU host with real workers' code (4 bytes a value, as the page's float32): the ZeRO paper's model states
 * at dp = 4 (16Ψ → 10Ψ → 7Ψ → 4Ψ bytes at rest for AdamW, plus one gathered stage for ZeRO-3 at the peak) and at
 * dp = 2, Ψ counted from the model's layers; and each worker's steady-state peak (less staging: held-bytes.ts
 * comparable) within 10% of the one formula the page, the planner and the report use (memory-budget.ts
 * plannedPeaks), per schedule, recomputation, tp and sequence parallelism.
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

describe('ZeRO 0–3 at dp = 2 and 4, AdamW, float32: the model states the device holds', () => {
  // The ZeRO paper's bytes a parameter at rest (4 weights, 4 gradients, 8 AdamW moments; §5): at dp = 4 16, 10, 7, 4;
  // at dp = 2 16, 12, 10, 8.
  const ratios = { 2: [16, 12, 10, 8], 4: [16, 10, 7, 4] } as const;
  for (const [name, make] of [['char-MLP', charMlp], ['GPT', gpt]] as const) {
    for (const dp of [2, 4] as const) {
      it(`${name}, dp = ${dp}: ${ratios[dp].join('Ψ, ')}Ψ at rest; the peak within 10% of the formula, never more for ZeRO-1 than ZeRO-0`, async () => {
        const peaks: number[] = [];
        for (const [zero, states] of ratios[dp].entries()) {
          const cfg = make({ dp, ranks: 1, zero: zero as 0 | 1 | 2 | 3, optimizer: 'adamw', microbatches: 2 });
          const psi = psiOf(cfg);
          const report = await run(cfg);
          expect(report.memory).toHaveLength(dp);
          for (const [w, m] of (report.memory ?? []).entries()) {
            // At rest: the count after the step's update, by kind.
            const rest = byKind(m.samples[m.samples.length - 1].live);
            // Chunks of Ψ values cut in dp differ by one value: a few bytes either way.
            expect(Math.abs(rest.weights + rest.grads + rest.optimizer - states * psi)).toBeLessThanOrEqual(16);
            expect(rest.gathered + rest.stash).toBe(0);
            const held = report.heldBytesPerWorker[w];
            const peak = held.measured?.comparable ?? NaN;
            if (zero === 3) expect(held.measured?.byKind.gathered).toBe(4 * psi);
            if (w === 0) peaks.push(peak);
            expect(Math.abs(peak / held.formula.peak - 1)).toBeLessThan(0.1);
          }
        }
        expect(peaks[1]).toBeLessThan(peaks[0]);
        expect(peaks[2]).toBeLessThan(peaks[0]);
      });
    }
  }
});

describe("each worker's steady-state peak within 10% of the formula (memory-budget.ts plannedPeaks, the report's formula.peak)", () => {
  // Each case on the char-MLP and the GPT. The formula's working set is the gradients a backward keeps for its weight
  // gradients and one layer's scratch, not their saved inputs again (which the stash already counts): run-limits.ts
  // StageMemory.working.
  const cases: [string, Partial<RunConfig>][] = [
    ['GPipe (m stashed)', { schedule: 'gpipe' }],
    ['1F1B (p − r stashed)', { schedule: '1f1b' }],
    ['interleaved 1F1B', { schedule: 'interleaved-1f1b', virtual: 2, layers: 3 }],
    ['ZB-H1', { schedule: 'zb-h1' }],
    ['ZB-V', { schedule: 'zb-v', virtual: 2, layers: 3 }],
    ['DualPipe', { schedule: 'dualpipe' }],
    ['DualPipe-V', { schedule: 'dualpipe-v', virtual: 2, layers: 3 }],
    ["PipeDream-2BW's second weight version", { schedule: 'pipedream-2bw' }],
    ['full recomputation', { recompute: true }],
    ['ZeRO-3 at dp = 2 × p = 2', { dp: 2, zero: 3 }],
  ];
  const gptOnly: [string, Partial<RunConfig>][] = [
    ['selective recomputation', { recomputeAttention: true }],
    ["tp 2 (each worker's slices)", { tp: 2 }],
    ["tp 2 with sequence parallelism (the rows' 1/t)", { tp: 2, sequenceParallel: true }],
  ];
  const table: [string, RunConfig][] = [
    ...cases.map(([name, over]): [string, RunConfig] => [`char-MLP, ${name}`, charMlp(over)]),
    ...[...cases, ...gptOnly].map(([name, over]): [string, RunConfig] => [`GPT, ${name}`, gpt(over)]),
  ];
  for (const [name, cfg] of table) {
    it(`${name}: within 10% on every worker`, async () => {
      const report = await run(cfg);
      expect(report.heldBytesPerWorker.length).toBe(cfg.ranks * (cfg.dp ?? 1) * (cfg.tp ?? 1));
      for (const h of report.heldBytesPerWorker) {
        // The CPU host has no uniform ring: what the formula leaves out is the staging (a ZeRO gather's upload, a collective's chunk).
        expect((h.measured?.peak ?? NaN) - (h.measured?.comparable ?? NaN)).toBe(h.measured?.byKind.staging);
        expect(h.measured?.byKind.uniforms).toBe(0);
        expect(Math.abs((h.measured?.comparable ?? NaN) / h.formula.peak - 1)).toBeLessThan(0.1);
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
