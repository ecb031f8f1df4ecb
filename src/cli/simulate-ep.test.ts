/** `pipelab simulate --ep ...`: expert parallelism's all-to-alls priced, overlapped, drawn and traced; bad input refused by flag, value and rule. */
import { describe, expect, it } from 'vitest';
import { run } from './cli-test-support.ts';

const base = ['simulate', '--schedule', '1f1b', '--ranks', '4', '--microbatches', '8', '--costs', 'F=2,B=4', '--dp', '8'];
// Each all-to-all inside a node: α 0.5 + 400 · 7/8 bytes at 700 a unit = 1; two in F and two in B.
const ep = ['--ep', '8', '--ep-bytes', '400', '--ep-latency', '0.5', '--ep-bandwidth', '700'];

describe('pipelab simulate --ep', () => {
  it('adds each MoE layer’s dispatch and combine to F and to B: (m + p − 1)·(F + τF + B + τB), the closed form printed beside it', () => {
    const r = run(...base, ...ep);
    expect(r.code, r.err).toBe(0);
    expect(r.out).toMatch(/^makespan {3}110\b/m);
    expect(r.out).toContain('ep         8 workers share each stage\'s experts (inside a node), 1 MoE layer per stage: 2 all-to-alls in F and 2 in B (or I), each 1; played after the compute; closed form of the compute 110 = (m + p − 1)·(F + τF + B + τB) = 11·(2 + 2 + 4 + 2)');
    // Two MoE layers a stage: τ = 4 each way.
    expect(run(...base, ...ep, '--ep-layers', '2').out).toMatch(/^makespan {3}154\b/m);
    // Half the group on another node: α 1 + max(400 · 3/8 / 700, 400 · 4/8 / 100) = 3 each.
    const split = run(...base, ...ep, '--ep-per-node', '4', '--ep-latency-inter', '1', '--ep-bandwidth-inter', '100');
    expect(split.out).toMatch(/^makespan {3}198\b/m);
  });

  it('--ep-overlap: a forward and backward pair costs max(compute, all-to-all) (DualPipe’s), hidden here', () => {
    const r = run(...base, ...ep, '--ep-overlap');
    expect(r.out).toMatch(/^makespan {3}66\b/m);
    expect(r.out).toContain('closed form of the compute 66 = (m + p − 1)·max(F + B, τF + τB) = 11·max(2 + 4, 2 + 2)');
    // 2000 bytes: each 0.5 + 1750/700 = 3, τF + τB = 12 > 6.
    expect(run(...base, ...ep.map((x) => (x === '400' ? '2000' : x)), '--ep-overlap').out).toMatch(/^makespan {3}132\b/m);
  });

  it('draws ep-all-to-all collectives on every worker, in the JSON and the trace', () => {
    const r = run(...base, ...ep, '--json', '--trace', 't.json');
    expect(r.code, r.err).toBe(0);
    const j = JSON.parse(r.out);
    expect(j.makespan).toBe(110);
    // 8 replicas × 4 ranks × 8 micro-batches × (2 in F + 2 in B).
    expect(j.expertParallel).toMatchObject({ ep: 8, perNode: 8, layers: 1, bytes: 400, each: 1, overlap: false, allToAlls: 8 * 4 * 8 * 4, closedForm: { step: 110 } });
    const trace = JSON.parse(r.files.get('t.json') as string) as { traceEvents: { name: string }[] };
    expect(trace.traceEvents.filter((e) => e.name.startsWith('ep-all-to-all')).length).toBe(8 * 4 * 8 * 4);
  });

  it('refuses an ep not dividing dp · tp, detail flags without --ep, a group member count above ep, by flag, value and rule', () => {
    const cases: [string[], string][] = [
      [[...base, '--ep', '3'], '--ep = "3": must divide dp · tp = 8 · 1 = 8'],
      [[...base.slice(0, -2), '--ep', '2'], '--ep = "2": must divide dp · tp = 1 · 1 = 1'],
      [[...base, '--ep-bytes', '400'], '--ep-bytes = "400": prices expert parallelism\'s all-to-alls: it needs --ep 2 or more'],
      [[...base, '--ep-overlap'], '--ep-overlap = true: prices expert parallelism\'s all-to-alls'],
      [[...base, ...ep, '--ep-per-node', '9'], '--ep-per-node = "9": must be an integer between 1 and 8'],
      [[...base, '--ep', '0'], '--ep = "0": must be an integer between 1 and 4096'],
      [[...base, ...ep.slice(0, -2), '--ep-bandwidth', '0'], '--ep-bandwidth = "0": must be a number at least'],
    ];
    for (const [args, message] of cases) {
      const r = run(...args);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.err, args.join(' ')).toContain(message);
    }
  });
});
