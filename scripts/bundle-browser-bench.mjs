// Bundles the browser benchmark's drivers (src/bench/driver/run.ts: `npm run bench`, and
// browser-probe.ts: the GPU probe) into .bench-browser/run.mjs and .bench-browser/browser-probe.mjs.
// Playwright stays an import (node_modules/playwright and playwright-core); nothing else is needed
// at run time: dist/ is served by Node's http module. For a machine with Node and a Chromium but no
// npm (a lent GPU machine: scripts/gpu-carry.sh packs what travels, bench/GPU.md has the recipe).
// Run the bundles from the repository with PIPELAB_ROOT set to it.
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');

await build({
  entryPoints: { run: join(root, 'src/bench/driver/run.ts'), 'browser-probe': join(root, 'src/bench/driver/browser-probe.ts') },
  outdir: join(root, '.bench-browser'),
  outExtension: { '.js': '.mjs' },
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  external: ['playwright', 'playwright-core'],
  logLevel: 'warning',
});
console.log('bundled .bench-browser/run.mjs and .bench-browser/browser-probe.mjs');
