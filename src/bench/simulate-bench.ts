/**
 * Simulator benchmark (not a test): `node --import tsx src/bench/simulate-bench.ts`.
 * Interleaved 1F1B with v = 4 at growing sizes, up to the target of 64 ranks ×
 * 512 micro-batches (262,144 actions). For generate, validate and simulate
 * (which validates too, in the same play) it prints the best of a few runs, as
 * wall-clock ms and as this process's CPU ms (the latter is steadier on a busy
 * machine), and the simulate time per action. The work is O(actions): each
 * rank resumes only when the one input it waits for is produced.
 */
import { generateSchedule } from '../schedule/registry.ts';
import { simulate } from '../schedule/simulate.ts';
import { validateSchedule } from '../schedule/validate.ts';

interface Timing {
  wall: number;
  cpu: number;
}

function best(runs: number, f: () => void): Timing {
  let wall = Infinity;
  let cpu = Infinity;
  for (let i = 0; i < runs; i++) {
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    f();
    const t = performance.now() - t0;
    const c = process.cpuUsage(c0);
    wall = Math.min(wall, t);
    cpu = Math.min(cpu, (c.user + c.system) / 1000);
  }
  return { wall, cpu };
}

const sizes: [number, number][] = [
  [8, 64],
  [16, 128],
  [32, 256],
  [64, 512],
  [128, 1024],
];
const v = 4;
const ms = (t: Timing) => `${t.wall.toFixed(1).padStart(7)} ${t.cpu.toFixed(1).padStart(7)}`;
console.log(`interleaved-1f1b, v = ${v}; best of 5 runs (3 above 500k actions); wall ms, cpu ms`);
console.log('ranks  microbatches  actions     generate (wall cpu)  validate (wall cpu)  simulate (wall cpu)  ns/action');
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
      `${ms(gen)}     `,
      `${ms(val)}     `,
      `${ms(sim)}     `,
      ((sim.wall * 1e6) / actions).toFixed(0).padStart(6),
    ].join('  '),
  );
}
