// Bundles the Node benchmark driver (src/bench/driver/dawn.ts) into one file,
// .bench-node/dawn.mjs: WGSL imported with `?raw` is inlined as text, `webgpu`
// (Dawn's native addon) stays an import. The bundle runs where Node and the
// `webgpu` package are, nothing else (e.g. on a GPU machine with no npm).
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const rawText = {
  name: 'raw-text',
  setup(b) {
    b.onResolve({ filter: /\?raw$/ }, (a) => ({ path: resolve(a.resolveDir, a.path.slice(0, -'?raw'.length)), namespace: 'raw-text' }));
    b.onLoad({ filter: /.*/, namespace: 'raw-text' }, (a) => ({ contents: readFileSync(a.path, 'utf8'), loader: 'text' }));
  },
};

await build({
  entryPoints: [join(root, 'src/bench/driver/dawn.ts')],
  outfile: join(root, '.bench-node/dawn.mjs'),
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  external: ['webgpu'],
  // TensorFlow.js's Node entry calls require(); give the ES module one.
  banner: { js: "import { createRequire as __pipelabRequire } from 'node:module'; const require = __pipelabRequire(import.meta.url);" },
  plugins: [rawText],
  logLevel: 'warning',
});
