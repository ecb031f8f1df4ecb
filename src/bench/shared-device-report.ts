/**
 * bench/SHARED-DEVICE.md, the shared-device prediction against the recorded
 * schedules bench (bench/results.json, written by `npm run bench`): for every
 * row, today's prediction error (mean op times on independent devices) beside
 * the shared-device one (solo times calibrated from the same means, one device
 * with k lanes). k is fitted on the m = p rows; the other rows are held out.
 * scripts/shared-device-report.ts writes it; a test keeps the committed file
 * equal to what this makes of the committed results.json.
 */
import type { RecordedRun } from '../plan/prediction-check.ts';
import { withSharedDevicePrediction } from './shared-device-rows.ts';

/** The part of bench/results.json the report reads. */
export interface RecordedBench {
  date: string;
  machine?: { cpus: number; cpuModel: string };
  adapter?: Record<string, string>;
  results: { schedules?: { rows: RecordedRun[] } };
}

/** The report's Markdown and its one-line summary; `input` is the name it gives the recorded run. */
export function sharedDeviceReport(report: RecordedBench, input: string): { markdown: string; summary: string } {
  const rows = report.results.schedules?.rows;
  if (!rows || rows.length === 0) throw new Error(`${input}: no schedules rows`);
  const fitRows = rows.filter((r) => r.m === r.p);
  // As `npm run bench` adds them (src/bench/shared-device-rows.ts): k fitted on the m = p rows, per model.
  const predicted = withSharedDevicePrediction(rows).map((r) => ({ run: r, ...r.prediction }));
  const k = [...new Set(predicted.map((r) => r.lanes))].join(', ');
  const pct = (x: number) => `${(100 * x).toFixed(1)}%`;
  const worst = (xs: number[]) => Math.max(...xs.map(Math.abs));
  const held = predicted.filter((r) => r.run.m !== r.run.p);
  const lines = [
    '# Shared-device prediction vs measured makespan',
    '',
    `Recorded run: ${input} of ${report.date}${report.machine ? ` (${report.machine.cpus} × ${report.machine.cpuModel})` : ''}${report.adapter ? `, adapter ${Object.values(report.adapter).filter(Boolean).join(' / ')}` : ''}.`,
    `Written by \`node --import tsx scripts/shared-device-report.ts\`; no new measurement: it re-reads the bench's per-row mean op times.`,
    '',
    '- today: the simulator fed with the run\'s own mean per-stage op times, each rank on its own device (bench/RESULTS.md\'s "simulated").',
    `- this machine: solo op times calibrated from the same means (src/plan/calibrate.ts) so that one device with k = ${k} lanes, shared by the ranks, reproduces them; the makespan of that play.`,
    `- k fitted on the ${fitRows.length} rows with m = p (minimising their worst error over k = 1.0, 1.1, …, 4.0); the other ${held.length} rows are held out.`,
    `- p independent GPUs: the calibrated solo times with a device per rank (the ideal the closed forms describe).`,
    '',
    `Worst |error|: today ${pct(worst(predicted.map((r) => r.todayError)))}, this machine ${pct(worst(predicted.map((r) => r.sharedError)))} (held-out rows ${pct(worst(held.map((r) => r.sharedError)))}).`,
    '',
    '| schedule | p | m | measured (ms) | today (ms) | today error | this machine (ms) | this machine error | p independent GPUs (ms) | fit or held out |',
    '|' + ' --- |'.repeat(10),
    ...predicted.map(
      (r) =>
        `| ${r.run.schedule}${r.run.v > 1 ? ` (v=${r.run.v})` : ''} | ${r.run.p} | ${r.run.m} | ${r.run.makespanMeasuredMs.toFixed(1)} | ${r.todayMs.toFixed(1)} | ${pct(r.todayError)} | ${r.sharedMs.toFixed(1)} | ${pct(r.sharedError)} | ${r.independentMs.toFixed(1)} | ${r.run.m === r.run.p ? 'fit' : 'held out'} |`,
    ),
    '',
  ];
  const summary = `k = ${k}; worst error today ${pct(worst(predicted.map((r) => r.todayError)))}, shared ${pct(worst(predicted.map((r) => r.sharedError)))}`;
  return { markdown: lines.join('\n'), summary };
}
