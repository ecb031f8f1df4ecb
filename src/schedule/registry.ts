/**
 * The named schedules, what each accepts, and `generateSchedule`, the one
 * door that checks parameters before generating.
 */
import { ConfigError, requireInt, requireOneOf } from '../util/errors.ts';
import { gpipe } from './generators/gpipe.ts';
import { interleaved1F1B } from './generators/interleaved.ts';
import { loopedBfs } from './generators/looped-bfs.ts';
import { oneFOneB } from './generators/one-f-one-b.ts';
import { zbH1 } from './generators/zb-h1.ts';
import { zbV } from './generators/zb-v.ts';
import { dualPipeV } from './generators/dualpipe-v.ts';
import { autoSchedule } from './generators/auto.ts';
import type { Placement } from './placement.ts';
import type { Schedule } from './types.ts';

export const SCHEDULE_NAMES = ['gpipe', '1f1b', 'interleaved-1f1b', 'zb-h1', 'zb-v', 'looped-bfs', 'dualpipe-v', 'auto'] as const;
export type ScheduleName = (typeof SCHEDULE_NAMES)[number];

/** The stage costs the registry's `auto` plans for: equal stages, B = I + W. */
export const DEFAULT_AUTO_COSTS = { F: 1, I: 1, W: 1, B: 2 } as const;

export const MAX_RANKS = 1024;
export const MAX_VIRTUAL = 64;
export const MAX_MICROBATCHES = 65536;
/** Upper bound on F+B(+I+W) actions one schedule may hold, so a typo cannot exhaust memory. */
export const MAX_ACTIONS = 1 << 24;

export interface ScheduleKind {
  name: ScheduleName;
  /** One line for people. */
  title: string;
  /** Where it comes from. */
  source: string;
  /** True when the backward is split into I and W (for some or all micro-batches). */
  splitBackward: boolean;
  /** Whether v > 1 stages per rank is accepted (the V placements, zb-v and dualpipe-v, need exactly 2). */
  acceptsVirtual: boolean;
  /** v used when the caller gives none. */
  defaultVirtual: number;
  placement: Placement;
  /** Throws ConfigError naming the field (ranks, microbatches, virtual) and the rule it broke. */
  validateParams(ranks: number, microbatches: number, virtual: number): void;
  /** Pure; assumes validateParams passed. */
  generate(ranks: number, microbatches: number, virtual: number): Schedule;
}

function requireCommon(ranks: number, microbatches: number, virtual: number, opsPerMb: number): void {
  requireInt('ranks', ranks, 1, MAX_RANKS);
  requireInt('microbatches', microbatches, 1, MAX_MICROBATCHES);
  requireInt('virtual', virtual, 1, MAX_VIRTUAL);
  const actions = ranks * virtual * microbatches * opsPerMb;
  if (actions > MAX_ACTIONS) {
    throw new ConfigError(
      'microbatches',
      microbatches,
      `ranks · virtual · microbatches · ${opsPerMb} = ${actions} actions exceeds the limit of ${MAX_ACTIONS}`,
    );
  }
}

function requireTwoStagesPerRank(name: string, virtual: number): void {
  if (virtual !== 2) throw new ConfigError('virtual', virtual, `${name} holds exactly 2 stages per rank (a V), so virtual must be 2`);
}

function requireOneStagePerRank(name: string, virtual: number): void {
  if (virtual !== 1) {
    throw new ConfigError('virtual', virtual, `${name} holds one stage per rank, so virtual must be 1 (interleaved-1f1b and looped-bfs accept more)`);
  }
}

export const SCHEDULES: Readonly<Record<ScheduleName, ScheduleKind>> = {
  gpipe: {
    name: 'gpipe',
    title: 'GPipe: all forwards, then all backwards',
    source: 'Huang et al., 2019, arXiv:1811.06965',
    splitBackward: false,
    acceptsVirtual: false,
    defaultVirtual: 1,
    placement: 'loop',
    validateParams(p, m, v) {
      requireCommon(p, m, v, 2);
      requireOneStagePerRank('gpipe', v);
    },
    generate: (p, m) => gpipe(p, m),
  },
  '1f1b': {
    name: '1f1b',
    title: '1F1B (PipeDream-flush): warm-up, one forward one backward, cool-down',
    source: 'Narayanan et al., 2021, arXiv:2006.09503; Megatron-LM',
    splitBackward: false,
    acceptsVirtual: false,
    defaultVirtual: 1,
    placement: 'loop',
    validateParams(p, m, v) {
      requireCommon(p, m, v, 2);
      requireOneStagePerRank('1f1b', v);
    },
    generate: (p, m) => oneFOneB(p, m),
  },
  'interleaved-1f1b': {
    name: 'interleaved-1f1b',
    title: 'Interleaved 1F1B: v model chunks per rank, looped placement',
    source: 'Narayanan et al., SC 2021, arXiv:2104.04473; Megatron-LM',
    splitBackward: false,
    acceptsVirtual: true,
    defaultVirtual: 1,
    placement: 'loop',
    validateParams(p, m, v) {
      requireCommon(p, m, v, 2);
      if (m % p !== 0) {
        throw new ConfigError('microbatches', m, `interleaved-1f1b needs a multiple of ranks (${p}), as Megatron-LM does`);
      }
    },
    generate: (p, m, v) => interleaved1F1B(p, m, v),
  },
  'zb-h1': {
    name: 'zb-h1',
    title: 'ZB-H1: 1F1B with B split into I and W, W filling the cool-down',
    source: 'Qi et al., ICLR 2024, arXiv:2401.10241',
    splitBackward: true,
    acceptsVirtual: false,
    defaultVirtual: 1,
    placement: 'loop',
    validateParams(p, m, v) {
      requireCommon(p, m, v, 3);
      requireOneStagePerRank('zb-h1', v);
    },
    generate: (p, m) => zbH1(p, m),
  },
  'zb-v': {
    name: 'zb-v',
    title: 'ZB-V: two stages per rank in a V, B split into I and W',
    source: 'Qi et al., ICLR 2024, arXiv:2401.10241, section 6',
    splitBackward: true,
    acceptsVirtual: true,
    defaultVirtual: 2,
    placement: 'v',
    validateParams(p, m, v) {
      requireCommon(p, m, v, 3);
      requireTwoStagesPerRank('zb-v', v);
    },
    generate: (p, m) => zbV(p, m),
  },
  'looped-bfs': {
    name: 'looped-bfs',
    title: 'Looped BFS: breadth-first over v chunks per rank',
    source: 'Lamy-Poirier, 2022, arXiv:2211.05953',
    splitBackward: false,
    acceptsVirtual: true,
    defaultVirtual: 1,
    placement: 'loop',
    validateParams(p, m, v) {
      requireCommon(p, m, v, 2);
    },
    generate: (p, m, v) => loopedBfs(p, m, v),
  },
  'dualpipe-v': {
    name: 'dualpipe-v',
    title: 'DualPipe-V: two stages per rank in a V, F and B of different micro-batches side by side',
    source: 'DeepSeek-AI, 2024, arXiv:2412.19437; github.com/deepseek-ai/DualPipe (DualPipeV)',
    splitBackward: true,
    acceptsVirtual: true,
    defaultVirtual: 2,
    placement: 'v',
    validateParams(p, m, v) {
      requireCommon(p, m, v, 3);
      requireTwoStagesPerRank('dualpipe-v', v);
    },
    generate: (p, m) => dualPipeV(p, m),
  },
  auto: {
    name: 'auto',
    title: 'Auto: the fastest schedule found within a memory cap, from the stage costs',
    source: 'after Qi et al., ICLR 2024, arXiv:2401.10241, section 4 (generators/auto.ts)',
    splitBackward: true,
    acceptsVirtual: false,
    defaultVirtual: 1,
    placement: 'loop',
    validateParams(p, m, v) {
      requireCommon(p, m, v, 3);
      requireOneStagePerRank('auto', v);
    },
    // Through this door: equal stages (F = I = W = 1) and 1F1B's memory, p micro-batches per rank. With a
    // profile's costs and another cap, call autoSchedule (src/plan, `pipelab plan`).
    generate: (p, m) => autoSchedule(p, m, DEFAULT_AUTO_COSTS, { microbatches: p }).schedule,
  },
};

export function scheduleKind(name: unknown): ScheduleKind {
  return SCHEDULES[requireOneOf('schedule', name, SCHEDULE_NAMES)];
}

/**
 * Generates schedule `name` for `ranks` workers (pipeline width p),
 * `microbatches` micro-batches and `virtual` stages per rank (p·v stages; the
 * schedule's default when left out). Throws ConfigError for bad parameters.
 */
export function generateSchedule(name: string, ranks: number, microbatches: number, virtual?: number): Schedule {
  const kind = scheduleKind(name);
  const v = virtual ?? kind.defaultVirtual;
  kind.validateParams(ranks, microbatches, v);
  return kind.generate(ranks, microbatches, v);
}
