/** `pipelab schedule`: generate a schedule and print it as PyTorch CSV, JSON or text. */
import { toCsv } from '../schedule/index.ts';
import { boolFlag, helpFor, oneOfFlag, parseArgs, UsageError, type FlagSpec } from './args.ts';
import { scheduleToJson, scheduleToText } from './format.ts';
import { EXIT_OK, type CliIo } from './io.ts';
import { SCHEDULE_FLAGS, scheduleFromFlags } from './schedule-flags.ts';

const FORMATS = ['csv', 'json', 'text'] as const;

const FLAGS: FlagSpec[] = [
  ...SCHEDULE_FLAGS,
  { name: 'format', value: 'FMT', help: 'csv (torch.distributed.pipelining, one row per rank), json, or text (default text)' },
  { name: 'align', boolean: true, help: 'csv only: the time-aligned form, each column one time step, idle cells empty, as PyTorch lays its schedules out (the default)' },
  { name: 'dense', boolean: true, help: 'csv only: the dense form (no empty cells); not for lock-step executors such as PipelineScheduleMulti' },
  { name: 'help', boolean: true, help: 'show this help' },
];

export const SCHEDULE_HELP = helpFor(
  'pipelab schedule --schedule 1f1b --ranks 4 --microbatches 8 [--virtual 2] [--format csv|json|text] [--dense]',
  'Generate a pipeline schedule and print it.',
  FLAGS,
);

export function scheduleCommand(argv: readonly string[], io: CliIo): number {
  const a = parseArgs(argv, FLAGS, 'schedule');
  if (boolFlag(a, 'help')) {
    io.out(SCHEDULE_HELP);
    return EXIT_OK;
  }
  if (a.positionals.length > 0) throw new UsageError('argument', a.positionals[0], '`pipelab schedule` takes flags only');
  const format = oneOfFlag(a, 'format', FORMATS) ?? 'text';
  for (const flag of ['align', 'dense']) {
    if (boolFlag(a, flag) && format !== 'csv') throw new UsageError(`--${flag}`, true, `applies to --format csv only (got --format ${format})`);
  }
  if (boolFlag(a, 'align') && boolFlag(a, 'dense')) throw new UsageError('--dense', true, 'contradicts --align; give one');
  const align = !boolFlag(a, 'dense');
  const { schedule } = scheduleFromFlags(a);
  if (format === 'csv') io.out(toCsv(schedule, { align }));
  else if (format === 'json') io.out(scheduleToJson(schedule));
  else io.out(scheduleToText(schedule));
  return EXIT_OK;
}
