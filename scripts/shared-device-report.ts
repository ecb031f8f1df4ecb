/**
 * Writes bench/SHARED-DEVICE.md from the recorded schedules bench (src/bench/shared-device-report.ts).
 *
 *   node --import tsx scripts/shared-device-report.ts [results.json] [out.md]
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { sharedDeviceReport, type RecordedBench } from '../src/bench/shared-device-report.ts';

const input = process.argv[2] ?? 'bench/results.json';
const output = process.argv[3] ?? 'bench/SHARED-DEVICE.md';
const { markdown, summary } = sharedDeviceReport(JSON.parse(readFileSync(input, 'utf8')) as RecordedBench, input);
writeFileSync(output, markdown);
process.stdout.write(`${summary}; wrote ${output}\n`);
