/** `pipelab plan --model gpt ... --host-options [--host-link GBPS]`: offload and swapping over the host link from the command line. */
import { describe, expect, it } from 'vitest';
import { run } from './cli-test-support.ts';

const gpt = ['--model', 'gpt', '--layers', '8', '--hidden', '1024', '--heads', '16', '--seq', '2048', '--vocab', '50257', '--devices', '4', '--global-batch', '16', '--max-micro-batch', '2', '--memory-gb', '0.7'];

describe('pipelab plan --host-options', () => {
  it('plans over the host link what fits no other way, naming offload or swapping in the memory saving', () => {
    expect(run('plan', ...gpt).code).not.toBe(0);
    const r = run('plan', ...gpt, '--host-options', '--top', '3');
    expect(r.code, r.err).toBe(0);
    const rows = r.out.trim().split('\n').filter((l) => /^\d+\s/.test(l));
    expect(rows).toHaveLength(3);
    for (const row of rows) expect(row).toMatch(/optimizer offload|swapping/);
  });

  it('a host link that is not a positive number is refused by its flag', () => {
    const r = run('plan', ...gpt, '--host-options', '--host-link', '0');
    expect(r.code).not.toBe(0);
    expect(r.err).toContain('--host-link');
  });
});
