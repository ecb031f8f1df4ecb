/** bench/SHARED-DEVICE.md is what the report makes of the committed bench/results.json, so it is never stale against it. */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { sharedDeviceReport, type RecordedBench } from './shared-device-report.ts';

const ROOT = new URL('../../', import.meta.url);
const results = JSON.parse(readFileSync(new URL('bench/results.json', ROOT), 'utf8')) as RecordedBench;

describe('bench/SHARED-DEVICE.md', () => {
  it('is the report of bench/results.json (regenerate with node --import tsx scripts/shared-device-report.ts)', () => {
    const { markdown } = sharedDeviceReport(results, 'bench/results.json');
    expect(readFileSync(new URL('bench/SHARED-DEVICE.md', ROOT), 'utf8')).toBe(markdown);
    // One table row per recorded schedules row, dated as the recorded run.
    expect(markdown.split('\n').filter((l) => /^\| [a-z0-9-]+( \(v=\d+\))? \| \d+ \| \d+ \|/.test(l))).toHaveLength(results.results.schedules?.rows.length ?? -1);
    expect(markdown).toContain(`of ${results.date}`);
  });

  it('refuses a recorded run without schedules rows, naming it', () => {
    expect(() => sharedDeviceReport({ date: 'x', results: {} }, 'old.json')).toThrow('old.json: no schedules rows');
  });
});
