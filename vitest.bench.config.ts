import { defineConfig } from 'vitest/config';

// Node-side benchmarks (Dawn + SwiftShader): `npm run bench:node`. Not part of npm test.
export default defineConfig({
  test: { include: ['src/**/*.node-bench.ts'], environment: 'node', pool: 'forks', testTimeout: 600_000 },
});
