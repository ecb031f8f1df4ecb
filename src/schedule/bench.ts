/**
 * Simulator benchmark (not a test): `node --import tsx src/schedule/bench.ts`.
 * Interleaved 1F1B with v = 4 at growing sizes, up to the target of 64 ranks ×
 * 512 micro-batches (262,144 actions); prints the best of a few runs of
 * generate, validate and simulate (which validates too) and the time per action.
 */
import { generateSchedule } from './registry.ts';
import { simulate } from './simulate.ts';
import { validateSchedule } from './validate.ts';

function best(runs: number, f: () => void): number {
  let min = Infinity;
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    f();
    min = Math.min(min, performance.now() - t0);
  }
  return min;
}

const sizes: [number, number][] = [
  [8, 64],
  [16, 128],
  [32, 256],
  [64, 512],
  [128, 1024],
];
const v = 4;
console.log('interleaved-1f1b, v = 4; best of 5 runs (ms)');
console.log('ranks  microbatches  actions    generate  validate  simulate  ns/action (simulate)');
for (const [p, m] of sizes) {
  const s = generateSchedule('interleaved-1f1b', p, m, v);
  const actions = s.order.reduce((n, l) => n + l.length, 0);
  const runs = actions > 500_000 ? 3 : 5;
  const gen = best(runs, () => generateSchedule('interleaved-1f1b', p, m, v));
  const val = best(runs, () => validateSchedule(s));
  const sim = best(runs, () => simulate(s));
  console.log(
    [
      String(p).padEnd(5),
      String(m).padEnd(12),
      String(actions).padEnd(9),
      gen.toFixed(1).padStart(8),
      val.toFixed(1).padStart(8),
      sim.toFixed(1).padStart(8),
      ((sim * 1e6) / actions).toFixed(0).padStart(10),
    ].join('  '),
  );
}
