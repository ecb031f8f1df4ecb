// Bundles scripts/fit-measure.ts (WGSL imported with `?raw` inlined as text, Dawn's `webgpu` addon kept as an import)
// into .bench-node/fit-measure.mjs and runs it: node scripts/fit-measure.mjs [steps]
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { spawnSync } from 'node:child_process';
import { build } from 'esbuild';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const rawText = {
  name: 'raw-text',
  setup(b) {
    b.onResolve({ filter: /\?raw$/ }, (a) => ({ path: resolve(a.resolveDir, a.path.slice(0, -'?raw'.length)), namespace: 'raw-text' }));
    b.onLoad({ filter: /.*/, namespace: 'raw-text' }, (a) => ({ contents: readFileSync(a.path, 'utf8'), loader: 'text' }));
  },
};
const outfile = join(root, '.bench-node/fit-measure.mjs');
await build({
  entryPoints: [join(root, 'scripts/fit-measure.ts')],
  outfile,
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  external: ['webgpu'],
  banner: { js: "import { createRequire as __pipelabRequire } from 'node:module'; const require = __pipelabRequire(import.meta.url);" },
  plugins: [rawText],
  logLevel: 'warning',
});
process.exit(spawnSync(process.execPath, [outfile, ...process.argv.slice(2)], { stdio: 'inherit' }).status ?? 1);
