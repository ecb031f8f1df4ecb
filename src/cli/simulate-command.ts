/** `pipelab simulate`: play a schedule against a cost model; makespan, bubble (simulated and closed form), peak memory. */
import {
  closedForm,
  DEFAULT_OP_COSTS,
  simulate,
  toChromeTrace,
  validateSchedule,
  type CostModel,
  type Op,
  type Schedule,
} from '../schedule/index.ts';
import { boolFlag, helpFor, numberFlag, parseArgs, stringFlag, UsageError, type FlagSpec, type ParsedArgs } from './args.ts';
import { fmt, table } from './format.ts';
import { EXIT_INVALID, EXIT_OK, type CliIo } from './io.ts';
import { readScheduleFile } from './load-file.ts';
import { SCHEDULE_FLAGS, scheduleFromFlags } from './schedule-flags.ts';
import { describeFailure } from './validate-command.ts';

const FLAGS: FlagSpec[] = [
  ...SCHEDULE_FLAGS,
  { name: 'file', value: 'FILE', help: 'simulate the schedule in FILE (PyTorch CSV or our JSON) instead of generating one' },
  { name: 'costs', value: 'F=1,B=2,I=1,W=1', help: 'time of each op on one stage (defaults shown); any subset' },
  { name: 'latency', value: 'T', help: 'link latency between two ranks, in time units (default 0)' },
  { name: 'bandwidth', value: 'BYTES', help: 'link bandwidth in bytes per time unit (default inf: free)' },
  { name: 'activation-bytes', value: 'BYTES', help: 'bytes a stage sends per micro-batch, and keeps for its backward (default 0)' },
  { name: 'lanes', value: 'K', help: 'shared-device mode: the ranks share one device with K effective lanes (default inf: a device per rank)' },
  { name: 'trace', value: 'FILE', help: 'also write the timeline as Chrome trace JSON (Perfetto, chrome://tracing)' },
  { name: 'json', boolean: true, help: 'print the result as JSON' },
  { name: 'help', boolean: true, help: 'show this help' },
];

export const SIMULATE_HELP = helpFor(
  'pipelab simulate --schedule 1f1b --ranks 4 --microbatches 8 [--virtual 2] [--costs F=1,B=2,I=1,W=1] [--json]\n' +
    '       pipelab simulate --file schedule.csv [--costs ...] [--json]',
  'Play a schedule against a cost model (costs are per stage) and report the makespan, the bubble fraction\n' +
    '(simulated, and the closed form where one is known), and busy, idle and peak activation memory per rank.',
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

function pick(a: ParsedArgs, io: CliIo): { schedule: Schedule; virtual: number } | { invalid: string } {
  const file = stringFlag(a, 'file');
  if (file === undefined) return scheduleFromFlags(a);
  for (const f of ['schedule', 'ranks', 'microbatches', 'virtual']) {
    if (a.flags.has(f)) throw new UsageError('--file', file, `replaces --${f}: give a file or generator flags, not both`);
  }
  const loaded = readScheduleFile(io, file);
  const v = validateSchedule(loaded.schedule);
  if (!v.ok) return { invalid: `${file}: invalid schedule: ${describeFailure(v, loaded.cells)}` };
  return { schedule: loaded.schedule, virtual: loaded.schedule.stages / loaded.schedule.ranks };
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
  const picked = pick(a, io);
  if ('invalid' in picked) {
    io.err(`pipelab simulate: ${picked.invalid}\n`);
    return EXIT_INVALID;
  }
  const { schedule: s, virtual } = picked;
  const costs: CostModel = { ...opCosts, latency, bandwidth, activationBytes: bytes, lanes };
  const r = simulate(s, costs);
  const isDefault = OP_KEYS.every((op) => opCosts[op] === DEFAULT_OP_COSTS[op]) && latency === 0 && (bytes === 0 || bandwidth === Infinity) && lanes >= s.ranks;
  const cf = Number.isInteger(virtual) ? closedForm(s.name, s.ranks, s.microbatches, virtual) : null;
  // Closed forms assume the default op costs and free links; their bubble fraction holds for any time unit.
  const closed = cf && isDefault ? cf : null;
  if (traceFile !== undefined) io.writeFile(traceFile, JSON.stringify(toChromeTrace(r.timeline, `PipeLab ${s.name}`)) + '\n');

  if (boolFlag(a, 'json')) {
    const out = {
      schedule: { name: s.name, ranks: s.ranks, virtual, stages: s.stages, microbatches: s.microbatches },
      costs: { ...opCosts, latency, bandwidth: Number.isFinite(bandwidth) ? bandwidth : 'inf', activationBytes: bytes, lanes: Number.isFinite(lanes) ? lanes : 'inf', perStage: true },
      makespan: r.makespan,
      bubble: { simulated: r.bubble, closedForm: closed ? closed.bubble : null, formula: closed ? closed.formula : null },
      ranks: r.busy.map((busy, rank) => ({
        rank,
        busy,
        idle: r.idle[rank],
        peakActivations: r.memory[rank].peakMicrobatches,
        peakBytes: r.memory[rank].peakBytes,
      })),
    };
    io.out(JSON.stringify(out, null, 2) + '\n');
    return EXIT_OK;
  }
  const costText = OP_KEYS.map((op) => `${op}=${opCosts[op]}`).join(' ');
  const lines = [
    `schedule   ${s.name}: ${s.ranks} ranks × ${fmt(virtual, 2)} stage${virtual === 1 ? '' : 's'} per rank = ${s.stages} stages, ${s.microbatches} micro-batches`,
    `costs      per stage ${costText}; links: latency ${latency}, bandwidth ${Number.isFinite(bandwidth) ? bandwidth : 'inf'}, activation ${bytes} bytes${Number.isFinite(lanes) ? `; one device, ${lanes} lanes` : ''}`,
    `makespan   ${fmt(r.makespan)}`,
    `bubble     ${fmt(r.bubble)} simulated; ${closed ? `${fmt(closed.bubble)} closed form ${closed.formula}` : cf ? 'closed form assumes default costs and free links' : 'no closed form known'}`,
    '',
  ];
  io.out(lines.join('\n'));
  io.out(
    table(
      ['rank', 'busy', 'idle', 'peak activations', 'peak bytes'],
      r.busy.map((busy, rank) => [rank, fmt(busy), fmt(r.idle[rank]), r.memory[rank].peakMicrobatches, fmt(r.memory[rank].peakBytes)]),
    ),
  );
  if (traceFile !== undefined) io.out(`trace      ${traceFile}\n`);
  return EXIT_OK;
}
