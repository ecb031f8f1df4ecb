/** The benchmark report as Markdown tables: every figure beside its peer, as ratios. */
import type { ScheduleBenchRow } from '../../src/bench/schedules-suite.ts';
import type { SuiteResult } from './suites.ts';

interface Report {
  date: string;
  quick: boolean;
  seconds: number;
  machine: { cpus: number; cpuModel: string; memoryGiB: number; platform: string; node: string };
  browser: string;
  adapter: Record<string, string>;
  packages: Record<string, string>;
  results: Partial<Record<string, SuiteResult>>;
}

const pct = (x: number | null) => (x === null ? 'n/a' : `${(100 * x).toFixed(1)}%`);
const f = (x: number, d = 1) => x.toFixed(d);

function schedulesTable(rows: ScheduleBenchRow[]): string {
  const head = '| schedule | p | m | makespan measured (ms) | simulated (ms) | sim. error | bubble measured | simulated | closed form | measured − closed | peak stash, stage 0 (KiB) | comm per crossing (ms) | comm / compute | samples/s |';
  const sep = '|' + ' --- |'.repeat(14);
  const lines = rows.map((r) =>
    `| ${r.schedule}${r.v > 1 ? ` (v=${r.v})` : ''} | ${r.p} | ${r.m} | ${f(r.makespanMeasuredMs)} | ${f(r.makespanSimulatedMs)} | ${pct(r.simulationError)} | ${pct(r.bubbleMeasured)} | ${pct(r.bubbleSimulated)} | ${pct(r.bubbleClosedForm)} | ${r.bubbleClosedForm === null ? 'n/a' : `${f(100 * (r.bubbleMeasured - r.bubbleClosedForm))} pp`} | ${f(r.peakStashBytes[0] / 1024, 0)} | ${f(r.commMsPerCrossing, 2)} | ${pct(r.commShare)} | ${f(r.samplesPerSecond, 0)} |`,
  );
  return [head, sep, ...lines].join('\n');
}

const RENDER: Record<string, (rows: never[]) => string> = {
  schedules: schedulesTable as (rows: never[]) => string,
};

export function renderMarkdown(r: Report): string {
  const out: string[] = [];
  out.push(`# PipeLab benchmark results${r.quick ? ' (quick)' : ''}`);
  out.push('');
  out.push(`Measured ${r.date} by \`npm run bench${r.quick ? ' -- --quick' : ''}\` in ${r.seconds} s.`);
  out.push('');
  out.push(`- Machine: ${r.machine.cpus} × ${r.machine.cpuModel}, ${r.machine.memoryGiB} GiB, ${r.machine.platform}, Node ${r.machine.node}`);
  out.push(`- Browser: headless Chromium ${r.browser}`);
  out.push(`- WebGPU adapter: ${[r.adapter.vendor, r.adapter.architecture, r.adapter.description].filter(Boolean).join(' / ')}`);
  out.push(`- Packages: ${Object.entries(r.packages).map(([k, v]) => `${k} ${v}`).join(', ')}`);
  out.push('');
  out.push('These machines are shared and noisy: read the ratios, not the lone times.');
  for (const [name, res] of Object.entries(r.results)) {
    if (!res) continue;
    out.push('');
    out.push(`## ${name}`);
    out.push('');
    for (const n of res.notes ?? []) out.push(`- ${n}`);
    if (res.notes?.length) out.push('');
    out.push(RENDER[name] ? RENDER[name](res.rows as never[]) : '```json\n' + JSON.stringify(res.rows, null, 2) + '\n```');
  }
  out.push('');
  return out.join('\n');
}
