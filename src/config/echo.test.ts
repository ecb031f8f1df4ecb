/**
 * A refused value is echoed as it was given, whatever its type (a seed given as
 * null reads `seed = null`, never `seed = NaN`): through the automation entry's
 * snapshot and validation, the URL's reading and the CLI's flags.
 */
import { describe, expect, it } from 'vitest';
import { run } from '../cli/cli-test-support.ts';
import { snapshotRunConfig } from './config-snapshot.ts';
import { configFromQuery, defaultRunConfig, validateRunConfig } from './run-config.ts';

function refusedAs(seed: unknown): string {
  try {
    validateRunConfig(snapshotRunConfig({ ...defaultRunConfig(), seed } as never));
  } catch (e) {
    return (e as Error).message;
  }
  return 'accepted';
}

describe('refused values are echoed as given', () => {
  it.each([
    [null, 'seed = null: must be an integer'],
    ['7', 'seed = "7": must be an integer'],
    [NaN, 'seed = NaN: must be an integer'],
    [1.5, 'seed = 1.5: must be an integer'],
    [[1], 'seed = [1]: must be an integer'],
    [{ n: 1 }, 'seed = {"n":1}: must be an integer'],
    [true, 'seed = true: must be an integer'],
  ])('automation: seed %j', (seed, message) => {
    expect(refusedAs(seed)).toBe(message);
  });

  it('the URL and the CLI echo the text that was typed', () => {
    expect(configFromQuery('seed=null').errors[0]?.message).toBe('seed = "null": must be a number in decimal notation, such as 12 or 0.01');
    expect(run('export-torch', '--seed', 'null', '--out', '/nonexistent-never-written').err).toContain('--seed = "null": must be a number in decimal notation');
  });
});
