/** `pipelab simulate --dp …`: the data-parallel step on the command line, and its bad input. */
import { describe, expect, it } from 'vitest';
import { run } from './cli-test-support.ts';

describe('pipelab simulate --dp', () => {
  it('prints the step, the exposed all-reduce and its share; the ring formula by hand', () => {
    // 1F1B, p = 4, m = 8: T = 3(m + p − 1) = 33. dp = 2, 100 bytes, α = 1, β = 10: A = 2·(1 + 50/10) = 12.
    const r = run('simulate', '--schedule', '1f1b', '--ranks', '4', '--microbatches', '8', '--dp', '2', '--grad-bytes', '100', '--allreduce-latency', '1', '--allreduce-bandwidth', '10', '--json');
    expect(r.code).toBe(0);
    const j = JSON.parse(r.out);
    expect(j.makespan).toBe(45);
    expect(j.dataParallel.computeMakespan).toBe(33);
    expect(j.dataParallel.allReduceTime).toEqual([12, 12, 12, 12]);
    expect(j.dataParallel.exposedAllReduce).toBe(12);
    expect(j.dataParallel.allReduceShare).toBeCloseTo(12 / 45, 12);
    expect(j.ranks).toHaveLength(4);
    const t = run('simulate', '--schedule', '1f1b', '--ranks', '4', '--microbatches', '8', '--dp', '2', '--grad-bytes', '100', '--allreduce-latency', '1', '--allreduce-bandwidth', '10');
    expect(t.out).toContain('makespan   45 (the step: compute 33 + exposed all-reduce 12)');
    expect(t.out).toContain('closed form step 45 = T + A (A = 12 per stage)');
    expect(t.out).toContain('dp = 2 replicas × 4 ranks = 8 workers');
  });

  it('--no-overlap serializes a rank’s stages after the last compute: interleaved, v = 2, T + 2A', () => {
    const j = JSON.parse(
      run('simulate', '--schedule', 'interleaved-1f1b', '--ranks', '2', '--microbatches', '4', '--virtual', '2', '--dp', '3', '--grad-bytes', '30', '--allreduce-latency', '0.5', '--allreduce-bandwidth', '10', '--no-overlap', '--json').out,
    );
    // T = 3(v·m + p − 1) = 27; A = 4 · (0.5 + 10/10) = 6.
    expect(j.dataParallel.computeMakespan).toBe(27);
    expect(j.makespan).toBe(27 + 12);
    expect(j.dataParallel.overlap).toBe(false);
  });

  it('DualPipe: the sum over its two model copies after the step, on the pipeline link, the owned 1/dp with ZeRO (by hand)', () => {
    // dp 2, 1000 bytes a stage, ZeRO-1: a replica sums its 500-byte chunk with its partner copy's, a ring of 2 over the
    // pipeline link at 500 bytes a unit: 2 · (250 / 500) = 1 per model stage; each rank holds 2 model stages: + 2.
    const args = ['simulate', '--schedule', 'dualpipe', '--ranks', '4', '--microbatches', '8', '--dp', '2', '--grad-bytes', '1000', '--bandwidth', '500', '--allreduce-bandwidth', '1000', '--zero', '1'];
    const j = JSON.parse(run(...args, '--json').out);
    expect(j.copySum.copies).toBe(2);
    expect(j.copySum.time).toEqual([1, 1, 1, 1, 1, 1, 1, 1]);
    expect(j.makespan).toBeCloseTo(j.copySum.before + 2, 12);
    const t = run(...args).out;
    expect(t).toContain(`makespan   ${j.makespan} (the step: compute 25 + exposed all-reduce 1 + copies' sum 2)`);
    expect(t).toContain("copies     each model stage's gradients summed over its 2 copies after the step (a ring over the pipeline link between the ranks holding them, r ↔ 3 − r; ZeRO-1: the owned 1/2): 1 per model stage; adds 2");
    // One pipeline, a link latency of 0.25 and no bytes: 2 exchanges of 0.25 a model stage.
    expect(run('simulate', '--schedule', 'dualpipe', '--ranks', '4', '--microbatches', '8', '--latency', '0.25').out).toContain("(the step: compute 26.75 + copies' sum 1)");
  });

  it('--step-end: each rank reads its losses and updates after its last action, collectives and copies’ sum (by hand)', () => {
    // 1F1B, 2 ranks × 2 micro-batches: rank 0 free at 9, rank 1 at 7; ends 1 and 3: both at 10.
    const t = run('simulate', '--schedule', '1f1b', '--ranks', '2', '--microbatches', '2', '--step-end', '1,3').out;
    expect(t).toContain('makespan   9\n');
    expect(t).toContain("step end   each rank's losses read and update after its last action (not drawn): 1, 3 per rank; the step on the workers' clocks 10 (+1 after the makespan)");
    // DualPipe (the copies' sum of the case above): every rank free when the step ends, 0.5 more.
    const args = ['simulate', '--schedule', 'dualpipe', '--ranks', '4', '--microbatches', '8', '--dp', '2', '--grad-bytes', '1000', '--bandwidth', '500', '--allreduce-bandwidth', '1000', '--zero', '1', '--step-end', '0.5'];
    const j = JSON.parse(run(...args, '--json').out);
    expect(j.stepEnd.time).toEqual([0.5, 0.5, 0.5, 0.5]);
    expect(j.stepEnd.step).toBeCloseTo(j.makespan + 0.5, 12);
    expect(run(...args).out).toContain("after its last action, collectives and copies' sum (not drawn): 0.5; the step on the workers' clocks 28.5 (+0.5 after the makespan)");
    for (const [raw, rule] of [['1,2,3', 'gives 3 numbers; must be a time ≥ 0 for every rank, or a comma-separated list of 2'], ['x', 'must be a time ≥ 0 for every rank']]) {
      const r = run('simulate', '--schedule', '1f1b', '--ranks', '2', '--microbatches', '2', '--step-end', raw);
      expect(r.code).toBe(2);
      expect(r.err).toContain(`--step-end = "${raw}": ${rule}`);
    }
  });

  it('takes one gradient size per stage', () => {
    const j = JSON.parse(run('simulate', '--schedule', 'gpipe', '--ranks', '2', '--microbatches', '2', '--dp', '2', '--grad-bytes', '0,40', '--allreduce-bandwidth', '10', '--json').out);
    expect(j.dataParallel.allReduceTime).toEqual([0, 4]);
  });

  it('refuses bad values by flag, value and rule', () => {
    const cases: [string[], string][] = [
      [['--dp', '0'], '--dp = "0": must be an integer between 1 and 4096'],
      [['--dp', '2.5'], '--dp = "2.5": must be an integer'],
      [['--grad-bytes', '-5'], '--grad-bytes = "-5": must be a number of bytes ≥ 0'],
      [['--grad-bytes', '1,2'], '--grad-bytes = "1,2": gives 2 numbers; must be a number of bytes ≥ 0 for every stage, or a comma-separated list of 4'],
      [['--allreduce-latency', '-1'], '--allreduce-latency = "-1": must be a number at least 0'],
      [['--allreduce-bandwidth', '0'], '--allreduce-bandwidth = "0": must be a number at least'],
      [['--no-overlap=yes'], '--no-overlap = "yes": takes no value'],
    ];
    for (const [flags, message] of cases) {
      const r = run('simulate', ...flags);
      expect(r.code, flags.join(' ')).toBe(2);
      expect(r.err).toContain(message);
    }
  });
});
