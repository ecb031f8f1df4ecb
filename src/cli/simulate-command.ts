/** `pipelab simulate`: play a schedule against a cost model; makespan, bubble (simulated and closed form), peak memory. */
import {
  closedForm,
  meshClosedForm,
  streamMeshClosedForm,
  DEFAULT_OP_COSTS,
  MAX_SIM_DP,
  simulate,
  toChromeTrace,
  validateSchedule,
  streamMeshRefusal,
  generateWindow,
  scheduleKind,
  gradSumEvery,
  MAX_MICROBATCHES,
  type CostModel,
  type RunScheduleName,
  type Op,
  type Schedule,
  type SimulationResult,
} from '../schedule/index.ts';
import { boolFlag, helpFor, intFlag, numberFlag, parseArgs, stringFlag, UsageError, type FlagSpec, type ParsedArgs } from './args.ts';
import { count, fmt, table } from './format.ts';
import { EXIT_INVALID, EXIT_OK, type CliIo } from './io.ts';
import { readScheduleFile } from './load-file.ts';
import { SCHEDULE_FLAGS, scheduleFromFlags, type PickedSchedule } from './schedule-flags.ts';
import { describeFailure } from './validate-command.ts';
import { EP_FLAGS, epClosed, epCostsOf, epJson, epLine, parseEpFlags } from './simulate-ep-flags.ts';
import { meshLines, MESH_FLAGS, parseMeshFlags, tpClosed, tpCosts, tpJson, zeroCosts } from './simulate-mesh-flags.ts';

const FLAGS: FlagSpec[] = [
  ...SCHEDULE_FLAGS,
  { name: 'file', value: 'FILE', help: 'simulate the schedule in FILE (PyTorch CSV or our JSON) instead of generating one' },
  { name: 'costs', value: 'F=1,B=2,I=1,W=1', help: 'time of each op on one stage (defaults shown; with --tp, on one of its tp workers, collectives excluded); any subset' },
  { name: 'latency', value: 'T', help: 'link latency between two ranks, in time units (default 0)' },
  { name: 'bandwidth', value: 'BYTES', help: 'link bandwidth in bytes per time unit (default inf: free)' },
  { name: 'activation-bytes', value: 'BYTES', help: 'bytes a stage sends per micro-batch, and keeps for its backward (default 0)' },
  { name: 'lanes', value: 'K', help: 'shared-device mode: the ranks share one device with K effective lanes (default inf: a device per rank)' },
  { name: 'dp', value: 'D', help: `data-parallel replicas of the pipeline (default 1, at most ${MAX_SIM_DP}): dp × ranks workers` },
  { name: 'grad-bytes', value: 'BYTES', help: 'bytes of each stage\'s gradients, one number for every stage or a comma-separated list (default 0)' },
  { name: 'allreduce-latency', value: 'T', help: 'ring all-reduce: time of one chunk exchange before its bytes (α, default 0)' },
  { name: 'allreduce-bandwidth', value: 'BYTES', help: 'ring all-reduce: bytes per time unit on one link (β, default inf: free)' },
  { name: 'step-end', value: 'T', help: "each rank's end of step after its last action, collectives and copies' sum (the losses read back, the update): one time for every rank or a comma-separated list, one per rank; adds the step on the workers' clocks (not drawn)" },
  { name: 'no-overlap', boolean: true, help: 'start every all-reduce only after the last compute of the step (default: each stage as soon as its last backward ends); with --zero 2 or 3, wait for each reduce-scatter' },
  ...MESH_FLAGS,
  ...EP_FLAGS,
  { name: 'trace', value: 'FILE', help: 'also write the timeline as Chrome trace JSON (Perfetto, chrome://tracing)' },
  { name: 'json', boolean: true, help: 'print the result as JSON' },
  { name: 'help', boolean: true, help: 'show this help' },
];

export const SIMULATE_HELP = helpFor(
  'pipelab simulate --schedule 1f1b --ranks 4 --microbatches 8 [--virtual 2] [--costs F=1,B=2,I=1,W=1] [--json]\n' +
    '       pipelab simulate ... --dp 4 --grad-bytes 4e8 --allreduce-latency 0.01 --allreduce-bandwidth 2.5e7 [--no-overlap] [--zero 0|1|2|3 [--reshard step|microbatch]]\n' +
    '       pipelab simulate ... --tp 4 [--tp-layers 2] [--tp-bytes 3.2e6] [--tp-latency 0.01] [--tp-bandwidth 1e8] [--sequence-parallel]\n' +
    '       pipelab simulate ... --dp 8 --ep 8 [--ep-layers 2] [--ep-bytes 4.7e8] [--ep-per-node 8] [--ep-latency 0.005] [--ep-bandwidth 1.6e8] [--ep-overlap]\n' +
    '       pipelab simulate --file schedule.csv [--costs ...] [--json]',
  'Play a schedule against a cost model (costs are per stage) and report the makespan, the bubble fraction\n' +
    '(simulated, and the closed form where one is known), and busy, idle and peak activation memory per rank.\n' +
    'With --dp, dp replicas play the schedule and each stage\'s gradients are summed by a ring all-reduce\n' +
    '(2(dp−1)·α + 2(dp−1)/dp · bytes/β per stage): the step time, the exposed all-reduce and its share;\n' +
    'with --zero 2 or 3 its reduce-scatters and all-gathers are played between the actions instead;\n' +
    'with pipedream-2bw (--steps S) each stage\'s all-reduce after each block of m backwards, in the stream.\n' +
    'With --tp, each stage runs on T tensor-parallel workers: every F and every B (or I) waits for its\n' +
    'layers\' tp all-reduces (α + (T−1)·bytes/β each), added to the op times --costs give per tp worker;\n' +
    'the report adds their share of the step, and the trace dp × ranks × T lanes.\n' +
    'DualPipe (two model copies) then sums each stage\'s gradients over its copies, ranks r and p − 1 − r,\n' +
    'a ring of 2 over the pipeline link (--latency, --bandwidth) on --grad-bytes (with --zero, the owned 1/dp).\n' +
    'With --step-end, each rank then reads the losses back and updates (not drawn): the step on the workers\' clocks.',
  FLAGS,
);

const OP_KEYS: readonly Op[] = ['F', 'B', 'I', 'W'];

export function parseCosts(raw: string): Partial<Record<Op, number>> {
  const out: Partial<Record<Op, number>> = {};
  const rule = 'must be a comma-separated list of op=time with ops F, B, I, W and times ≥ 0, e.g. F=1,B=2,I=1,W=1';
  for (const part of raw.split(',')) {
    const m = /^\s*([FBIW])\s*=\s*([0-9]*\.?[0-9]+(?:e[+-]?\d+)?)\s*$/i.exec(part);
    if (!m) throw new UsageError('--costs', raw, rule);
    const op = m[1].toUpperCase() as Op;
    if (out[op] !== undefined) throw new UsageError('--costs', raw, `gives ${op} twice`);
    out[op] = Number(m[2]);
  }
  return out;
}

/** A flag giving one number ≥ 0 for every stage (or rank), or a comma-separated list of one per stage (or rank). */
function parsePerList(flag: string, raw: string, count: number, each: string, what: string): number | number[] {
  const parts = raw.split(',').map((x) => x.trim());
  const rule = `must be ${each} ≥ 0 for every ${what}, or a comma-separated list of ${count} (one per ${what})`;
  const nums = parts.map((x) => (/^[0-9]*\.?[0-9]+(?:e[+-]?\d+)?$/i.test(x) ? Number(x) : NaN));
  if (nums.some((x) => !Number.isFinite(x))) throw new UsageError(flag, raw, rule);
  if (nums.length === 1) return nums[0];
  if (nums.length !== count) throw new UsageError(flag, raw, `gives ${nums.length} numbers; ${rule}`);
  return nums;
}

/** `--grad-bytes`: one number for every stage, or one per stage. */
export function parseGradBytes(raw: string, stages: number): number | number[] {
  return parsePerList('--grad-bytes', raw, stages, 'a number of bytes', 'stage');
}

function pick(a: ParsedArgs, io: CliIo): PickedSchedule | { invalid: string } {
  const file = stringFlag(a, 'file');
  if (file === undefined) return scheduleFromFlags(a);
  for (const f of ['schedule', 'ranks', 'microbatches', 'virtual']) {
    if (a.flags.has(f)) throw new UsageError('--file', file, `replaces --${f}: give a file or generator flags, not both`);
  }
  const loaded = readScheduleFile(io, file);
  const v = validateSchedule(loaded.schedule);
  if (!v.ok) return { invalid: `${file}: invalid schedule: ${describeFailure(v, loaded.cells)}` };
  // Stages per rank and model copy (DualPipe's two copies each hold one stage per rank).
  const picked = { schedule: loaded.schedule, virtual: loaded.schedule.stages / loaded.schedule.ranks / (loaded.schedule.copies ?? 1), theoryAs: loaded.schedule.name };
  const steps = intFlag(a, 'steps', 1, MAX_MICROBATCHES);
  return steps === undefined ? picked : { ...picked, ...fileStream(loaded.schedule, steps) };
}

/**
 * `--file F --steps S`: the file's order read as a stream of S steps (PipeDream-2BW's, as `schedule --steps` writes it:
 * no field of the CSV says so), each stage's all-reduce with --dp after its block of M/S backwards. Its closed form
 * holds where the order is PipeDream-2BW's own.
 */
function fileStream(s: Schedule, steps: number): Pick<PickedSchedule, 'streamSteps' | 'theoryAs'> {
  const one = (s.copies ?? 1) === 1 && s.stages === s.ranks;
  if (!one) throw new UsageError('--steps', steps, `reads the file as PipeDream-2BW's stream, one stage per rank and one model copy; this file holds ${s.stages} stages on ${s.ranks} ranks${(s.copies ?? 1) > 1 ? ` in ${s.copies} copies` : ''}`);
  if (s.microbatches % steps !== 0) throw new UsageError('--steps', steps, `must divide the file's ${s.microbatches} micro-batches: a stream of S steps of M/S micro-batches each`);
  const m = s.microbatches / steps;
  let own: Schedule | null = null;
  try {
    own = generateWindow('pipedream-2bw', s.ranks, m, steps, 1);
  } catch {
    own = null;
  }
  const same = own !== null && own.order.every((list, r) => list.length === s.order[r].length && list.every((x, i) => x.op === s.order[r][i].op && x.mb === s.order[r][i].mb && x.stage === s.order[r][i].stage));
  return { streamSteps: steps, theoryAs: same ? scheduleKind('pipedream-2bw').theoryAs : s.name };
}

/** The dp × pp step's closed form, in words (theory.ts meshClosedForm), or why there is none. */
function stepClosed(s: Schedule, theoryAs: string, v: number, defaults: boolean, dp: number, grad: number | number[] | undefined, latency: number, bandwidth: number, overlap: boolean, zero: number): string {
  if (zero >= 2) return `none known for ZeRO-${zero} (its collectives are played between the actions)`;
  if (!defaults) return 'assumes default costs, free links and no tp collectives';
  const g = grad === undefined ? 0 : grad;
  if (Array.isArray(g) && g.some((x) => x !== g[0])) return 'assumes equal gradient bytes on every stage';
  const cf = Number.isInteger(v) ? meshClosedForm(theoryAs, s.ranks, s.microbatches, v, { dp, gradBytes: Array.isArray(g) ? g[0] : g, latency, bandwidth, overlap }) : null;
  return cf ? `step ${fmt(cf.step)} = ${cf.formula} (A = ${fmt(cf.allReduce)} per stage)` : 'none known for this schedule with overlap';
}

export function simulateCommand(argv: readonly string[], io: CliIo): number {
  const a = parseArgs(argv, FLAGS, 'simulate');
  if (boolFlag(a, 'help')) {
    io.out(SIMULATE_HELP);
    return EXIT_OK;
  }
  if (a.positionals.length > 0) throw new UsageError('argument', a.positionals[0], '`pipelab simulate` takes flags only (use --file FILE for a file)');
  const opCosts = { ...DEFAULT_OP_COSTS, ...parseCosts(stringFlag(a, 'costs') ?? 'F=1') };
  const latency = numberFlag(a, 'latency', 0) ?? 0;
  const bandwidth = numberFlag(a, 'bandwidth', Number.MIN_VALUE, true) ?? Infinity;
  const bytes = numberFlag(a, 'activation-bytes', 0) ?? 0;
  const lanes = numberFlag(a, 'lanes', Number.MIN_VALUE, true) ?? Infinity;
  const traceFile = stringFlag(a, 'trace');
  const dp = intFlag(a, 'dp', 1, MAX_SIM_DP) ?? 1;
  const arLatency = numberFlag(a, 'allreduce-latency', 0);
  const arBandwidth = numberFlag(a, 'allreduce-bandwidth', Number.MIN_VALUE, true);
  const overlap = !boolFlag(a, 'no-overlap');
  const gradRaw = stringFlag(a, 'grad-bytes');
  const mf = parseMeshFlags(a, dp);
  const ef = parseEpFlags(a, dp, mf.tp);
  const picked = pick(a, io);
  if ('invalid' in picked) {
    io.err(`pipelab simulate: ${picked.invalid}\n`);
    return EXIT_INVALID;
  }
  const { schedule: s, virtual, theoryAs, streamSteps } = picked;
  // A stream on replicas: PipeDream-2BW's all-reduce follows each stage's block of m backwards (simulate-blocks.ts).
  // A file read as a stream (--file --steps) is PipeDream-2BW's.
  const fromFile = stringFlag(a, 'file') !== undefined;
  const streamRefused = streamSteps !== undefined ? streamMeshRefusal(fromFile ? 'pipedream-2bw' : (s.name as RunScheduleName), { dp, zero: mf.zero, overlap }) : null;
  if (streamRefused) {
    const flag = { dp: '--dp', zero: '--zero', overlap: '--no-overlap' }[streamRefused.key];
    const given = { dp: stringFlag(a, 'dp'), zero: stringFlag(a, 'zero'), overlap: true }[streamRefused.key];
    const hint = { dp: 'simulate it without --dp', zero: 'leave --zero out', overlap: 'leave --no-overlap out' }[streamRefused.key];
    throw new UsageError(flag, given, `${streamRefused.rule} (${hint})`);
  }
  const streamBlock = streamSteps !== undefined && dp > 1 ? s.microbatches / streamSteps : undefined;
  if (mf.zero >= 2 && lanes < dp * s.ranks) {
    throw new UsageError('--lanes', stringFlag(a, 'lanes'), `ZeRO-${mf.zero}'s collectives are played on independent devices: with --zero ${mf.zero} it needs at least dp × ranks = ${dp * s.ranks} lanes (or inf)`);
  }
  const gradBytes = gradRaw === undefined ? undefined : parseGradBytes(gradRaw, s.stages);
  const meshAsked = dp > 1 || gradBytes !== undefined || arLatency !== undefined || arBandwidth !== undefined || !overlap;
  const costs: CostModel = { ...opCosts, latency, bandwidth, activationBytes: bytes, lanes };
  if (meshAsked) Object.assign(costs, { dp, gradBytes, allReduce: { latency: arLatency ?? 0, bandwidth: arBandwidth ?? Infinity, overlap, ...zeroCosts(mf), ...(streamBlock !== undefined ? { every: streamBlock } : {}) } });
  // Sequence parallelism's LayerNorm gradient sum: once a step under a flush, each block of a stream's (2BW), every backward under PipeDream or ZeRO-2/3.
  const update = streamSteps === undefined ? 'flush' : fromFile ? 'double-buffered' : scheduleKind(s.name).update;
  costs.tp = tpCosts(mf, s.stages, gradSumEvery(update, { dp, zero: mf.zero }, streamSteps === undefined ? s.microbatches : s.microbatches / streamSteps));
  if (ef) costs.ep = epCostsOf(ef, s.stages);
  const stepEndRaw = stringFlag(a, 'step-end');
  if (stepEndRaw !== undefined) costs.stepEnd = parsePerList('--step-end', stepEndRaw, s.ranks, 'a time', 'rank');
  const r = simulate(s, costs);
  if (!Number.isFinite(r.makespan)) throw overflowFlag(a);
  // r.busy and r.idle list every pipeline worker, replica by replica (dp × ranks; a tp group's t workers share one entry): replica 0's ranks come first.
  const perRank = r.memory.map((mem, rank) => ({ rank, busy: r.busy[rank], idle: r.idle[rank], mem, tp: r.tp?.perRank[rank] ?? 0 }));
  const freeLinks = latency === 0 && (bytes === 0 || bandwidth === Infinity) && lanes >= s.ranks * dp;
  const noTpTime = !r.tp || r.tp.opTime.every((o) => OP_KEYS.every((op) => o[op] === 0));
  // ZeRO-3's gathers, and ZeRO-2's reduce-scatters without overlap, hold the compute back.
  // So do a stream's all-reduces per block (the worker waits for each before its next action).
  const streamWaits = streamBlock !== undefined && (r.dp?.allReduceTime.some((t) => t > 0) ?? false);
  const computeFree = (mf.zero < 2 || (mf.zero === 2 && overlap)) && !streamWaits;
  const isDefault = OP_KEYS.every((op) => opCosts[op] === DEFAULT_OP_COSTS[op]) && freeLinks && noTpTime && computeFree && !ef;
  // PipeDream-2BW on replicas has a closed form of its own (theory.ts): default op costs, free links, no tp, one gradient size.
  const oneGradSize = gradBytes === undefined || !Array.isArray(gradBytes) || gradBytes.every((x) => x === gradBytes[0]);
  const streamCf =
    streamBlock !== undefined && streamSteps !== undefined && theoryAs === scheduleKind('pipedream-2bw').theoryAs && OP_KEYS.every((op) => opCosts[op] === DEFAULT_OP_COSTS[op]) && freeLinks && noTpTime && oneGradSize
      ? streamMeshClosedForm(s.ranks, streamBlock, streamSteps, { dp, gradBytes: gradBytes === undefined ? 0 : Array.isArray(gradBytes) ? gradBytes[0] : gradBytes, latency: arLatency ?? 0, bandwidth: arBandwidth ?? Infinity, overlap: true })
      : null;
  const cf = streamCf ? streamCf.pipeline : Number.isInteger(virtual) ? closedForm(theoryAs, s.ranks, s.microbatches, virtual) : null;
  // Closed forms assume the default op costs, free links and no tp collectives; their bubble fraction holds for any time unit.
  const closed = cf && (isDefault || streamCf) ? cf : null;
  // A stream's all-reduce waits hold its compute back: 1F1B's tp closed form no longer gives its compute.
  const tpClosedForm = streamWaits ? null : tpClosed({ ...s, name: theoryAs }, virtual, freeLinks, mf, r, opCosts);
  const epCf = ef ? epClosed({ ...s, name: theoryAs }, virtual, freeLinks && !r.tp && streamSteps === undefined && computeFree, ef, opCosts) : null;
  if (traceFile !== undefined) io.writeFile(traceFile, JSON.stringify(toChromeTrace(r.timeline, `PipeLab ${s.name}`)) + '\n');

  if (boolFlag(a, 'json')) {
    const out = {
      schedule: { name: s.name, ranks: s.ranks, virtual, stages: s.stages, microbatches: s.microbatches, ...(streamSteps !== undefined ? { stream: { steps: streamSteps, microbatchesPerStep: s.microbatches / streamSteps } } : {}) },
      costs: { ...opCosts, latency, bandwidth: Number.isFinite(bandwidth) ? bandwidth : 'inf', activationBytes: bytes, lanes: Number.isFinite(lanes) ? lanes : 'inf', perStage: true, perTpWorker: mf.tp > 1 },
      makespan: r.makespan,
      bubble: { simulated: r.bubble, closedForm: closed ? closed.bubble : null, formula: closed ? closed.formula : null },
      ranks: perRank.map(({ rank, busy, idle, mem }) => ({ rank, busy, idle, peakActivations: mem.peakMicrobatches, peakBytes: mem.peakBytes })),
      ...(r.dp
        ? { dataParallel: { ...r.dp, overlap, zero: mf.zero, ...(streamBlock !== undefined ? { allReduceEvery: streamBlock } : {}), reshard: mf.zero === 3 ? mf.reshard : null, allReduce: { latency: arLatency ?? 0, bandwidth: Number.isFinite(arBandwidth ?? Infinity) ? arBandwidth : 'inf' } } }
        : {}),
      ...(r.tp ? { tensorParallel: tpJson(mf, r, tpClosedForm) } : {}),
      ...(ef ? { expertParallel: epJson(ef, epCf, r) } : {}),
      ...(r.copySum ? { copySum: r.copySum } : {}),
      ...(r.stepEnd ? { stepEnd: r.stepEnd } : {}),
    };
    io.out(JSON.stringify(out, null, 2) + '\n');
    return EXIT_OK;
  }
  const costText = OP_KEYS.map((op) => `${op}=${opCosts[op]}`).join(' ');
  const lines = [
    `schedule   ${s.name}: ${count(s.ranks, 'rank')} × ${fmt(virtual, 2)} stage${virtual === 1 ? '' : 's'} per rank${(s.copies ?? 1) > 1 ? ` × ${s.copies} model copies` : ''} = ${count(s.stages, 'stage')}, ${count(s.microbatches, 'micro-batch', 'micro-batches')}${streamSteps !== undefined ? ` (one stream: ${streamSteps} step${streamSteps === 1 ? '' : 's'} × ${s.microbatches / streamSteps}, no flush between them)` : ''}`,
    `costs      per stage ${costText}; links: latency ${latency}, bandwidth ${Number.isFinite(bandwidth) ? bandwidth : 'inf'}, activation ${bytes} bytes${Number.isFinite(lanes) ? `; one device, ${lanes} lanes` : ''}`,
    `makespan   ${fmt(r.makespan)}${makespanParts(r, streamBlock !== undefined, mf.zero)}`,
    `bubble     ${fmt(r.bubble)} simulated; ${closed ? `${fmt(closed.bubble)} closed form ${closed.formula}` : cf ? `closed form assumes default costs${noTpTime ? '' : ', no tp collectives'}${computeFree ? '' : streamWaits ? ', equal gradient bytes on every stage' : `, no ZeRO-${mf.zero} waits`} and free links` : 'no closed form known'}`,
  ];
  if (r.dp) {
    const arTimes = r.dp.allReduceTime.map((t) => fmt(t));
    const between = mf.zero >= 2;
    const when = streamBlock !== undefined
      ? `each stage's all-reduce after its last backward of each block of ${count(streamBlock, 'micro-batch', 'micro-batches')} (a step), before the block's update; the worker waits for it`
      : between ? `ZeRO-${mf.zero} collectives between the actions${overlap ? ', overlapped with the compute' : ', each waited for'}` : `${mf.zero === 1 ? 'ZeRO-1 ' : ''}all-reduce ${overlap ? 'overlapped with the backward' : 'after the last compute'}`;
    lines.push(
      `mesh       dp = ${count(r.dp.dp, 'replica')} × ${count(s.ranks, 'rank')} = ${count(r.dp.dp * s.ranks, 'worker')}; ${when}`,
      `closed form ${streamBlock !== undefined ? (streamCf ? `stream ${fmt(streamCf.step)} = ${streamCf.formula} (A = ${fmt(streamCf.allReduce)} per stage and block)` : theoryAs !== scheduleKind('pipedream-2bw').theoryAs ? "none known for this order (PipeDream-2BW's stream is 1F1B's order over all its micro-batches)" : `assumes default costs, free links${noTpTime ? '' : ', no tp collectives'} and equal gradient bytes on every stage`) : stepClosed(s, theoryAs, virtual, closed !== null, dp, gradBytes, arLatency ?? 0, arBandwidth ?? Infinity, overlap, mf.zero)}`,
      `${between ? 'collectives' : 'all-reduce'} per stage ${arTimes.length <= 16 ? arTimes.join(', ') : `${arTimes.slice(0, 16).join(', ')}, … (${arTimes.length} stages)`}${streamSteps !== undefined && streamBlock !== undefined ? ` (its ${streamSteps} blocks)` : ''}; exposed ${fmt(r.dp.exposedAllReduce)}, ${fmt(100 * r.dp.allReduceShare, 3)}% of the ${streamBlock !== undefined ? 'stream' : 'step'}`,
    );
  }
  if (r.copySum) {
    const times = [...new Set(r.copySum.time.slice(0, s.stages / r.copySum.copies).map((t) => fmt(t)))];
    lines.push(
      `copies     each model stage's gradients summed over its ${r.copySum.copies} copies after the step (a ring over the pipeline link between the ranks holding them, r ↔ ${s.ranks - 1} − r${mf.zero >= 1 && dp > 1 ? `; ZeRO-${mf.zero}: the owned 1/${dp}` : ''}): ${times.join(', ')} per model stage; adds ${fmt(r.makespan - r.copySum.before)}`,
    );
  }
  if (r.stepEnd) {
    const times = [...new Set(r.stepEnd.time.map((t) => fmt(t)))];
    lines.push(
      `step end   each rank's losses read and update after its last action${r.dp || r.copySum ? ', collectives' : ''}${r.copySum ? " and copies' sum" : ''} (not drawn): ${times.join(', ')}${times.length > 1 ? ' per rank' : ''}; the ${streamSteps !== undefined ? 'stream' : 'step'} on the workers' clocks ${fmt(r.stepEnd.step)} (+${fmt(Math.max(0, r.stepEnd.step - r.makespan))} after the makespan)`,
    );
  }
  if (ef) lines.push(epLine(ef, epCf));
  lines.push(...meshLines(s, mf, r, tpClosedForm), '');
  io.out(lines.join('\n'));
  io.out(
    table(
      [r.dp && r.tp ? 'rank (each replica, tp worker)' : r.dp ? 'rank (each replica)' : r.tp ? 'rank (each tp worker)' : 'rank', 'busy', 'idle', ...(r.tp ? ['tp collectives'] : []), 'peak activations', 'peak bytes'],
      perRank.map(({ rank, busy, idle, mem, tp }) => [rank, fmt(busy), fmt(idle), ...(r.tp ? [fmt(tp)] : []), mem.peakMicrobatches, fmt(mem.peakBytes)]),
    ),
  );
  if (traceFile !== undefined) io.out(`trace      ${traceFile}\n`);
  return EXIT_OK;
}

/** The step overflowed a number: the flag most to blame (the largest time, size or latency given, or the smallest bandwidth). */
/** What the makespan holds beyond the compute: the exposed data-parallel collectives, the sum over model copies. */
function makespanParts(r: SimulationResult, stream: boolean, zero: number): string {
  const parts: string[] = [];
  if (r.dp) parts.push(`compute ${fmt(r.dp.computeMakespan)}`, `exposed ${zero >= 2 ? 'collectives' : 'all-reduce'} ${fmt(r.dp.exposedAllReduce)}`);
  if (r.copySum) {
    if (!r.dp) parts.push(`compute ${fmt(r.copySum.before)}`);
    parts.push(`copies' sum ${fmt(r.makespan - r.copySum.before)}`);
  }
  return parts.length > 0 ? ` (the ${stream ? 'stream' : 'step'}: ${parts.join(' + ')})` : '';
}

function overflowFlag(a: ParsedArgs): UsageError {
  const given = (name: string): number => {
    const raw = stringFlag(a, name);
    if (raw === undefined) return 0;
    if (name === 'costs') return Math.max(0, ...Object.values(parseCosts(raw)).map((x) => x ?? 0));
    const x = Number(raw);
    return /bandwidth/.test(name) ? 1 / x : x;
  };
  const names = ['costs', 'latency', 'bandwidth', 'activation-bytes', 'grad-bytes', 'allreduce-latency', 'allreduce-bandwidth', 'tp-bytes', 'tp-latency', 'tp-bandwidth', 'ep-bytes', 'ep-latency', 'ep-bandwidth', 'ep-latency-inter', 'ep-bandwidth-inter'];
  const worst = names.reduce((w, n) => (given(n) > given(w) ? n : w), 'costs');
  return new UsageError(`--${worst}`, stringFlag(a, worst) ?? '', 'makes the step longer than a number can hold (the simulated makespan is infinite); give a smaller time or size, or a larger bandwidth');
}
