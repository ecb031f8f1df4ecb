/** Compare's table as rows and as CSV: simulated figures at once, measured ones from the last step (a stream's per step), text quoted. */
import { describe, expect, it } from 'vitest';
import { defaultRunConfig } from '../../config/run-config.ts';
import type { Interval, Timeline } from '../../schedule/timeline.ts';
import { simulateAll } from './compare.ts';
import { compareCsv, compareRow } from './compare-table.ts';
import type { CompareMeasurement } from '../store/store.ts';

const iv = (rank: number, op: Interval['op'], start: number, end: number): Interval => ({ rank, stage: rank, op, mb: 0, start, end });

describe('the Compare table as rows and CSV', () => {
  const base = { ...defaultRunConfig(), ranks: 2, microbatches: 2, steps: 50 };
  const [one, bw] = simulateAll(base, ['1f1b', 'pipedream-2bw'], 1, 3);

  it('fills the simulated columns before anything is measured, and the measured ones from the last step', () => {
    const before = compareRow(one, undefined);
    // 1F1B, p 2, m 2, unit costs F 1, B 2: makespan 3(m + p − 1) = 9 a rank busy 6 of: bubble 1/3; 2 micro-batches held on rank 0.
    expect(before).toEqual({ name: '1f1b', virtual: 1, status: 'not measured', bubbleSimulated: expect.closeTo(1 / 3, 12), bubbleClosedForm: expect.closeTo(1 / 3, 12), peakMicrobatches: 2 });
    // Two ranks, each busy 6 of a 10 ms step: bubble 0.4; then a 2 ms all-reduce after the compute.
    const timeline: Timeline = {
      source: 'measured', ranks: 2, stages: 2, microbatches: 2, unit: 'ms',
      intervals: [iv(0, 'F', 0, 2), iv(0, 'B', 6, 10), iv(1, 'F', 2, 4), iv(1, 'B', 4, 8), { ...iv(0, 'collective', 10, 12), coll: 'reduce-scatter' }],
    };
    const m: CompareMeasurement = {
      status: 'done', timeline, makespanMs: 10, stepMs: 12, bubble: 0.4, samplesPerSecond: 123.5, finalLoss: 0.75, error: null,
      gap: { steps: [{ id: 'closed', label: '', bubble: 1 / 3, adds: 0 }, { id: 'stages', label: '', bubble: 0.35, adds: 0.35 - 1 / 3 }, { id: 'device', label: '', bubble: 0.4, adds: 0.05 }], stageMs: [6, 6], commMsPerCrossing: 0 },
    };
    const row = compareRow(one, m);
    expect(row).toMatchObject({ status: 'done', bubbleMeasured: 0.4, makespanMs: 10, stepWithCollectivesMs: 12, samplesPerSecond: 123.5, finalLoss: 0.75 });
    expect(row.gap?.map((g) => g.id)).toEqual(['stages', 'device']);
    // A stream's makespan is its window's ÷ its steps (3 measured).
    expect(compareRow(bw, { ...m, gap: null }).makespanMs).toBeCloseTo(10 / 3, 12);

    const csv = compareCsv([row, compareRow(bw, { ...m, status: 'error', timeline: null, error: 'worker 1: lost, "badly"' })], new Map([[one.name, one.config], [bw.name, bw.config]])).split('\n');
    expect(csv[0]).toBe(
      'schedule,v,status,bubble_simulated,bubble_closed_form,peak_activations_microbatches,bubble_measured,makespan_ms,step_with_collectives_ms,gap_stages_pp,gap_comm_pp,gap_blocks_pp,gap_device_pp,gap_allreduce_pp,samples_per_second,final_loss,problem,dataset,model,dp,tp,ranks,microbatches,batch_size,steps,seed',
    );
    const cells = csv[1].split(',');
    expect(cells.slice(0, 3)).toEqual(['1f1b', '1', 'done']);
    expect(Number(cells[6])).toBe(0.4);
    expect(Number(cells[9])).toBeCloseTo(100 * (0.35 - 1 / 3), 9);
    expect(cells[10]).toBe('');
    expect(Number(cells[12])).toBeCloseTo(5, 9);
    expect(cells.slice(17)).toEqual(['spiral', 'mlp', '1', '1', '2', '2', '64', '50', '1']);
    // The stream's row: measured columns empty, its failure quoted, its config of the 3 measured steps.
    expect(csv[2]).toContain(',error,');
    expect(csv[2]).toContain(',"worker 1: lost, ""badly""",');
    expect(csv[2].endsWith(',3,1')).toBe(true);
    expect(csv[3]).toBe('');
  });
});
