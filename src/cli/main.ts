/**
 * `pipelab`, the command-line front door to the pure side of schedules:
 * `schedule`, `simulate`, `validate`, `plan`, and `export-torch` (a run as a PyTorch program). bin/pipelab.mjs runs `runCli` under tsx.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { ConfigError, cutForEcho } from '../util/errors.ts';
import { CsvError, RUN_SCHEDULE_NAMES, SCHEDULE_NAMES } from '../schedule/index.ts';
import { UsageError } from './args.ts';
import { EXIT_INVALID, EXIT_OK, EXIT_USAGE, type CliIo } from './io.ts';
import { planCommand } from './plan-command.ts';
import { exportTorchCommand } from './export-torch-command.ts';
import { scheduleCommand } from './schedule-command.ts';
import { simulateCommand } from './simulate-command.ts';
import { validateCommand } from './validate-command.ts';

const COMMANDS = {
  schedule: scheduleCommand,
  simulate: simulateCommand,
  validate: validateCommand,
  plan: planCommand,
  'export-torch': exportTorchCommand,
} as const;
type CommandName = keyof typeof COMMANDS;
const COMMAND_NAMES = Object.keys(COMMANDS) as CommandName[];

export const MAIN_HELP = `usage: pipelab <command> [flags]

PipeLab's pipeline schedules from the command line.

commands:
  schedule   generate a schedule; print it as PyTorch CSV, JSON or text
  simulate   play a schedule against a cost model: makespan, bubble, peak memory
  validate   check a schedule file (PyTorch CSV or JSON): complete, ordered, deadlock-free
  plan       from a profile: the split, and a schedule that fits a memory cap; with --model gpt: a transformer on N devices
  export-torch  write a run (model, stages, schedule, weights, batches) as a PyTorch program for torchrun

schedules: ${SCHEDULE_NAMES.join(', ')}
streams (asynchronous, never flushed; schedule and simulate with --steps S): ${RUN_SCHEDULE_NAMES.filter((n) => !(SCHEDULE_NAMES as readonly string[]).includes(n)).join(', ')}
\`pipelab <command> --help\` shows a command's flags.
exit codes: 0 done, 1 invalid or malformed schedule, 2 bad usage.
`;

export const nodeIo: CliIo = {
  out: (t) => void process.stdout.write(t),
  err: (t) => void process.stderr.write(t),
  readFile: (p) => readFileSync(p, 'utf8'),
  writeFile: (p, t) => {
    mkdirSync(dirname(p), { recursive: true });
    writeFileSync(p, t);
  },
};

export function runCli(argv: readonly string[], io: CliIo = nodeIo): number {
  const [command, ...rest] = argv;
  if (command === undefined) {
    io.err(MAIN_HELP);
    return EXIT_USAGE;
  }
  if (command === '--help' || command === '-h' || command === 'help') {
    const topic = rest[0];
    if (topic && topic in COMMANDS) return COMMANDS[topic as CommandName](['--help'], io);
    io.out(MAIN_HELP);
    return EXIT_OK;
  }
  if (!(command in COMMANDS)) {
    io.err(`pipelab: command = ${JSON.stringify(command)}: must be one of ${COMMAND_NAMES.join(', ')} (see pipelab --help)\n`);
    return EXIT_USAGE;
  }
  try {
    return COMMANDS[command as CommandName](rest, io);
  } catch (e) {
    if (e instanceof CsvError) {
      io.err(`pipelab ${command}: malformed CSV: ${e.message}\n`);
      return EXIT_INVALID;
    }
    if (e instanceof UsageError) {
      io.err(`pipelab ${command}: ${e.message}\n(see pipelab ${command} --help)\n`);
      return EXIT_USAGE;
    }
    if (e instanceof ConfigError) {
      // A file that parses but holds bad values (e.g. a malformed JSON schedule).
      io.err(`pipelab ${command}: ${e.message}\n`);
      return EXIT_INVALID;
    }
    // Anything else is our bug: one short line, no stack trace (PIPELAB_DEBUG=1 shows it).
    if (typeof process !== 'undefined' && process.env.PIPELAB_DEBUG) throw e;
    io.err(`pipelab ${command}: internal error: ${cutForEcho(e instanceof Error ? e.message : String(e), 200)} (PIPELAB_DEBUG=1 shows where)\n`);
    return EXIT_INVALID;
  }
}
