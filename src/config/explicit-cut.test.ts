/**
 * The run configuration's explicit cut (partition = 'cut', cut = blocks per
 * stage): every rule refuses its bad value naming the field, the value and the
 * rule; the run plan, the run's report, the link and the PyTorch export all
 * use the cut given, not the FLOPs cut.
 */
import { describe, expect, it } from 'vitest';
import { run as cli } from '../cli/cli-test-support.ts';
import { buildTorchBundle, type TorchBundleConfig } from '../export/torch-bundle.ts';
import { readTorchProgram } from '../export/torch-program-disk.ts';
import { CpuBackend } from '../nn/cpu-backend.ts';
import { blockCosts } from '../nn/model-spec.ts';
import { partitionBlocks } from '../nn/partition.ts';
import { snapshotRunConfig } from './config-snapshot.ts';
import { runPipeline } from '../runtime/coordinator.ts';
import { cutOfRanges, parseCutText, rangesOfCut } from './explicit-cut.ts';
import { InProcessRankHost } from '../runtime/executor/in-process-host.ts';
import { configFromQuery, configToQuery, defaultRunConfig, validateRunConfig, withoutCut, type RunConfig } from './run-config.ts';
import { stageCut } from './run-limits.ts';
import { planRun } from '../runtime/executor/run-plan.ts';

/** The names char-MLP: 3 hidden blocks and a heavy head (the vocabulary), 4 blocks in all. */
const names: RunConfig = { ...defaultRunConfig(), dataset: 'names', model: 'char-mlp', context: 3, embedDim: 8, layers: 3, hidden: 16, batchSize: 16, microbatches: 4, steps: 2, evalEvery: 0, ranks: 3 };

function refusal(cfg: RunConfig): string {
  try {
    validateRunConfig(cfg);
  } catch (e) {
    return (e as Error).message;
  }
  return 'accepted';
}

describe('cut: the rules', () => {
  const base: RunConfig = { ...defaultRunConfig(), partition: 'cut', cut: [1, 1, 1, 1] }; // 4 ranks, 4 blocks

  it('a valid cut passes, and the default configuration has none', () => {
    expect(refusal(base)).toBe('accepted');
    expect(defaultRunConfig().partition).toBe('flops');
    expect('cut' in defaultRunConfig()).toBe(false);
  });

  it('one entry per stage (ranks × virtual)', () => {
    expect(refusal({ ...base, cut: [1, 1] })).toBe('cut = [1, 1]: has 2 stages; ranks × virtual = 4 stages need 4 entries');
    expect(refusal({ ...base, ranks: 2, virtual: 2, schedule: 'interleaved-1f1b', cut: [1, 1, 2] })).toBe('cut = [1, 1, 2]: has 3 stages; ranks × virtual = 4 stages need 4 entries');
  });

  it('the entries sum to the model’s blocks', () => {
    expect(refusal({ ...base, ranks: 4, layers: 3, cut: [1, 1, 1, 2] })).toBe('cut = [1, 1, 1, 2]: sums to 5 blocks; the model has 4 (layers + 1)');
    expect(refusal({ ...base, ranks: 2, cut: [1, 2] })).toBe('cut = [1, 2]: sums to 3 blocks; the model has 4 (layers + 1)');
  });

  it('every entry is a whole number ≥ 1', () => {
    expect(refusal({ ...base, cut: [2, 0, 1, 1] })).toBe('cut = [2, 0, 1, 1]: entry 1 is 0; every entry must be a whole number ≥ 1 (a stage holds at least one block)');
    expect(refusal({ ...base, cut: [1, 1.5, 0.5, 1] })).toContain('entry 1 is 1.5; every entry must be a whole number ≥ 1');
    expect(refusal({ ...base, cut: [1, 1, 3, -1] })).toContain('entry 3 is -1;');
    expect(refusal({ ...base, cut: [1, '1', 1, 1] as unknown as number[] })).toContain('entry 1 is "1";');
    expect(refusal({ ...base, cut: '1,1,1,1' as unknown as number[] })).toBe('cut = "1,1,1,1": must be a list of blocks per stage, such as [1, 1, 2]');
  });

  it('partition = "cut" needs a cut; a cut needs partition = "cut"', () => {
    expect(refusal(withoutCutButPartition(base))).toBe('partition = "cut": needs cut, the blocks of each stage (e.g. cut = [1, 1, 2], in a link cut=1,1,2)');
    expect(refusal({ ...base, partition: 'flops' })).toBe('cut = [1, 1, 1, 1]: is read only with partition = "cut" (partition is "flops"): leave cut out, or set partition to "cut"');
    expect(refusal(withoutCut(base))).toBe('accepted');
    expect(withoutCut(base).partition).toBe('flops');
  });

  it('the stage limits hold for the cut given: a cut that loads one rank past its memory is refused where the FLOPs cut runs', () => {
    const big: RunConfig = { ...defaultRunConfig(), hidden: 4096, layers: 6, ranks: 2, batchSize: 8, microbatches: 8 };
    expect(refusal(big)).toBe('accepted');
    expect(refusal({ ...big, partition: 'cut', cut: [1, 6] })).toMatch(/^hidden = 4096: a rank would hold about 1\.\d+ GiB .*a rank may hold at most 1\.00 GiB$/);
  });

  it('the snapshot of a configuration knows the key', () => {
    expect(snapshotRunConfig(base).cut).toEqual([1, 1, 1, 1]);
    expect(() => snapshotRunConfig({ ...base, cuts: [1] })).toThrow('cuts = [1]: is not a known configuration key; the nearest is "cut"');
  });
});

function withoutCutButPartition(cfg: RunConfig): RunConfig {
  const { cut: _c, ...rest } = cfg;
  return rest;
}

describe('cut: the run uses it', () => {
  it('stageCut and the run plan cut where the list says, not where FLOPs would', () => {
    const spec = stageCut(names).spec;
    const byFlops = partitionBlocks(4, blockCosts(spec), 3);
    expect(stageCut(names).stageBlocks).toEqual(byFlops);
    for (const cut of [[1, 1, 2], [2, 1, 1], [1, 2, 1]]) {
      const cfg: RunConfig = { ...names, partition: 'cut', cut };
      expect(stageCut(cfg).stageBlocks).toEqual(rangesOfCut(cut));
      expect(planRun(cfg).stageBlocks).toEqual(rangesOfCut(cut));
      expect(cutOfRanges(planRun(cfg).stageBlocks)).toEqual(cut);
    }
    expect(rangesOfCut([1, 1, 2])).toEqual([[0, 1], [1, 2], [2, 4]]);
    // The heavy head makes the FLOPs cut differ from at least one of these.
    expect([[1, 1, 2], [2, 1, 1]].some((c) => JSON.stringify(rangesOfCut(c)) !== JSON.stringify(byFlops))).toBe(true);
  });

  it('a run reports the cut it used (in-process, CPU)', async () => {
    const cfg: RunConfig = { ...names, partition: 'cut', cut: [2, 1, 1] };
    const report = await runPipeline(cfg, { hostFactory: (r) => new InProcessRankHost(r, new CpuBackend()) });
    expect(report.stageBlocks).toEqual([[0, 2], [2, 3], [3, 4]]);
    expect(report.config.cut).toEqual([2, 1, 1]);
    expect(report.config.partition).toBe('cut');
    expect(report.losses).toHaveLength(2);
  });

  it('the PyTorch export cuts the model where the run does', () => {
    // The FLOPs cut of this model is [1, 2, 1] (stageBlocks [[0, 1], [1, 3], [3, 4]]).
    const cfg: RunConfig = { ...names, partition: 'cut', cut: [2, 1, 1] };
    const file = buildTorchBundle(cfg, readTorchProgram()).find((f) => f.path === 'config.json');
    const c = JSON.parse(String(file?.data)) as TorchBundleConfig;
    expect(c.stageBlocks).toEqual([[0, 2], [2, 3], [3, 4]]);
  });
});

describe('cut: in a link and on the command line', () => {
  it('a link reproduces the cut; cut alone means partition = "cut"', () => {
    const cfg: RunConfig = { ...names, partition: 'cut', cut: [1, 2, 1] };
    const q = configToQuery(cfg);
    expect(new URLSearchParams(q).get('cut')).toBe('1,2,1');
    expect(q).toContain('&cut=1,2,1&');
    const back = configFromQuery(q);
    expect(back.errors).toEqual([]);
    expect(back.config).toEqual(cfg);
    expect(new URLSearchParams(configToQuery(names)).has('cut')).toBe(false);
    const implied = configFromQuery('dataset=names&layers=3&ranks=3&cut=2,1,1');
    expect(implied.errors.map((e) => e.message)).toEqual([]);
    expect(implied.config.partition).toBe('cut');
    expect(implied.config.cut).toEqual([2, 1, 1]);
  });

  it('a bad cut in a link is named and the run falls back to the FLOPs cut', () => {
    const r = configFromQuery('ranks=4&cut=1,1');
    expect(r.errors.map((e) => e.message)).toEqual([
      'cut = [1, 1]: has 2 stages; ranks × virtual = 4 stages need 4 entries',
      'partition = "cut": needs cut, the blocks of each stage (e.g. cut = [1, 1, 2], in a link cut=1,1,2)',
    ]);
    expect(r.config.partition).toBe('flops');
    expect('cut' in r.config).toBe(false);
    expect(configFromQuery('cut=1,x,2').errors[0].message).toBe('cut = "1,x,2": must list the blocks of each stage as whole numbers separated by commas, such as 1,1,2');
    expect(configFromQuery('partition=blocks&cut=1,1,1,1').errors[0].message).toContain('cut = [1, 1, 1, 1]: is read only with partition = "cut" (partition is "blocks")');
    expect(() => parseCutText('')).toThrow('cut = "": must list');
    expect(parseCutText(' 1, 2 ,1')).toEqual([1, 2, 1]);
  });

  it('export-torch takes --cut, writes that cut, and names a bad one', () => {
    const ok = cli('export-torch', '--dataset', 'names', '--layers', '3', '--ranks', '3', '--batchSize', '16', '--microbatches', '4', '--steps', '1', '--cut', '1,1,2', '--out', 'o');
    expect(ok.code, ok.err).toBe(0);
    const c = JSON.parse(String(ok.files.get('o/config.json'))) as TorchBundleConfig;
    expect(c.stageBlocks).toEqual([[0, 1], [1, 2], [2, 4]]);
    const bad = cli('export-torch', '--dataset', 'names', '--layers', '3', '--ranks', '3', '--cut', '1,1,1', '--out', 'o');
    expect(bad.code).not.toBe(0);
    expect(bad.err).toContain('--cut = [1, 1, 1]: sums to 3 blocks; the model has 4 (layers + 1)');
    expect(cli('export-torch', '--help').out).toContain('--cut');
  });
});
