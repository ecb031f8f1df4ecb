/** `pipelab export-torch --dp --zero --no-overlap`: the mesh in config.json, the launch it prints, and its refusals. */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { defaultRunConfig, validateRunConfig } from '../config/run-config.ts';
import { run } from './cli-test-support.ts';

const dir = mkdtempSync(join(tmpdir(), 'pipelab-cli-dp-'));
const small = ['--ranks', '2', '--microbatches', '4', '--batchSize', '32', '--steps', '2', '--dataset', 'names'];

function configJson(files: Map<string, string | Uint8Array>, out: string): Record<string, unknown> & { run: Record<string, unknown> } {
  return JSON.parse(files.get(join(out, 'config.json')) as string) as Record<string, unknown> & { run: Record<string, unknown> };
}

describe('export-torch with data parallelism', () => {
  it('writes dp, ranks and world = dp × ranks, ZeRO-1 and overlap, and prints the launch of dp × ranks processes', () => {
    const out = join(dir, 'dp');
    const r = run('export-torch', ...small, '--dp', '2', '--zero', '1', '--no-overlap', '--out', out);
    expect(r.code, r.err).toBe(0);
    expect(r.out).toContain('torchrun --nproc_per_node=4 train.py');
    const cfg = configJson(r.files, out);
    expect({ dp: cfg.dp, ranks: cfg.ranks, world: cfg.world, rows: cfg.rowsPerMicrobatch }).toEqual({ dp: 2, ranks: 2, world: 4, rows: 32 / (2 * 4) });
    expect(cfg.run).toMatchObject({ dp: 2, zero: 1, overlap: false });
    for (const f of ['train.py', 'bundle.py', 'collectives.py', 'data.py', 'model.py', 'pipeline.py', 'profiling.py']) expect(r.files.has(join(out, f)), f).toBe(true);
    expect(r.files.get(join(out, 'README.md'))).toContain('The world size is dp × ranks = 2 × 2 = 4');
  });

  it('refuses PipeDream with dp > 1 with the page’s message, ZeRO-1 without replicas, and both overlap flags', () => {
    const pd = run('export-torch', ...small, '--schedule', 'pipedream', '--dp', '2', '--out', join(dir, 'never'));
    expect(pd.code).toBe(2);
    let page = '';
    try {
      validateRunConfig({ ...defaultRunConfig(), dataset: 'names', model: 'char-mlp', ranks: 2, microbatches: 4, batchSize: 32, steps: 2, schedule: 'pipedream', dp: 2 });
    } catch (e) {
      page = (e as Error).message;
    }
    expect(page).toContain('data parallelism needs a synchronous schedule');
    expect(pd.err).toContain(page.slice(page.indexOf(':') + 1).trim());
    expect(pd.files.size).toBe(0);
    const z = run('export-torch', ...small, '--zero', '1', '--out', join(dir, 'never'));
    expect(z.err).toContain('--zero = 1: ZeRO-1 shards the optimizer state across data-parallel replicas; it needs dp ≥ 2 (dp = 1)');
    const both = run('export-torch', ...small, '--dp', '2', '--overlap', 'true', '--no-overlap', '--out', join(dir, 'never'));
    expect(both.code).toBe(2);
    expect(both.err).toContain('--no-overlap = "--overlap true": give one of --overlap and --no-overlap');
  });
});
