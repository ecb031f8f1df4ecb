/** The flags that pick a schedule, shared by `schedule` and `simulate`. */
import { ConfigError } from '../util/errors.ts';
import {
  MAX_MICROBATCHES,
  MAX_RANKS,
  MAX_VIRTUAL,
  SCHEDULE_NAMES,
  SCHEDULES,
  generateSchedule,
  scheduleKind,
  type Schedule,
} from '../schedule/index.ts';
import { intFlag, oneOfFlag, UsageError, type FlagSpec, type ParsedArgs } from './args.ts';

export const SCHEDULE_FLAGS: FlagSpec[] = [
  { name: 'schedule', value: 'NAME', help: `one of ${SCHEDULE_NAMES.join(', ')} (default 1f1b)` },
  { name: 'ranks', value: 'P', help: `pipeline width p, the number of workers (default 4, at most ${MAX_RANKS})` },
  { name: 'microbatches', value: 'M', help: `micro-batches per step (default 8, at most ${MAX_MICROBATCHES})` },
  {
    name: 'virtual',
    value: 'V',
    help: `stages per rank, so p·v stages (default 1; 2 for zb-v and dualpipe-v; > 1 only for ${SCHEDULE_NAMES.filter((n) => SCHEDULES[n].acceptsVirtual).join(', ')}; at most ${MAX_VIRTUAL})`,
  },
];

export interface PickedSchedule {
  schedule: Schedule;
  virtual: number;
}

/** Generates the schedule the flags name; ConfigErrors of the generator are reported under the flag's name. */
export function scheduleFromFlags(a: ParsedArgs): PickedSchedule {
  const name = oneOfFlag(a, 'schedule', SCHEDULE_NAMES) ?? '1f1b';
  const ranks = intFlag(a, 'ranks', 1, MAX_RANKS) ?? 4;
  const microbatches = intFlag(a, 'microbatches', 1, MAX_MICROBATCHES) ?? 8;
  const virtual = intFlag(a, 'virtual', 1, MAX_VIRTUAL) ?? scheduleKind(name).defaultVirtual;
  try {
    return { schedule: generateSchedule(name, ranks, microbatches, virtual), virtual };
  } catch (e) {
    if (e instanceof ConfigError && ['ranks', 'microbatches', 'virtual'].includes(e.field)) {
      throw new UsageError(`--${e.field}`, e.value, `${e.rule} (with --schedule ${name})`);
    }
    throw e;
  }
}
