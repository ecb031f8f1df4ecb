/** `pipelab plan`: from a profile, the split, and a schedule that fits a memory cap; printed as CSV, JSON or a summary. */
import { makePlan } from '../plan/plan.ts';
import { profileFromJson, type Profile } from '../plan/profile.ts';
import { MAX_MICROBATCHES, MAX_RANKS, MAX_SIM_DP, toCsv, type MemoryCap } from '../schedule/index.ts';
import { ConfigError } from '../util/errors.ts';
import { boolFlag, helpFor, intFlag, oneOfFlag, parseArgs, required, stringFlag, UsageError, type FlagSpec } from './args.ts';
import { count, fmt, scheduleToJson, table } from './format.ts';
import { EXIT_OK, type CliIo } from './io.ts';
import { planMeshCommand } from './plan-mesh-command.ts';
import { MAX_CLI_TP, parseZeroFlags, ZERO_FLAGS } from './simulate-mesh-flags.ts';

const FORMATS = ['text', 'csv', 'json'] as const;

const FLAGS: FlagSpec[] = [
  { name: 'profile', value: 'FILE', help: 'the profile (JSON: blocks with F, I, W times and heldBytes, comm per boundary); see src/plan/profile.ts' },
  { name: 'ranks', value: 'P', help: `pipeline width p, one stage per rank (at most the profile's blocks and ${MAX_RANKS})` },
  { name: 'microbatches', value: 'M', help: `micro-batches per step (at most ${MAX_MICROBATCHES})` },
  { name: 'mem-cap', value: 'C', help: 'per-rank cap on live activations: micro-batches (e.g. 4) or bytes with a unit (e.g. 64MB, 512KiB, 1e6B)' },
  { name: 'recompute', boolean: true, help: 'count the bytes kept with recomputation (heldBytesRecompute)' },
  { name: 'dp', value: 'D', help: "data-parallel replicas of the pipeline (default 1); D > 1 adds each stage's ring all-reduce from the profile's allReduce (train.py --profile with dp ≥ 2)" },
  ...ZERO_FLAGS,
  { name: 'tp', value: 'T', help: `tensor-parallel workers per stage (default 1, at most ${MAX_CLI_TP}); T > 1 plans one tp worker from the profile's tp part and tpAllReduce (train.py --profile on a bundle exported with --tp T)` },
  { name: 'format', value: 'FMT', help: 'text (the plan, default), csv (the schedule, torch.distributed.pipelining) or json (the schedule)' },
  { name: 'help', boolean: true, help: 'show this help' },
];

export const PLAN_HELP = helpFor(
  'pipelab plan --profile FILE --ranks P --microbatches M --mem-cap C [--dp D [--zero Z [--reshard step|microbatch]]] [--tp T] [--recompute] [--format text|csv|json]',
  'Plan a pipeline from a profile: the contiguous split that minimises the slowest stage (compute and\n' +
    'communication), then the fastest schedule found whose live activations stay within the cap on every rank,\n' +
    'set beside 1F1B, ZB-H1 and GPipe under the same costs.',
  FLAGS,
) + '\nOr plan a transformer on N devices: pipelab plan --model gpt --help.\n';

const UNITS: Readonly<Record<string, number>> = { b: 1, kb: 1e3, mb: 1e6, gb: 1e9, kib: 1024, mib: 1024 ** 2, gib: 1024 ** 3 };
const CAP_RULE = 'must be a number of micro-batches (an integer at least 1, e.g. 4) or of bytes with a unit B, KB, MB, GB, KiB, MiB or GiB (e.g. 64MB)';

export function parseMemCap(raw: string): MemoryCap {
  const m = /^\s*([0-9]*\.?[0-9]+(?:e[+-]?\d+)?)\s*([a-z]*)\s*$/i.exec(raw);
  if (!m) throw new UsageError('--mem-cap', raw, CAP_RULE);
  const x = Number(m[1]);
  const unit = m[2].toLowerCase();
  if (unit === '') {
    if (!Number.isInteger(x)) throw new UsageError('--mem-cap', raw, CAP_RULE);
    if (x < 1) throw new UsageError('--mem-cap', raw, 'must be at least 1 micro-batch: no schedule runs with less; the smallest cap that works is 1');
    return { microbatches: x };
  }
  const scale = UNITS[unit];
  if (scale === undefined || !(x > 0)) throw new UsageError('--mem-cap', raw, CAP_RULE);
  return { bytes: x * scale };
}

function readProfile(io: CliIo, path: string): Profile {
  let text: string;
  try {
    text = io.readFile(path);
  } catch (e) {
    throw new UsageError('--profile', path, `cannot be read (${(e as Error).message})`);
  }
  return profileFromJson(text);
}

export function planCommand(argv: readonly string[], io: CliIo): number {
  // `--model` plans an analytic transformer on N devices (plan-mesh-command.ts).
  if (argv.some((x) => x === '--model' || x.startsWith('--model='))) return planMeshCommand(argv, io);
  const a = parseArgs(argv, FLAGS, 'plan');
  if (boolFlag(a, 'help')) {
    io.out(PLAN_HELP);
    return EXIT_OK;
  }
  if (a.positionals.length > 0) throw new UsageError('argument', a.positionals[0], '`pipelab plan` takes flags only (use --profile FILE)');
  const format = oneOfFlag(a, 'format', FORMATS) ?? 'text';
  const ranks = required(intFlag(a, 'ranks', 1, MAX_RANKS), 'ranks', 'the number of ranks P');
  const microbatches = required(intFlag(a, 'microbatches', 1, MAX_MICROBATCHES), 'microbatches', 'the micro-batches per step M');
  const capText = required(stringFlag(a, 'mem-cap'), 'mem-cap', 'a per-rank cap, in micro-batches (e.g. 4) or bytes (e.g. 64MB)');
  const cap = parseMemCap(capText);
  const path = required(stringFlag(a, 'profile'), 'profile', 'a profile JSON file');
  const profile = readProfile(io, path);
  const recompute = boolFlag(a, 'recompute');
  const dp = intFlag(a, 'dp', 1, MAX_SIM_DP) ?? 1;
  const tp = intFlag(a, 'tp', 1, MAX_CLI_TP) ?? 1;
  const { zero, reshard } = parseZeroFlags(a, dp);
  let plan;
  try {
    plan = makePlan({ profile, ranks, microbatches, cap, recompute, dp, tp, zero, reshard });
  } catch (e) {
    // Errors about the request are the flags' errors; those about the profile stay the file's.
    if (e instanceof ConfigError && (e.field === 'ranks' || e.field === 'tp' || e.field.startsWith('memCap'))) {
      const flag = e.field === 'ranks' ? '--ranks' : e.field === 'tp' ? '--tp' : '--mem-cap';
      throw new UsageError(flag, e.field.startsWith('memCap') ? capText : e.value, e.rule);
    }
    throw e;
  }
  const workers = dp * ranks * tp;
  const s = plan.auto.schedule;
  if (format === 'csv') {
    io.out(toCsv(s));
    return EXIT_OK;
  }
  if (format === 'json') {
    io.out(scheduleToJson(s));
    return EXIT_OK;
  }
  const sim = plan.auto.simulation;
  const unit = profile.unit === 'ms' ? ' ms' : '';
  const capWords = [cap.microbatches !== undefined ? count(cap.microbatches, 'micro-batch', 'micro-batches') : '', cap.bytes !== undefined ? `${fmt(cap.bytes)} bytes` : ''].filter(Boolean).join(' and ');
  io.out(
    [
      `profile    ${path}: ${count(profile.blocks.length, 'block')}${profile.source ? ` (${profile.source})` : ''}`,
      `split      ${plan.partition.ranges.map(([x, y], st) => `stage ${st}: blocks ${x}–${y - 1}`).join('; ')}`,
      `slowest    ${fmt(plan.partition.bottleneck)}${unit} per micro-batch (F + B + communication at its cuts)`,
      `cap        ${capWords} per rank${recompute ? ', with recomputation' : ''}`,
      `schedule   auto (${plan.auto.candidate}): makespan ${fmt(sim.makespan)}${unit}, bubble ${fmt(sim.bubble)}`,
      ...(sim.dp && profile.allReduce
        ? [
            `mesh       ${dp} replicas × ${count(ranks, 'rank')}; ${zero >= 2 ? 'reduce-scatters and all-gathers' : 'all-reduce'} per stage ${sim.dp.allReduceTime.map((t) => fmt(t)).join(', ')}${unit} ` +
              `(ring fitted over ${profile.allReduce.replicas} replicas: ${fmt(profile.allReduce.latency)}${unit} per exchange, ${fmt(profile.allReduce.bandwidth)} bytes per ${profile.unit === 'ms' ? 'ms' : 'unit'}), ` +
              `${fmt(100 * sim.dp.allReduceShare, 3)}% of the step exposed`,
          ]
        : []),
      ...(zero > 0
        ? [
            `zero       ZeRO-${zero} over the ${dp} replicas on the same ring: ${zero === 1 ? 'reduce-scatter, shard update and all-gather at the flush (the all-reduce\'s volume)' : `each stage's gradients reduce-scattered after every B and W, ${zero === 2 ? 'its weights all-gathered at the end of the step' : `its weights all-gathered before the actions that read them (reshard ${reshard})`}`}`,
          ]
        : []),
      ...(plan.modelStateBytes && dp > 1
        ? [`states     one worker's weights, gradients and AdamW state (fp32) per stage: ${plan.modelStateBytes.map((b) => fmt(b)).join(', ')} bytes${zero > 0 ? ` at ZeRO-${zero}` : ''}`]
        : []),
      ...(plan.tp && profile.tpAllReduce
        ? [
            `tp         ${tp} workers per stage (${workers} in all)${profile.tp?.sequenceParallel ? ' with sequence parallelism (each sends its block of the token rows)' : ''}, planned as one of them computes; collectives per micro-batch and stage: ` +
              `F ${plan.tp.forward.map((x) => fmt(x)).join(', ')}${unit}, B ${plan.tp.backward.map((x) => fmt(x)).join(', ')}${unit} ` +
              `(ring fitted over ${profile.tpAllReduce.replicas}: ${fmt(profile.tpAllReduce.latency)}${unit} per exchange, ${fmt(profile.tpAllReduce.bandwidth)} bytes per ${profile.unit === 'ms' ? 'ms' : 'unit'})`,
          ]
        : []),
      '',
      '',
    ].join('\n'),
  );
  io.out(
    table(
      ['schedule', 'makespan', 'bubble', 'peak activations', 'peak bytes', 'fits the cap'],
      [
        ['auto', fmt(sim.makespan), fmt(sim.bubble), Math.max(...sim.memory.map((x) => x.peakMicrobatches)), fmt(Math.max(...sim.memory.map((x) => x.peakBytes))), 'yes'],
        ...plan.baselines.map((b) => [b.name, fmt(b.makespan), fmt(b.bubble), b.peakMicrobatches, fmt(b.peakBytes), b.fits ? 'yes' : 'no']),
      ],
    ),
  );
  if (plan.noSharedPrediction) io.out(`\npredicted  this machine: not simulated: ${plan.noSharedPrediction}\n`);
  if (plan.predictions) {
    const { thisMachine, independent } = plan.predictions;
    io.out(
      `\npredicted  this machine (${fmt(profile.lanes ?? Infinity, 3)} lanes shared by ${count(workers, workers > ranks ? 'worker' : 'rank')}): makespan ${fmt(thisMachine.makespan)}${unit}, bubble ${fmt(thisMachine.bubble)}\n` +
        `           ${count(workers, 'independent GPU')}: makespan ${fmt(independent.makespan)}${unit}, bubble ${fmt(independent.bubble)}\n`,
    );
  }
  return EXIT_OK;
}
