import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts'],
    environment: 'node',
    pool: 'forks',
    // Vitest's default is one worker fewer than the cores: one on a 2-core machine, where the suite then runs
    // file after file while the torchrun and Dawn tests wait on their subprocesses and GPU queue. Two files at
    // once took the unit suite from 423 s to 262 s on the 2-core CI machine.
    maxWorkers: Math.max(2, availableParallelism() - 1),
    testTimeout: 120_000,
    hookTimeout: 60_000,
  },
});
