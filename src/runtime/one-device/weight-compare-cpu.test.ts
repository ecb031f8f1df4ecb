/**
 * The equality tests' measure fails where a gather is broken (issue 51): a tensor cut to its first piece, a tensor
 * or every weight missing, an extra name; and a tp worker whose copy of a parameter tp does not split drifts from
 * tp rank 0's shows in the report's tpMismatch, though the run's weights (tp rank 0's) still equal one device's.
 */
import { describe, expect, it } from 'vitest';
import { CpuBackend } from '../../nn/cpu-backend.ts';
import { trainSingleDevice } from '../../nn/train.ts';
import { defaultRunConfig, toTrainConfig, validateRunConfig, type RunConfig } from '../../config/run-config.ts';
import { maxWeightDiff } from '../../export/testing/torchrun.ts';
import { mesh, placeOf } from '../../schedule/mesh.ts';
import { maxRelErr, relErr, relErrByName } from '../../util/rel-err.ts';
import { runPipeline } from '../coordinator.ts';
import { InProcessRankHost } from '../executor/in-process-host.ts';
import type { RankHost, Weights } from '../executor/rank-host.ts';
import { tpDifference } from '../report/weight-agreement.ts';

function gpt(over: Partial<RunConfig>): RunConfig {
  const cfg: RunConfig = {
    ...defaultRunConfig(), dataset: 'names', model: 'gpt', layers: 2, heads: 2, width: 8, blockSize: 16,
    schedule: '1f1b', ranks: 1, batchSize: 8, microbatches: 2, steps: 2, optimizer: 'adamw', lr: 0.01, evalEvery: 0, ...over,
  };
  validateRunConfig(cfg);
  return cfg;
}

/** The same weights with `name` cut to its first `keep` values (a gather that returned only the first piece). */
function truncated(w: Weights, name: string, keep: number): Weights {
  return { ...w, [name]: w[name].slice(0, keep) };
}

describe('relErr and maxWeightDiff refuse what does not line up', () => {
  const w = Float64Array.from([1, 2, 3, 4]);

  it('relErr throws on a length mismatch (before: [] and [w0] against w measured 0)', () => {
    expect(relErr(w, w)).toBe(0);
    expect(() => relErr([], w)).toThrow('relErr: 0 values against the reference\'s 4');
    expect(() => relErr([1], w)).toThrow('relErr: 1 values against the reference\'s 4');
  });

  it('by name: no weights, a missing, an extra or a short tensor, and an empty reference all throw, naming what', () => {
    const ref = { a: w, b: w };
    expect(maxRelErr({ a: w, b: w }, ref)).toBe(0);
    expect(() => relErrByName(undefined, ref)).toThrow('weights: none to compare');
    expect(() => relErrByName({}, ref)).toThrow('weights: missing a, b');
    expect(() => relErrByName({ a: w }, ref)).toThrow('weights: missing b');
    expect(() => relErrByName({ a: w, b: w, c: w }, ref)).toThrow('weights: not in the reference c');
    expect(() => relErrByName({ a: w, b: w.slice(0, 2) }, ref)).toThrow('weights: "b" has 2 values, the reference 4');
    expect(() => relErrByName({}, {})).toThrow('the reference holds no tensor');
    expect(maxWeightDiff({ a: w, b: w }, ref)).toBe(0);
    expect(() => maxWeightDiff(undefined, ref)).toThrow('weights: none to compare');
    expect(() => maxWeightDiff({ a: w }, ref)).toThrow('weights: missing b');
    expect(() => maxWeightDiff(ref, undefined)).toThrow('no reference');
    expect(() => maxWeightDiff({}, {})).toThrow('the reference holds no tensor');
    expect(() => maxWeightDiff({ a: w, b: w.slice(0, 1) }, ref)).toThrow('weights: "b" has 1 values, the reference 4');
  });
});

describe('a broken gather fails the "weights equal one device" comparison', () => {
  for (const [what, over] of [
    ['tp 2 (a split tensor cut to tp rank 0\'s piece)', { tp: 2 }],
    ['dp 2 with ZeRO-3 (a tensor cut to replica 0\'s shard)', { dp: 2, zero: 3 as const }],
  ] as const) {
    it(what, async () => {
      const cfg = gpt(over);
      const report = await runPipeline(cfg, { hostFactory: (w) => new InProcessRankHost(w, new CpuBackend()), readWeights: true, recvTimeoutMs: 5000 });
      const ref = await trainSingleDevice(new CpuBackend(), toTrainConfig(cfg));
      const weights = report.weights!;
      // Intact, it passes.
      expect(maxRelErr(weights, ref.params)).toBeLessThan(1e-12);
      expect(maxWeightDiff(weights, ref.params)).toBeLessThan(1e-12);
      // The first half of the attention's c_attn weight: what a gather of one of two pieces returns.
      const name = 'transformer.h.0.attn.c_attn.weight';
      const cut = truncated(weights, name, weights[name].length / 2);
      // The old measure (over the values given only) read 0 here: the piece it kept is right.
      let oldMeasure = 0;
      for (let i = 0; i < cut[name].length; i++) oldMeasure += (cut[name][i] - ref.params[name][i]) ** 2;
      expect(oldMeasure).toBeLessThan(1e-20);
      expect(() => relErrByName(cut, ref.params)).toThrow(`"${name}" has ${weights[name].length / 2} values`);
      expect(() => maxWeightDiff(cut, ref.params)).toThrow(`"${name}" has ${weights[name].length / 2} values`);
      // No weights at all, or one missing.
      expect(() => maxRelErr(undefined, ref.params)).toThrow('none to compare');
      const { [name]: _dropped, ...without } = weights;
      expect(() => maxWeightDiff(without, ref.params)).toThrow(`missing ${name}`);
    });
  }
});

describe('tp workers agree on the parameters tp does not split', () => {
  it('tpDifference: 0 when equal, the difference when a LayerNorm drifts, Infinity when one is missing; split pieces are not compared', () => {
    const m = mesh(1, 1, 2);
    const ln = Float64Array.from([1, 1, 1]);
    const w0: Weights = { 'ln.weight': ln, 'fc.weight@tp0/2': Float64Array.from([1, 2]) };
    const w1: Weights = { 'ln.weight': Float64Array.from(ln), 'fc.weight@tp1/2': Float64Array.from([3, 4]) };
    expect(tpDifference(m, [w0, w1])).toBe(0);
    expect(tpDifference(m, [w0, { ...w1, 'ln.weight': Float64Array.from([1, 1.25, 1]) }])).toBe(0.25);
    expect(tpDifference(m, [w0, { 'fc.weight@tp1/2': w1['fc.weight@tp1/2'] }])).toBe(Infinity);
    // With ZeRO-3 each holds pieces name[lo:hi]: the same piece of an unsplit parameter on both tp workers.
    expect(tpDifference(m, [{ 'ln.weight[0:2]': Float64Array.from([1, 2]) }, { 'ln.weight[0:2]': Float64Array.from([1, 2.5]) }])).toBe(0.5);
  });

  it('a run reports tpMismatch 0, and a tp worker whose LayerNorm drifts shows in it while the run\'s weights still equal one device\'s', async () => {
    const cfg = gpt({ tp: 2, ranks: 2, layers: 3 });
    const hosts = (drift: boolean) => (w: number): RankHost => {
      const h = new InProcessRankHost(w, new CpuBackend());
      if (!drift || placeOf(mesh(cfg.dp, cfg.ranks, 2), w).tpRank !== 1) return h;
      const read = h.readWeights.bind(h);
      h.readWeights = async () => {
        const ws = await read();
        const out: Weights = { ...ws };
        for (const k of Object.keys(ws).filter((k) => /\.ln_\d\.weight$|ln_f\.weight$/.test(k))) {
          const v = Float64Array.from(ws[k]);
          v[0] += 1e-3;
          out[k] = v;
        }
        return out;
      };
      return h;
    };
    const ref = await trainSingleDevice(new CpuBackend(), toTrainConfig(cfg));
    const good = await runPipeline(cfg, { hostFactory: hosts(false), readWeights: true, recvTimeoutMs: 5000 });
    expect(good.tpMismatch).toBe(0);
    const drifted = await runPipeline(cfg, { hostFactory: hosts(true), readWeights: true, recvTimeoutMs: 5000 });
    expect(maxRelErr(drifted.weights, ref.params)).toBeLessThan(1e-12);
    expect(drifted.tpMismatch).toBeCloseTo(1e-3, 12);
    // Without tp there is nothing to compare.
    const one = await runPipeline({ ...cfg, tp: 1 }, { hostFactory: hosts(false), readWeights: true, recvTimeoutMs: 5000 });
    expect(one.tpMismatch).toBeUndefined();
  });
});
