/**
 * Two builds of the page, the same bench cases, alternated in one session of this machine (A B, B A, ...): the
 * median step (the bench row's mesh.stepMs, or its makespan) of each. Made for the cost of ZeRO's real release
 * (issue 52: this build against the one before it); any two builds with the bench page work.
 *
 *   npx vite build --outDir dist-a   (at one commit)   ...   npx vite build --outDir dist-b   (at another)
 *   node --import tsx scripts/bench-ab.ts dist-a dist-b [reps = 5]
 */
import { openBenchPage } from '../src/bench/driver/bench-browser.ts';
import { serveDist } from '../src/bench/driver/static-server.ts';
import type { ScheduleBenchCase, ScheduleBenchRow } from '../src/bench/schedules-suite.ts';

const [distA, distB, repsArg] = process.argv.slice(2);
if (!distA || !distB) throw new Error('usage: node --import tsx scripts/bench-ab.ts DIST_A DIST_B [REPS]');
const reps = Number(repsArg ?? 5);
if (!Number.isInteger(reps) || reps < 1) throw new Error(`REPS = ${repsArg}: must be a whole number ≥ 1`);

/** ZeRO 1–3 (and 3 re-gathered per action) at dp 2 × pp 2 on the char-MLP, 6 steps a run. */
const base = { schedule: '1f1b' as const, ranks: 2, dp: 2, microbatches: 4, layers: 4 };
const CASES: ScheduleBenchCase[] = [{ ...base, zero: 1 }, { ...base, zero: 2 }, { ...base, zero: 3 }, { ...base, zero: 3, reshard: 'microbatch' }];
const STEPS = 6;

const served = [await serveDist(distA), await serveDist(distB)];
const pages = [await openBenchPage(served[0].url, 'swiftshader', 'A'), await openBenchPage(served[1].url, 'swiftshader', 'B')];
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const stepOf = (r: ScheduleBenchRow) => r.mesh?.stepMs ?? r.makespanMeasuredMs;
try {
  for (const c of CASES) {
    const t: [number[], number[]] = [[], []];
    for (let i = 0; i < reps; i++) {
      for (const k of i % 2 ? [1, 0] : [0, 1]) t[k].push(stepOf(await pages[k].page.evaluate(({ c, steps }) => window.pipelabBench.schedule(c, steps), { c, steps: STEPS })));
    }
    const [a, b] = t.map(median);
    console.log(`ZeRO-${c.zero}${c.reshard === 'microbatch' ? ' per action' : ''}: median step ${a.toFixed(1)} ms (A), ${b.toFixed(1)} ms (B), B/A − 1 = ${(100 * (b / a - 1)).toFixed(1)}%; A ${t[0].map((x) => x.toFixed(0)).join(', ')}; B ${t[1].map((x) => x.toFixed(0)).join(', ')}`);
  }
} finally {
  for (const p of pages) await p.close();
  for (const s of served) await s.close();
}
