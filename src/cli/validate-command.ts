/** `pipelab validate FILE`: exit 0 and a summary, or 1 and the first offending action. */
import { summarizeSchedule, validateSchedule, type ValidationFailure } from '../schedule/index.ts';
import { boolFlag, helpFor, parseArgs, UsageError, type FlagSpec } from './args.ts';
import { count, stagesOf } from './format.ts';
import { EXIT_INVALID, EXIT_OK, type CliIo } from './io.ts';
import { readScheduleFile, type LoadedFile } from './load-file.ts';

const FLAGS: FlagSpec[] = [
  { name: 'json', boolean: true, help: 'print the result as JSON' },
  { name: 'help', boolean: true, help: 'show this help' },
];

export const VALIDATE_HELP = helpFor(
  'pipelab validate FILE.csv [--json]',
  'Check a schedule (torch.distributed.pipelining CSV, one row per rank; or our JSON): complete, in dependency\n' +
    'order and free of deadlock when receives block. Exit 0 and a summary, or 1 and the first offending action.',
  FLAGS,
);

export function describeFailure(v: ValidationFailure, cells: LoadedFile['cells']): string {
  const cell = cells && v.rank !== null && v.index !== null ? cells[v.rank]?.[v.index] : undefined;
  return cell ? `${v.error} (CSV row ${cell.row}, column ${cell.col})` : v.error;
}

export function validateCommand(argv: readonly string[], io: CliIo): number {
  const a = parseArgs(argv, FLAGS, 'validate');
  if (boolFlag(a, 'help')) {
    io.out(VALIDATE_HELP);
    return EXIT_OK;
  }
  if (a.positionals.length !== 1) {
    throw new UsageError('FILE', a.positionals.length === 0 ? null : a.positionals, 'give exactly one schedule file, e.g. `pipelab validate schedule.csv`');
  }
  const file = a.positionals[0];
  const json = boolFlag(a, 'json');
  const loaded = readScheduleFile(io, file);
  const v = validateSchedule(loaded.schedule);
  if (!v.ok) {
    const message = describeFailure(v, loaded.cells);
    if (json) {
      io.out(JSON.stringify({ ok: false, file, error: message, rank: v.rank, index: v.index, action: v.action }, null, 2) + '\n');
    }
    io.err(`pipelab validate: ${file}: invalid: ${message}\n`);
    return EXIT_INVALID;
  }
  const s = summarizeSchedule(loaded.schedule);
  if (json) {
    io.out(JSON.stringify({ ok: true, file, ...s }, null, 2) + '\n');
    return EXIT_OK;
  }
  const ops = (['F', 'B', 'I', 'W'] as const).map((op) => `${op} ${s.ops[op]}`).join(', ');
  const lines = [`ok: ${file}: ${count(s.ranks, 'rank')}, ${count(s.stages, 'stage')}, ${count(s.microbatches, 'micro-batch', 'micro-batches')}, ${count(s.actions, 'action')} (${ops})`];
  for (let r = 0; r < s.ranks; r++) {
    lines.push(`  rank ${r}: stage${stagesOf(loaded.schedule, r).length === 1 ? '' : 's'} ${stagesOf(loaded.schedule, r).join(',')}; ${count(s.actionsPerRank[r], 'action')}`);
  }
  io.out(lines.join('\n') + '\n');
  return EXIT_OK;
}
