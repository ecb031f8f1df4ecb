/** The flags that pick a schedule, shared by `schedule` and `simulate`. */
import { ConfigError } from '../util/errors.ts';
import {
  MAX_MICROBATCHES,
  MAX_RANKS,
  MAX_VIRTUAL,
  RUN_SCHEDULE_NAMES,
  SCHEDULE_NAMES,
  SCHEDULES,
  generateWindow,
  runsAsStream,
  windowMicrobatches,
  scheduleKind,
  type Schedule,
} from '../schedule/index.ts';
import { intFlag, oneOfFlag, UsageError, type FlagSpec, type ParsedArgs } from './args.ts';

export const SCHEDULE_FLAGS: FlagSpec[] = [
  { name: 'schedule', value: 'NAME', help: `one of ${RUN_SCHEDULE_NAMES.join(', ')} (default 1f1b)` },
  { name: 'ranks', value: 'P', help: `pipeline width p, the number of workers (default 4, at most ${MAX_RANKS})` },
  { name: 'microbatches', value: 'M', help: `micro-batches per step (default 8, at most ${MAX_MICROBATCHES})` },
  {
    name: 'virtual',
    value: 'V',
    help: `stages per rank, so p·v stages (default 1; 2 for zb-v and dualpipe-v; hanayo: 2W for W waves, default 2; > 1 only for ${SCHEDULE_NAMES.filter((n) => SCHEDULES[n].acceptsVirtual).join(', ')}; at most ${MAX_VIRTUAL})`,
  },
  { name: 'steps', value: 'S', help: 'pipedream and pipedream-2bw only: they never flush, so S steps of M micro-batches are one order, a stream of S·M (default 1); simulate --file: read the file as such a stream of S steps (PipeDream-2BW\'s; with --dp, an all-reduce after each block)' },
];

export interface PickedSchedule {
  schedule: Schedule;
  virtual: number;
  /** The schedule whose closed form holds (a stream's is 1F1B's over all its micro-batches). */
  theoryAs: string;
  /** A stream's steps (PipeDream, 2BW); absent for a flushing schedule, whose order is one step's. */
  streamSteps?: number;
}

/** Generates the schedule the flags name; ConfigErrors of the generator are reported under the flag's name. */
export function scheduleFromFlags(a: ParsedArgs): PickedSchedule {
  const name = oneOfFlag(a, 'schedule', RUN_SCHEDULE_NAMES) ?? '1f1b';
  const ranks = intFlag(a, 'ranks', 1, MAX_RANKS) ?? 4;
  const microbatches = intFlag(a, 'microbatches', 1, MAX_MICROBATCHES) ?? 8;
  const virtual = intFlag(a, 'virtual', 1, MAX_VIRTUAL) ?? scheduleKind(name).defaultVirtual;
  const stream = runsAsStream(name);
  const stepsGiven = intFlag(a, 'steps', 1, MAX_MICROBATCHES);
  if (stepsGiven !== undefined && !stream) {
    throw new UsageError('--steps', stepsGiven, `applies to pipedream and pipedream-2bw only, whose steps run as one stream; ${name} flushes every step, so its order is one step's (with --schedule ${name})`);
  }
  const steps = stepsGiven ?? 1;
  const window = windowMicrobatches(name, microbatches, steps);
  if (window > MAX_MICROBATCHES) {
    throw new UsageError('--steps', steps, `a stream of ${steps} steps × ${microbatches} micro-batches holds ${window}; at most ${MAX_MICROBATCHES} (--steps ≤ ${Math.floor(MAX_MICROBATCHES / microbatches)})`);
  }
  try {
    const schedule = generateWindow(name, ranks, microbatches, steps, virtual);
    return { schedule, virtual, theoryAs: scheduleKind(name).theoryAs, ...(stream ? { streamSteps: steps } : {}) };
  } catch (e) {
    if (e instanceof ConfigError && ['ranks', 'microbatches', 'virtual'].includes(e.field)) {
      // A stream's size rule (the most actions) is broken by its steps × micro-batches.
      const field = stream && e.field === 'microbatches' && e.value !== microbatches ? 'steps' : e.field;
      throw new UsageError(`--${field}`, field === 'steps' ? steps : e.value, `${e.rule} (with --schedule ${name}${stream ? `, a stream of ${steps} × ${microbatches} micro-batches` : ''})`);
    }
    throw e;
  }
}
