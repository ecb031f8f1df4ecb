/**
 * The wait an overloaded expert's worker causes, through the pipeline runtime on the CPU host. The router starts at
 * zero, so every token's probabilities tie and top-1 sends all of them to expert 0 (ties go to the lower expert),
 * held by ep member 0 of each stage (experts 0 and 1 of 4 at ep = 2). The experts' compute here is capacity-padded
 * (every member computes its (E / ep)·cap rows), so load costs the CPU backend nothing; this test's backend models a
 * device whose grouped matmuls cost time per row holding a token (a ragged grouped GEMM), paid where the device's
 * work is waited for (the next read, as a GPU's read waits for its queued kernels). Then member 0 must show the most
 * tokens received, and member 1 the larger all-to-all wait, by about the time member 0's device spent.
 */
import { describe, expect, it } from 'vitest';
import type { MatmulOptions, Tensor } from '../../nn/backend.ts';
import { CpuBackend } from '../../nn/cpu-backend.ts';
import { runPipeline } from '../coordinator.ts';
import { InProcessRankHost } from '../executor/in-process-host.ts';
import { defaultRunConfig, type RunConfig } from '../../config/run-config.ts';
import { initialRunState } from '../../run-state/run-state.ts';
import { epReceived } from '../report/index.ts';

const MS_PER_ROW = 1;

/** A CPU backend whose grouped matmuls cost MS_PER_ROW per non-zero row of `a`, paid at the next read. */
class RowCostBackend extends CpuBackend {
  pending = 0;
  spent = 0;
  override groupedMatmul(a: Tensor, b: Tensor, groups: number, opts: MatmulOptions = {}) {
    const out = super.groupedMatmul(a, b, groups, opts);
    const [rows, cols] = a.shape;
    const x = (a as unknown as { data: Float64Array }).data;
    let filled = 0;
    for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) if (x[r * cols + c] !== 0) { filled++; break; }
    this.pending += filled * MS_PER_ROW;
    return out;
  }
  override async read(t: Tensor) {
    if (this.pending > 0) {
      const ms = this.pending;
      this.pending = 0;
      this.spent += ms;
      await new Promise((r) => setTimeout(r, ms));
    }
    return super.read(t);
  }
}

describe('ep wait: an overloaded expert’s worker keeps the others waiting (CPU host)', () => {
  it('all tokens to expert 0: member 0 receives them all, member 1 waits for it in the all-to-alls', async () => {
    const cfg: RunConfig = {
      ...defaultRunConfig(), dataset: 'names', model: 'gpt', layers: 2, heads: 2, width: 6, blockSize: 16, batchSize: 8, microbatches: 2,
      steps: 1, optimizer: 'adamw', lr: 0.01, evalEvery: 0, ranks: 2, experts: 4, topK: 1, capacityFactor: 0, ep: 2, schedule: '1f1b',
    };
    const init = await initialRunState(cfg);
    const routers = Object.keys(init.params).filter((n) => n.endsWith('router.weight'));
    expect(routers).toHaveLength(2);
    const params = { ...init.params };
    for (const n of routers) params[n] = new Float64Array(params[n].length);
    const backends: RowCostBackend[] = [];
    const report = await runPipeline(cfg, {
      hostFactory: (r) => {
        const be = new RowCostBackend();
        backends[r] = be;
        return new InProcessRankHost(r, be);
      },
      recvTimeoutMs: 10000,
      from: { ...init, params },
    });
    const step = report.moeLoad?.[0];
    expect(step?.ep).toBe(2);
    const tokens = (cfg.batchSize / cfg.microbatches) * 16;
    for (const l of step?.layers ?? []) {
      // Every token of each micro-batch to member 0's experts, none to member 1's.
      expect(epReceived(l, 2)).toEqual(l.columns.map(() => [tokens, 0]));
    }
    // Workers: (rank · ep + e); member 0's devices spent the time, member 1's none.
    expect(backends[1].spent + backends[3].spent).toBe(0);
    const waits = step?.epWait ?? [];
    expect(waits.map((w) => `${w.stage}.${w.epRank}`)).toEqual(['0.0', '0.1', '1.0', '1.1']);
    for (const stage of [0, 1]) {
      const [w0, w1] = [0, 1].map((e) => waits.find((w) => w.stage === stage && w.epRank === e)!);
      const spent = backends[stage * 2].spent;
      // Per stage at most 2 micro-batches × (forward + backward) × 2 grouped matmuls on `tokens` rows (a backward's
      // rows of tokens without a gradient are zero), and the forward's whole: 2 × 2 × tokens.
      expect(spent).toBeGreaterThanOrEqual(cfg.microbatches * 2 * tokens * MS_PER_ROW);
      expect(spent).toBeLessThanOrEqual(cfg.microbatches * 2 * 2 * tokens * MS_PER_ROW);
      expect(w1.exchanges).toBe(w0.exchanges);
      expect(w1.waitMs, `stage ${stage}: member 1 waits for member 0's device`).toBeGreaterThan(w0.waitMs + 0.5 * spent);
      expect(w1.waitMs).toBeLessThanOrEqual(w1.allToAllMs);
    }
    // The timeline's all-to-alls carry the wait the report sums.
    const a2a = report.timeline.intervals.filter((iv) => iv.coll === 'ep-all-to-all');
    expect(a2a.every((iv) => iv.wait !== undefined && iv.wait >= 0 && iv.wait <= iv.end - iv.start)).toBe(true);
    const sum = a2a.filter((iv) => iv.stage === 0 && iv.epRank === 1).reduce((s, iv) => s + (iv.wait ?? 0), 0);
    expect(sum).toBeCloseTo(waits[1].waitMs, 9);
  });
});
