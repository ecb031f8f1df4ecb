/** How the command line writes numbers and counts for a person: significant digits, singular and plural. */
import { describe, expect, it } from 'vitest';
import { run } from './cli-test-support.ts';
import { count, fmt } from './format.ts';

describe('fmt and count', () => {
  it('writes 4 significant digits (never fewer than the whole part), no trailing zeros, integers as they are', () => {
    expect(fmt(19638.62958)).toBe('19639');
    expect(fmt(23.87976)).toBe('23.88');
    expect(fmt(0.0123456)).toBe('0.01235');
    expect(fmt(0.1 + 0.2)).toBe('0.3');
    expect(fmt(-2.5)).toBe('-2.5');
    expect(fmt(0.25)).toBe('0.25');
    expect(fmt(1.23456e-8)).toBe('1.235e-8');
    expect(fmt(3)).toBe('3');
    expect(fmt(Infinity)).toBe('Infinity');
    expect(fmt(16.842105, 3)).toBe('16.8');
    expect(fmt(1.5, 2)).toBe('1.5');
  });

  it('names one thing in the singular and others in the plural', () => {
    expect(count(1, 'rank')).toBe('1 rank');
    expect(count(0, 'rank')).toBe('0 ranks');
    expect(count(4, 'micro-batch', 'micro-batches')).toBe('4 micro-batches');
    expect(count(1, 'micro-batch', 'micro-batches')).toBe('1 micro-batch');
  });

  it('reads so in the outputs: one rank, one replica, one head; a step time of 4 significant digits', () => {
    expect(run('schedule', '--schedule', '1f1b', '--ranks', '1', '--microbatches', '1').out).toContain('1f1b: 1 rank × 1 stage per rank = 1 stage, 1 micro-batch, 2 actions');
    const dp = run('simulate', '--schedule', 'gpipe', '--ranks', '1', '--microbatches', '1', '--dp', '1', '--grad-bytes', '4', '--allreduce-bandwidth', '1');
    expect(dp.out).toContain('mesh       dp = 1 replica × 1 rank = 1 worker;');
    const plan = run('plan', '--model', 'gpt', '--layers', '2', '--hidden', '4096', '--heads', '1', '--seq', '256', '--vocab', '32000', '--devices', '32', '--global-batch', '256', '--memory-gb', '0.9', '--top', '3');
    expect(plan.out).toContain('model      GPT: 2 layers, hidden 4096, 1 head, seq 256');
    const best = /step (\S+) ms/.exec(plan.out)?.[1] ?? '';
    const json = JSON.parse(run('plan', '--model', 'gpt', '--layers', '2', '--hidden', '4096', '--heads', '1', '--seq', '256', '--vocab', '32000', '--devices', '32', '--global-batch', '256', '--memory-gb', '0.9', '--top', '1', '--format', 'json').out);
    const stepMs = json.candidates[0].stepMs as number;
    expect(Number(best)).toBeCloseTo(stepMs, 2 - Math.floor(Math.log10(stepMs)));
    expect(best.replace(/^-?0\.0*|\./g, '').length).toBeLessThanOrEqual(Math.max(4, String(Math.round(stepMs)).length));
  });
});
