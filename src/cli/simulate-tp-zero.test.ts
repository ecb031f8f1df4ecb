/** `pipelab simulate --tp … --zero …`: tensor parallelism and ZeRO on the command line, and their bad input. */
import { describe, expect, it } from 'vitest';
import type { ChromeTrace } from '../schedule/index.ts';
import { run } from './cli-test-support.ts';

const P2M4 = ['simulate', '--schedule', '1f1b', '--ranks', '2', '--microbatches', '4'];
const TP = ['--tp', '2', '--tp-layers', '1', '--tp-bytes', '1000', '--tp-latency', '0.1', '--tp-bandwidth', '10000'];
const DP = ['--dp', '2', '--grad-bytes', '100', '--allreduce-latency', '1', '--allreduce-bandwidth', '10'];

function trace(r: ReturnType<typeof run>, file: string): ChromeTrace {
  return JSON.parse(String(r.files.get(file))) as ChromeTrace;
}

describe('pipelab simulate --tp', () => {
  // By hand: one tp all-reduce takes α + (t − 1)·bytes/β = 0.1 + 1·1000/10000 = 0.2; a GPT block runs 2 in F and 2 in B,
  // so F = 1 + 0.4 = 1.4 and B = 2 + 0.4 = 2.4. 1F1B on equal stages: (m + p − 1)(F + B) = 5 · 3.8 = 19; each rank runs
  // m F and m B, 4 · 3.8 = 15.2 busy, of it m·(τF + τB) = 4 · 0.8 = 3.2 in tp collectives, 3.2 / 19 of the step.
  it('adds each action\'s tp all-reduces to its time: 1F1B p 2 m 4 by hand', () => {
    const r = run(...P2M4, '--costs', 'F=1,B=2', ...TP, '--json');
    expect(r.code, r.err).toBe(0);
    const j = JSON.parse(r.out);
    expect(j.makespan).toBeCloseTo(19, 12);
    expect(j.ranks).toHaveLength(2);
    for (const rank of j.ranks) {
      expect(rank.busy).toBeCloseTo(15.2, 12);
      expect(rank.idle).toBeCloseTo(3.8, 12);
    }
    const tp = j.tensorParallel;
    expect(tp.t).toBe(2);
    expect(tp.opTime).toHaveLength(2);
    for (const o of tp.opTime) {
      expect(o.F).toBeCloseTo(0.4, 12);
      expect(o.B).toBeCloseTo(0.4, 12);
      expect(o.I).toBeCloseTo(0.4, 12);
      expect(o.W).toBe(0);
    }
    expect(tp.perRank).toHaveLength(2);
    for (const x of tp.perRank) expect(x).toBeCloseTo(3.2, 12);
    expect(tp.share).toBeCloseTo(3.2 / 19, 12);
    expect(tp).toMatchObject({ layers: 1, bytes: 1000, latency: 0.1, bandwidth: 10000 });
    expect(tp.collectiveTime).toBeCloseTo(0.2, 12);
    expect(tp.closedForm.step).toBeCloseTo(19, 12);
    expect(tp.closedForm.tpPerRank).toBeCloseTo(3.2, 12);
    expect(tp.closedForm.share).toBeCloseTo(3.2 / 19, 12);
    expect(j.costs.perTpWorker).toBe(true);
    expect(j.dataParallel).toBeUndefined();
  });

  it('prints the tp line, the closed form and each rank\'s time in tp collectives', () => {
    const r = run(...P2M4, '--costs', 'F=1,B=2', ...TP);
    expect(r.code, r.err).toBe(0);
    expect(r.out).toContain('makespan   19\n');
    expect(r.out).toContain(
      'tp         t = 2 workers per stage (2 ranks × 2 = 4 workers), 1 layer per stage, --costs per tp worker; tp collectives 2 per F, 2 per B (or I), each α + (t − 1)·bytes/β = 0.1 + 1·1000/10000 = 0.2; share of the step 16.8%',
    );
    expect(r.out).toContain('tp closed form (m + p − 1)·(F + τF + B + τB) = 5·(1 + 0.4 + 2 + 0.4) = 19 (the step); m·(τF + τB) = 3.2 per rank in tp collectives, 16.8% of it');
    expect(r.out).toMatch(/rank \(each tp worker\) +busy +idle +tp collectives/);
    expect(r.out).toContain('closed form assumes default costs, no tp collectives and free links');
  });

  it('--sequence-parallel: 4 collectives per F and 4 per B, each gather or scatter posting bytes / t, and the LayerNorms\' sum once a step, by hand', () => {
    // t = 2, bytes 1000: a gather or scatter 0.1 + 1·500/10000 = 0.15; F: 4 · 0.15 = 0.6. B: the gather of dy and both
    // LayerNorm outputs 0.1 + 1500/10000 = 0.25, three more at 0.15: 0.7. Each stage's LayerNorm gradients summed at its
    // last B of the step: 0.1 + 4/10000 = 0.1004. 1F1B p 2 m 4: (m + p − 1)(F + τF + B + τB) + p·τG = 5 · 4.3 + 2 · 0.1004
    // (the ranks' last B's are the step's tail); each rank 4 · 1.3 + 0.1004 in tp.
    const r = run(...P2M4, '--costs', 'F=1,B=2', ...TP, '--sequence-parallel', '--json');
    expect(r.code, r.err).toBe(0);
    const j = JSON.parse(r.out);
    expect(j.makespan).toBeCloseTo(21.7008, 12);
    const tp = j.tensorParallel;
    expect(tp.opTime[0].F).toBeCloseTo(0.6, 12);
    expect(tp.opTime[0].B).toBeCloseTo(0.7, 12);
    expect(tp.opTime[0].W).toBe(0);
    for (const x of tp.perRank) expect(x).toBeCloseTo(5.3004, 12);
    expect(tp.sequenceParallel).toBe(true);
    expect(tp.collectiveTime).toBeCloseTo(0.15, 12);
    expect(tp.closedForm.step).toBeCloseTo(21.7008, 12);
    expect(tp.closedForm.share).toBeCloseTo(5.3004 / 21.7008, 12);
    const text = run(...P2M4, '--costs', 'F=1,B=2', ...TP, '--sequence-parallel');
    expect(text.out).toContain('1 layer per stage with sequence parallelism, --costs per tp worker; tp collectives 4 per F, 4 per B (or I), each gather or scatter α + (t − 1)·(bytes/t)/β = 0.1 + 1·500/10000 = 0.15');
    expect(text.out).toContain('tp closed form (m + p − 1)·(F + τF + B + τB) + p·τG = 5·(1 + 0.6 + 2 + 0.7) + 2·0.1004 = 21.7');
    // The trace draws the reduce-scatters beside the all-gathers, and one sum per worker.
    const traced = run(...P2M4, ...TP, '--sequence-parallel', '--trace', 'sp.json');
    const colls = trace(traced, 'sp.json').traceEvents.filter((e) => e.cat === 'collective');
    expect([...new Set(colls.map((e) => String(e.args?.kind)))].sort()).toEqual(['tp-all-gather', 'tp-all-reduce', 'tp-reduce-scatter']);
    expect(colls.filter((e) => e.args?.kind === 'tp-all-reduce')).toHaveLength(4);
    // ZeRO-2 over replicas reads the gradients after every backward: a sum at each, m per stage.
    const z2 = JSON.parse(run(...P2M4, '--costs', 'F=1,B=2', ...TP, '--sequence-parallel', ...DP, '--zero', '2', '--json').out);
    for (const x of z2.tensorParallel.perRank) expect(x).toBeCloseTo(4 * 1.3 + 4 * 0.1004, 12);
  });

  it('--tp-layers L runs 2L all-reduces per F and per B; α + (t − 1)·bytes/β with t = 4', () => {
    // Each: 0.5 + 3·20/10 = 6.5; F = 1 + 4·6.5 = 27, B = 2 + 26 = 28; GPipe p 3 m 2: (m + p − 1)(F + B) = 4 · 55 = 220.
    const j = JSON.parse(run('simulate', '--schedule', 'gpipe', '--ranks', '3', '--microbatches', '2', '--tp', '4', '--tp-layers', '2', '--tp-bytes', '20', '--tp-latency', '0.5', '--tp-bandwidth', '10', '--json').out);
    expect(j.tensorParallel.collectiveTime).toBe(6.5);
    expect(j.tensorParallel.opTime[1]).toEqual({ F: 26, B: 26, I: 26, W: 0 });
    expect(j.makespan).toBe(220);
    expect(j.tensorParallel.closedForm.step).toBe(220);
    expect(j.tensorParallel.perRank).toEqual([104, 104, 104]);
  });

  it('gives no tp closed form off GPipe/1F1B with one stage per rank, or on links that cost', () => {
    const inter = JSON.parse(run('simulate', '--schedule', 'interleaved-1f1b', '--ranks', '2', '--microbatches', '4', '--virtual', '2', ...TP, '--json').out);
    expect(inter.tensorParallel.closedForm).toBeNull();
    expect(inter.tensorParallel.share).toBeGreaterThan(0);
    const slow = JSON.parse(run(...P2M4, ...TP, '--latency', '0.5', '--json').out);
    expect(slow.tensorParallel.closedForm).toBeNull();
  });

  it('writes a trace with dp × ranks × t lanes, each action\'s tp all-reduces on every member\'s lane', () => {
    const r = run(...P2M4, ...TP, '--trace', 'tp.json');
    expect(r.code, r.err).toBe(0);
    const t = trace(r, 'tp.json');
    const names = t.traceEvents.filter((e) => e.ph === 'M' && e.name === 'thread_name' && e.pid === 0).map((e) => e.args?.name);
    expect(names).toEqual(['worker 0 (R0·t0)', 'worker 1 (R0·t1)', 'worker 2 (R1·t0)', 'worker 3 (R1·t1)']);
    for (let lane = 0; lane < 4; lane++) {
      const on = t.traceEvents.filter((e) => e.ph === 'X' && e.tid === lane);
      // 1F1B p 2 m 4: 8 actions per rank, each with 2 tp all-reduces.
      expect(on.filter((e) => e.pid === 0)).toHaveLength(8);
      expect(on.filter((e) => e.cat === 'collective' && e.args?.kind === 'tp-all-reduce')).toHaveLength(16);
    }
    // With dp 2 as well: 2 × 2 × 2 = 8 lanes.
    const d = run(...P2M4, ...TP, ...DP, '--trace', 'dp-tp.json');
    const lanes = new Set(trace(d, 'dp-tp.json').traceEvents.filter((e) => e.ph === 'X' && e.pid === 0).map((e) => e.tid));
    expect([...lanes].sort()).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
  });

  it('keeps the per-rank table per pipeline rank with dp and tp together', () => {
    // dp 2 × tp 2: F = 1.4, B = 2.4 as above; every rank of every replica is busy m(F + B) = 15.2.
    const j = JSON.parse(run(...P2M4, ...TP, ...DP, '--json').out);
    expect(j.ranks).toHaveLength(2);
    for (const rank of j.ranks) expect(rank.busy).toBeCloseTo(15.2, 12);
    expect(j.dataParallel.computeMakespan).toBeCloseTo(19, 12);
    expect(j.tensorParallel.perRank).toHaveLength(2);
  });
});

describe('pipelab simulate --zero', () => {
  // 1F1B p 2 m 4 (F 1, B 2): compute 3(m + p − 1) = 15; rank 0's backwards end at 6, 9, 12, 15. dp 2, 100 bytes, α 1, β 10:
  // one ring exchange 1 + 50/10 = 6, so an all-reduce takes 2 · 6 = 12 and a reduce-scatter or an all-gather 6.
  it('--zero 0 and 1: the all-reduce at the flush, 15 + 12 = 27', () => {
    for (const z of ['0', '1']) {
      const j = JSON.parse(run(...P2M4, ...DP, '--zero', z, '--json').out);
      expect(j.makespan).toBe(27);
      expect(j.dataParallel.zero).toBe(Number(z));
      expect(j.dataParallel.reshard).toBeNull();
    }
  });

  it('--zero 2: a reduce-scatter after every B and the weights gathered at the end; 6 + 4 · 6 + 6 = 36', () => {
    // Rank 0's link: reduce-scatters from 6 (each B ends before the previous one is done), 6 → 30, then the all-gather 30 → 36.
    const r = run(...P2M4, ...DP, '--zero', '2', '--json', '--trace', 'z2.json');
    expect(r.code, r.err).toBe(0);
    const j = JSON.parse(r.out);
    expect(j.makespan).toBe(36);
    expect(j.dataParallel).toMatchObject({ zero: 2, reshard: null, computeMakespan: 15, exposedAllReduce: 21 });
    // Per stage: 4 reduce-scatters and 1 all-gather, 5 · 6.
    expect(j.dataParallel.allReduceTime).toEqual([30, 30]);
    const coll = trace(r, 'z2.json').traceEvents.filter((e) => e.cat === 'collective');
    // Each collective drawn once per replica (dp − 1 = 1 exchange): 2 ranks × 2 replicas × (4 reduce-scatters, 1 all-gather).
    expect(coll.filter((e) => e.args?.kind === 'reduce-scatter')).toHaveLength(16);
    expect(coll.filter((e) => e.args?.kind === 'all-gather')).toHaveLength(4);
    const gather0 = coll.find((e) => e.args?.kind === 'all-gather' && e.args?.rank === 0);
    expect([gather0?.ts, (gather0?.ts ?? 0) + (gather0?.dur ?? 0)]).toEqual([30000, 36000]);
  });

  it('--zero 3: the weights gathered before the first action (6), its reduce-scatters from 12 to 36; --reshard microbatch gathers before every action', () => {
    const r = run(...P2M4, ...DP, '--zero', '3', '--json', '--trace', 'z3.json');
    const j = JSON.parse(r.out);
    // The gather 0 → 6 holds rank 0's F0 to 6, so its B0 ends at 12; 4 reduce-scatters 12 → 36; no gather at the end.
    expect(j.makespan).toBe(36);
    expect(j.dataParallel).toMatchObject({ zero: 3, reshard: 'step' });
    expect(j.dataParallel.allReduceTime).toEqual([30, 30]);
    const coll = trace(r, 'z3.json').traceEvents.filter((e) => e.cat === 'collective');
    expect(coll.filter((e) => e.args?.kind === 'reduce-scatter')).toHaveLength(16);
    expect(coll.filter((e) => e.args?.kind === 'all-gather')).toHaveLength(4);
    expect(coll.filter((e) => e.args?.kind === 'all-gather').every((e) => e.ts === 0 && e.dur === 6000)).toBe(true);

    const a = JSON.parse(run(...P2M4, ...DP, '--zero', '3', '--reshard', 'microbatch', '--json').out);
    expect(a.dataParallel.reshard).toBe('microbatch');
    // Per stage: a gather before each of its 8 actions (F and B) and 4 reduce-scatters, 12 · 6.
    expect(a.dataParallel.allReduceTime).toEqual([72, 72]);
    expect(a.makespan).toBeGreaterThan(36);
  });

  it('says in text that ZeRO-2/3 play their collectives between the actions', () => {
    const t = run(...P2M4, ...DP, '--zero', '2').out;
    expect(t).toContain('makespan   36 (the step: compute 15 + exposed collectives 21)');
    expect(t).toContain('ZeRO-2 collectives between the actions, overlapped with the compute');
    expect(t).toContain('closed form none known for ZeRO-2 (its collectives are played between the actions)');
    expect(t).toContain('zero       ZeRO-2: its collectives are played between the actions, not at the flush');
    const t3 = run(...P2M4, ...DP, '--zero', '3', '--reshard', 'microbatch').out;
    expect(t3).toContain('reshard microbatch: gathered again before every action');
    expect(t3).toContain('closed form assumes default costs, no ZeRO-3 waits and free links');
  });

  it('combines with --tp: the tp collectives lengthen the actions, ZeRO\'s run beside them', () => {
    const j = JSON.parse(run(...P2M4, '--costs', 'F=1,B=2', ...TP, ...DP, '--zero', '2', '--json').out);
    expect(j.dataParallel.zero).toBe(2);
    expect(j.tensorParallel.t).toBe(2);
    expect(j.tensorParallel.closedForm).toBeNull();
    expect(j.makespan).toBeGreaterThan(19);
  });
});

describe('pipelab simulate --tp/--zero refusals', () => {
  it('names the flag, the value and the rule', () => {
    const cases: [string[], string][] = [
      [['--zero', '1'], '--zero = "1": ZeRO-1 shards over the data-parallel replicas: it needs --dp 2 or more (got --dp 1)'],
      [['--zero', '3', '--dp', '1'], '--zero = "3": ZeRO-3 shards over the data-parallel replicas: it needs --dp 2 or more (got --dp 1)'],
      [['--zero', '4', '--dp', '2'], '--zero = "4": must be an integer between 0 and 3'],
      [['--zero', 'two', '--dp', '2'], '--zero = "two": must be an integer between 0 and 3'],
      [['--reshard', 'step'], '--reshard = "step": applies to ZeRO-3 only: it needs --zero 3 (got --zero 0)'],
      [['--dp', '2', '--zero', '2', '--reshard', 'microbatch'], '--reshard = "microbatch": applies to ZeRO-3 only: it needs --zero 3 (got --zero 2)'],
      [['--dp', '2', '--zero', '3', '--reshard', 'action'], '--reshard = "action": must be one of step, microbatch'],
      [['--dp', '2', '--zero', '2', '--lanes', '3'], '--lanes = "3": ZeRO-2\'s collectives are played on independent devices: with --zero 2 it needs at least dp × ranks = 8 lanes (or inf)'],
      [['--tp', '0'], '--tp = "0": must be an integer between 1 and 64'],
      [['--tp', '65'], '--tp = "65": must be an integer between 1 and 64'],
      [['--tp', '1.5'], '--tp = "1.5": must be an integer between 1 and 64'],
      [['--tp-layers', '2'], '--tp-layers = "2": prices tensor parallelism\'s collectives: it needs --tp 2 or more (got --tp 1)'],
      [['--tp', '1', '--tp-bytes', '100'], '--tp-bytes = "100": prices tensor parallelism\'s collectives: it needs --tp 2 or more (got --tp 1)'],
      [['--tp-latency', '0.1'], '--tp-latency = "0.1": prices tensor parallelism\'s collectives: it needs --tp 2 or more (got --tp 1)'],
      [['--tp-bandwidth', 'inf'], '--tp-bandwidth = "inf": prices tensor parallelism\'s collectives: it needs --tp 2 or more (got --tp 1)'],
      [['--sequence-parallel'], '--sequence-parallel = true: prices tensor parallelism\'s collectives: it needs --tp 2 or more (got --tp 1)'],
      [['--tp', '2', '--sequence-parallel=yes'], '--sequence-parallel = "yes": takes no value'],
      [['--tp', '2', '--tp-layers', '0'], '--tp-layers = "0": must be an integer between 1 and 256'],
      [['--tp', '2', '--tp-bytes', '-1'], '--tp-bytes = "-1": must be a number at least 0'],
      [['--tp', '2', '--tp-bytes', 'inf'], '--tp-bytes = "inf": must be a number at least 0'],
      [['--tp', '2', '--tp-latency', 'x'], '--tp-latency = "x": must be a number at least 0'],
      [['--tp', '2', '--tp-bandwidth', '0'], '--tp-bandwidth = "0": must be a number at least'],
      [['--tp', '2', '--tp-bytes', '1e308', '--tp-bandwidth', '1e-10'], '--tp-bytes = "1e308": makes the step longer than a number can hold'],
      [['--costs', 'F=1e308,B=1e308'], '--costs = "F=1e308,B=1e308": makes the step longer than a number can hold'],
    ];
    for (const [flags, message] of cases) {
      const r = run('simulate', '--schedule', '1f1b', '--ranks', '4', '--microbatches', '8', ...flags);
      expect(r.code, flags.join(' ')).toBe(2);
      expect(r.err, flags.join(' ')).toContain(message);
    }
  });

  it('documents the flags in --help', () => {
    const h = run('simulate', '--help').out;
    expect(h).toContain('[--zero 0|1|2|3 [--reshard step|microbatch]]');
    expect(h).toContain('--tp 4 [--tp-layers 2]');
    for (const f of ['--zero Z', '--reshard step|microbatch', '--tp T', '--tp-layers L', '--tp-bytes BYTES', '--tp-latency T', '--tp-bandwidth BYTES', '--sequence-parallel']) expect(h).toContain(f);
    expect(h).toContain('with --tp, on one of its tp workers, collectives excluded');
  });
});
