/**
 * `pipelab export-torch --dp --zero --reshard --prefetch --no-overlap`: the mesh and the ZeRO settings in
 * config.json, the launch it prints, and its refusals. (That the bundle trains as the page does with each ZeRO
 * stage: src/export/torch-export-dp.test.ts.)
 */
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
    expect(r.out).toContain('torchrun --redirects 1 --tee 1 --nproc_per_node=4 train.py');
    const cfg = configJson(r.files, out);
    expect({ dp: cfg.dp, ranks: cfg.ranks, world: cfg.world, rows: cfg.rowsPerMicrobatch }).toEqual({ dp: 2, ranks: 2, world: 4, rows: 32 / (2 * 4) });
    expect(cfg.run).toMatchObject({ dp: 2, zero: 1, overlap: false });
    for (const f of ['train.py', 'bundle.py', 'collectives.py', 'data.py', 'model.py', 'pipeline.py', 'profiling.py']) expect(r.files.has(join(out, f)), f).toBe(true);
    expect(r.files.get(join(out, 'README.md'))).toContain('The world size is dp × ranks = 2 × 2 = 4');
  });

  it('writes ZeRO-2, and ZeRO-3 with its reshard and prefetch, into config.json and the README', () => {
    const two = join(dir, 'zero2');
    const r2 = run('export-torch', ...small, '--dp', '2', '--zero', '2', '--out', two);
    expect(r2.code, r2.err).toBe(0);
    expect(configJson(r2.files, two).run).toMatchObject({ dp: 2, zero: 2, reshard: 'step', prefetch: true, overlap: true });
    expect(r2.files.get(join(two, 'README.md'))).toContain('2 data-parallel replicas with ZeRO-2: 4 processes');
    const three = join(dir, 'zero3');
    const r3 = run('export-torch', ...small, '--dp', '2', '--zero', '3', '--reshard', 'microbatch', '--prefetch', 'false', '--out', three);
    expect(r3.code, r3.err).toBe(0);
    expect(r3.out).toContain('torchrun --redirects 1 --tee 1 --nproc_per_node=4 train.py');
    expect(configJson(r3.files, three).run).toMatchObject({ dp: 2, zero: 3, reshard: 'microbatch', prefetch: false });
    expect(r3.files.get(join(three, 'README.md'))).toContain('with ZeRO-3 (reshard microbatch, no prefetch)');
  });

  it('refuses a ZeRO stage out of range, ZeRO-2/3 without replicas, reshard other than step below ZeRO-3, and bad reshard and prefetch values, naming flag, value and rule', () => {
    const refusals: [string[], string][] = [
      [['--dp', '2', '--zero', '4'], '--zero = 4: must be 0 (off), 1 (optimizer state sharded across the dp replicas), 2 (and gradients) or 3 (and weights: FSDP)'],
      [['--zero', '3'], '--zero = 3: ZeRO-3 shards across data-parallel replicas; it needs dp ≥ 2 (dp = 1)'],
      [['--zero', '2'], '--zero = 2: ZeRO-2 shards across data-parallel replicas; it needs dp ≥ 2 (dp = 1)'],
      [['--dp', '2', '--zero', '2', '--reshard', 'microbatch'], '--reshard = "microbatch": re-gathering weights for every action is ZeRO-3\'s (zero = 2); leave reshard = step'],
      [['--dp', '2', '--zero', '3', '--reshard', 'never'], '--reshard = "never": must be one of step, microbatch'],
      [['--dp', '2', '--zero', '3', '--prefetch', 'maybe'], '--prefetch = "maybe": must be true or false'],
    ];
    for (const [flags, message] of refusals) {
      const r = run('export-torch', ...small, ...flags, '--out', join(dir, 'never'));
      expect(r.code, flags.join(' ')).toBe(2);
      expect(r.err, flags.join(' ')).toContain(message);
      expect(r.files.size).toBe(0);
    }
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
    expect(z.err).toContain('--zero = 1: ZeRO-1 shards across data-parallel replicas; it needs dp ≥ 2 (dp = 1)');
    const both = run('export-torch', ...small, '--dp', '2', '--overlap', 'true', '--no-overlap', '--out', join(dir, 'never'));
    expect(both.code).toBe(2);
    expect(both.err).toContain('--no-overlap = "--overlap true": give one of --overlap and --no-overlap');
  });
});
