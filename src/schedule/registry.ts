/**
 * The named schedules, what each accepts, and `generateSchedule`, the one
 * door that checks parameters before generating.
 */
import { ConfigError, requireInt, requireOneOf } from '../util/errors.ts';
import { gpipe } from './generators/gpipe.ts';
import { interleaved1F1B } from './generators/interleaved.ts';
import { interleavedZeroBubble } from './generators/interleaved-zb.ts';
import { loopedBfs } from './generators/looped-bfs.ts';
import { oneFOneB } from './generators/one-f-one-b.ts';
import { zbH1 } from './generators/zb-h1.ts';
import { zbV } from './generators/zb-v.ts';
import { dualPipeV } from './generators/dualpipe-v.ts';
import { dualPipe } from './generators/dualpipe.ts';
import { autoSchedule } from './generators/auto.ts';
import { hanayo } from './generators/hanayo.ts';
import type { Placement } from './placement.ts';
import type { Schedule } from './types.ts';

/** The synchronous schedules: one schedule per step, then a flush. */
export const SCHEDULE_NAMES = ['gpipe', '1f1b', 'interleaved-1f1b', 'zb-h1', 'interleaved-zb', 'zb-v', 'looped-bfs', 'dualpipe-v', 'dualpipe', 'hanayo', 'auto'] as const;
export type ScheduleName = (typeof SCHEDULE_NAMES)[number];
/** Every schedule a run can use: the synchronous ones, PipeDream's asynchronous 1F1B and PipeDream-2BW. */
export const RUN_SCHEDULE_NAMES = [...SCHEDULE_NAMES, 'pipedream', 'pipedream-2bw'] as const;
export type RunScheduleName = (typeof RUN_SCHEDULE_NAMES)[number];

/**
 * How a schedule updates the weights. 'flush': gradients accumulate over the
 * step's micro-batches and the optimizer runs once at the end of each step.
 * 'stash-and-update-after-backward' (PipeDream): no flush; each stage applies
 * its optimizer after every backward and keeps ("stashes") the weight version
 * each in-flight micro-batch's forward used, so the whole run is one stream.
 * 'double-buffered' (PipeDream-2BW): no flush; a stage accumulates the
 * gradients of each block of m micro-batches (a step's batch) and, after the
 * block's last backward, applies them to its latest weights; micro-batches run
 * forward and backward on the version before the latest (one step stale), so a
 * stage keeps at most two versions; the whole run is one stream.
 */
export type UpdatePolicyName = 'flush' | 'stash-and-update-after-backward' | 'double-buffered';

/** What a run's window is under an update policy. */
export interface UpdateWindows {
  /** Schedules the run executes one after the other (steps for 'flush', 1 for a stream). */
  windows(steps: number): number;
  /** Micro-batches one window's schedule holds. */
  microbatches(microbatchesPerStep: number, steps: number): number;
  /** True when one window spans every step (micro-batches are numbered across steps; no per-step closed form). */
  stream: boolean;
  /** Weight versions a stage holds beyond its current weights, at most (stashed for in-flight micro-batches). */
  extraWeightVersions(ranks: number): number;
  /**
   * What a micro-batch's loss is divided by: 'step', the targets of its step's whole batch (the gradients of a
   * step's micro-batches add up to the batch mean before one update); 'microbatch', its own targets (each
   * micro-batch is its own update).
   */
  lossOver: 'step' | 'microbatch';
}

export const UPDATE_WINDOWS: Readonly<Record<UpdatePolicyName, UpdateWindows>> = {
  flush: { windows: (steps) => steps, microbatches: (m) => m, stream: false, extraWeightVersions: () => 0, lossOver: 'step' },
  'stash-and-update-after-backward': { windows: () => 1, microbatches: (m, steps) => m * steps, stream: true, extraWeightVersions: (ranks) => ranks - 1, lossOver: 'microbatch' },
  'double-buffered': { windows: () => 1, microbatches: (m, steps) => m * steps, stream: true, extraWeightVersions: () => 1, lossOver: 'step' },
};

/**
 * After which backwards of a stage its update policy next reads the weight gradients (to sum them over the
 * replicas, shard them or step the optimizer): the `every` of tp-cost.ts gradSumActions. Gradients a worker holds
 * in part must be whole by then: sequence parallelism's LayerNorm gradients, each tp worker's over its block of the
 * token rows, are summed over the tp group there (Stage.sumGradsOverTp, as Megatron does once before the
 * optimizer), and the simulator and the PyTorch export play the sum at the same actions.
 * - 'flush' (ZeRO 0 and 1): undefined, the stage's last B or W of the step (flush.ts);
 * - 'flush' with ZeRO-2 or 3 beside replicas: 1, every B and W (sharded-step.ts reduce-scatters each);
 * - 'stash-and-update-after-backward' (PipeDream): 1, every B (its update);
 * - 'double-buffered' (PipeDream-2BW): `microbatches`, each block's last B.
 */
export function gradSumEvery(update: UpdatePolicyName, mesh: { dp: number; zero: number }, microbatches: number): number | undefined {
  if (update === 'double-buffered') return microbatches;
  if (update === 'stash-and-update-after-backward' || (mesh.dp > 1 && mesh.zero >= 2)) return 1;
  return undefined;
}

/** Whether a run of this schedule is one stream of all its steps (PipeDream, PipeDream-2BW) rather than a window per step. */
export function runsAsStream(name: RunScheduleName): boolean {
  return UPDATE_WINDOWS[scheduleKind(name).update].stream;
}

/**
 * Whether a run of this schedule saves checkpoints: every synchronous schedule between its steps, PipeDream-2BW inside
 * its stream (as its stages end a saved step's block: runtime/stream-checkpoint.ts); not PipeDream, whose stages hold a
 * weight version per micro-batch in flight and never meet at a step.
 */
export function savesCheckpoints(name: RunScheduleName): boolean {
  return scheduleKind(name).update !== 'stash-and-update-after-backward';
}

/** Whether a run's state holds a weight version beside its latest (PipeDream-2BW's W(t − 1), after its first update): its stream resumes from it. */
export function keepsPreviousVersion(name: RunScheduleName): boolean {
  return scheduleKind(name).update === 'double-buffered';
}

/** The stage costs the registry's `auto` plans for: equal stages, B = I + W. */
export const DEFAULT_AUTO_COSTS = { F: 1, I: 1, W: 1, B: 2 } as const;

export const MAX_RANKS = 1024;
export const MAX_VIRTUAL = 64;
export const MAX_MICROBATCHES = 65536;
/** Upper bound on F+B(+I+W) actions one schedule may hold, so a typo cannot exhaust memory. */
export const MAX_ACTIONS = 1 << 24;

export interface ScheduleKind {
  name: RunScheduleName;
  /** One line for people. */
  title: string;
  /** Where it comes from. */
  source: string;
  /** True when the backward is split into I and W (for some or all micro-batches). */
  splitBackward: boolean;
  /** Whether v > 1 stages per rank is accepted (the V placements, zb-v and dualpipe-v, need exactly 2; hanayo any even v, 2 per wave). */
  acceptsVirtual: boolean;
  /** v used when the caller gives none. */
  defaultVirtual: number;
  /** What v steps by in a form: 2 for hanayo (2 stages per rank in each wave), 1 otherwise. */
  virtualStep: number;
  /** The v this schedule runs with when `requested` is asked for (zb-v: 2; hanayo: the even v at or above it; one-stage schedules: 1). */
  virtualFor(requested: number): number;
  /**
   * Over how many chunks a rank's per-op cost is split for the simulator: v
   * for chunked schedules; 1 for zb-v, whose two stages are each a full stage.
   */
  costChunks(virtual: number): number;
  /** How the weights are updated (see UpdatePolicyName). */
  update: UpdatePolicyName;
  /** The synchronous schedule whose closed forms describe one step of this one (itself for those). */
  theoryAs: ScheduleName;
  /** True when a run builds it from its measured or estimated stage costs (src/plan), not from p and m alone. */
  fromStageCosts: boolean;
  /**
   * Copies of the whole model it runs (Schedule.copies; DualPipe: 2, the others 1): the model is cut into
   * ranks × virtual stages and each rank holds copies × virtual of them; the copies' gradients of a stage are
   * summed at the flush (runtime/policies/copy-sum.ts).
   */
  copies: number;
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

/** Stages per rank a schedule takes: exactly one, any v ≥ 1, any even v (hanayo: 2 per wave), or a fixed count (zb-v's V: 2). */
type VirtualRule = 'one' | 'any' | 'even' | { fixed: number };

interface KindDecl {
  name: RunScheduleName;
  title: string;
  source: string;
  splitBackward: boolean;
  virtual: VirtualRule;
  generate: ScheduleKind['generate'];
  /** Schedule-specific rules beyond the common ones and the virtual rule. */
  check?: (ranks: number, microbatches: number, virtual: number) => void;
  placement?: Placement;
  update?: UpdatePolicyName;
  theoryAs?: ScheduleName;
  costChunks?: ScheduleKind['costChunks'];
  fromStageCosts?: boolean;
  copies?: number;
}

/** A schedule kind from its declaration: each rule (virtual stages, checks, policy) is declared once, here turned into fields. */
function kind(d: KindDecl): ScheduleKind {
  const rule = d.virtual;
  const fixed = typeof rule === 'object' ? rule.fixed : null;
  return {
    name: d.name,
    title: d.title,
    source: d.source,
    splitBackward: d.splitBackward,
    acceptsVirtual: rule !== 'one',
    defaultVirtual: fixed ?? (rule === 'even' ? 2 : 1),
    virtualStep: rule === 'even' ? 2 : 1,
    virtualFor: (requested) => (fixed !== null ? fixed : rule === 'any' ? requested : rule === 'even' ? Math.min(MAX_VIRTUAL, 2 * Math.ceil(requested / 2)) : 1),
    costChunks: d.costChunks ?? ((v) => v),
    update: d.update ?? 'flush',
    theoryAs: d.theoryAs ?? (d.name as ScheduleName),
    fromStageCosts: d.fromStageCosts ?? false,
    copies: d.copies ?? 1,
    placement: d.placement ?? 'loop',
    validateParams(p, m, v) {
      requireCommon(p, m, v, d.splitBackward ? 3 : 2);
      if (rule === 'one' && v !== 1) {
        throw new ConfigError('virtual', v, `${d.name} holds one stage per rank, so virtual must be 1 (interleaved-1f1b, interleaved-zb and looped-bfs accept more)`);
      }
      if (fixed !== null && v !== fixed) throw new ConfigError('virtual', v, `${d.name} holds exactly ${fixed} stages per rank (a V), so virtual must be ${fixed}`);
      if (rule === 'even' && v % 2 !== 0) {
        throw new ConfigError('virtual', v, `${d.name} holds 2 stages per rank in each of its W waves (down the ranks and back up), so virtual = 2W must be even (2, 4, …)`);
      }
      d.check?.(p, m, v);
    },
    generate: d.generate,
  };
}

export const SCHEDULES: Readonly<Record<RunScheduleName, ScheduleKind>> = {
  gpipe: kind({
    name: 'gpipe',
    title: 'GPipe: all forwards, then all backwards',
    source: 'Huang et al., 2019, arXiv:1811.06965',
    splitBackward: false,
    virtual: 'one',
    generate: (p, m) => gpipe(p, m),
  }),
  '1f1b': kind({
    name: '1f1b',
    title: '1F1B (PipeDream-flush): warm-up, one forward one backward, cool-down',
    source: 'Narayanan et al., 2021, arXiv:2006.09503; Megatron-LM',
    splitBackward: false,
    virtual: 'one',
    generate: (p, m) => oneFOneB(p, m),
  }),
  'interleaved-1f1b': kind({
    name: 'interleaved-1f1b',
    title: 'Interleaved 1F1B: v model chunks per rank, looped placement',
    source: 'Narayanan et al., SC 2021, arXiv:2104.04473; Megatron-LM',
    splitBackward: false,
    virtual: 'any',
    // Any m: rounds of at least p micro-batches (one round of m when m < p); generators/interleaved.ts.
    generate: (p, m, v) => interleaved1F1B(p, m, v),
  }),
  'zb-h1': kind({
    name: 'zb-h1',
    title: 'ZB-H1: 1F1B with B split into I and W, W filling the cool-down',
    source: 'Qi et al., ICLR 2024, arXiv:2401.10241',
    splitBackward: true,
    virtual: 'one',
    generate: (p, m) => zbH1(p, m),
  }),
  'interleaved-zb': kind({
    name: 'interleaved-zb',
    title: 'Interleaved zero bubble: interleaved 1F1B with B split into I and W, W’s deferred into the cool-down',
    source: 'after Qi et al., ICLR 2024, arXiv:2401.10241, section 3.1, on Narayanan et al., SC 2021 (generators/interleaved-zb.ts)',
    splitBackward: true,
    virtual: 'any',
    // Any m, as interleaved-1f1b: its F's and I's keep that order; rank r's W's trail its I's by r.
    generate: (p, m, v) => interleavedZeroBubble(p, m, v),
  }),
  'zb-v': kind({
    name: 'zb-v',
    title: 'ZB-V: two stages per rank in a V, B split into I and W',
    source: 'Qi et al., ICLR 2024, arXiv:2401.10241, section 6',
    splitBackward: true,
    virtual: { fixed: 2 },
    placement: 'v',
    // Its two stages are each a full stage in theory.ts, not chunks of one.
    costChunks: () => 1,
    generate: (p, m) => zbV(p, m),
  }),
  'looped-bfs': kind({
    name: 'looped-bfs',
    title: 'Looped BFS: breadth-first over v chunks per rank',
    source: 'Lamy-Poirier, 2022, arXiv:2211.05953',
    splitBackward: false,
    virtual: 'any',
    generate: (p, m, v) => loopedBfs(p, m, v),
  }),
  'dualpipe-v': kind({
    name: 'dualpipe-v',
    title: 'DualPipe-V: two stages per rank in a V, F and B of different micro-batches side by side',
    source: 'DeepSeek-AI, 2024, arXiv:2412.19437; github.com/deepseek-ai/DualPipe (DualPipeV)',
    splitBackward: true,
    virtual: { fixed: 2 },
    placement: 'v',
    // Its two stages are each a full stage in theory.ts, not chunks of one.
    costChunks: () => 1,
    generate: (p, m) => dualPipeV(p, m),
  }),
  dualpipe: kind({
    name: 'dualpipe',
    title: 'DualPipe: two model copies fed from both ends, F and B of the two directions side by side',
    source: 'DeepSeek-AI, 2024, arXiv:2412.19437, section 3.2.1; github.com/deepseek-ai/DualPipe (DualPipe)',
    splitBackward: true,
    // One stage of the model's p per rank and copy: rank r holds stage r of copy 0 and p − 1 − r of copy 1.
    virtual: 'one',
    copies: 2,
    placement: 'v',
    // Each of a rank's two stages (one per copy) is a full stage of the model's p, not a chunk of one.
    costChunks: () => 1,
    check: (p, m) => {
      if (p % 2 !== 0) throw new ConfigError('ranks', p, 'DualPipe needs an even number of ranks: its two copies meet in the middle, rank r pairing with rank p − 1 − r');
      if (m % 2 !== 0 || m < 2 * p) {
        throw new ConfigError('microbatches', m, `DualPipe needs an even m ≥ 2p = ${2 * p} (half of the micro-batches enter each copy; dualpipe.py asserts num_chunks % 2 == 0 and num_chunks >= 2 · num_ranks)`);
      }
    },
    generate: (p, m) => dualPipe(p, m),
  }),
  hanayo: kind({
    name: 'hanayo',
    title: 'Hanayo: W waves, the model zig-zagging down the ranks and back up W times, 1F1B-style over the waves',
    source: 'after Liu et al., SC 2023 (Hanayo), from its public description, not transcribed from the paper (generators/hanayo.ts)',
    splitBackward: false,
    // v = 2W: two stages per rank in each wave; the waves are how many V's the model makes.
    virtual: 'even',
    placement: 'v',
    generate: (p, m, v) => hanayo(p, m, v / 2),
  }),
  auto: kind({
    name: 'auto',
    title: 'Auto: the fastest schedule found within a memory cap, from the stage costs',
    source: 'after Qi et al., ICLR 2024, arXiv:2401.10241, section 4 (generators/auto.ts)',
    splitBackward: true,
    virtual: 'one',
    fromStageCosts: true,
    // Through this door: equal stages (F = I = W = 1) and 1F1B's memory, p micro-batches per rank. With a
    // profile's costs and another cap, call autoSchedule (src/plan, `pipelab plan`).
    generate: (p, m) => autoSchedule(p, m, DEFAULT_AUTO_COSTS, { microbatches: p }).schedule,
  }),
  pipedream: kind({
    name: 'pipedream',
    title: 'PipeDream: asynchronous 1F1B with weight stashing, no flush between steps',
    source: 'Narayanan et al., SOSP 2019, arXiv:1806.03377',
    splitBackward: false,
    virtual: 'one',
    update: 'stash-and-update-after-backward',
    theoryAs: '1f1b',
    generate: (p, m) => ({ ...oneFOneB(p, m), name: 'pipedream' }),
  }),
  'pipedream-2bw': kind({
    name: 'pipedream-2bw',
    title: 'PipeDream-2BW: asynchronous 1F1B, double-buffered weights updated every m micro-batches, one version stale',
    source: 'Narayanan et al., ICML 2021, arXiv:2006.09503, section 3.1',
    splitBackward: false,
    virtual: 'one',
    update: 'double-buffered',
    theoryAs: '1f1b',
    // m is the micro-batches of one step here (validateRunConfig); a run's window holds steps × m (planRun), never fewer.
    check: (p, m) => {
      if (m < p) {
        throw new ConfigError(
          'microbatches',
          m,
          `PipeDream-2BW needs m ≥ p = ${p}: a stage makes a new weight version every m micro-batches and keeps at most two, so a block of m micro-batches must cover the p − 1 forwards the first stage runs ahead`,
        );
      }
    },
    generate: (p, m) => ({ ...oneFOneB(p, m), name: 'pipedream-2bw' }),
  }),
};

/** The kind of any schedule a run can use (PipeDream and PipeDream-2BW included). */
export function scheduleKind(name: unknown): ScheduleKind {
  return SCHEDULES[requireOneOf('schedule', name, RUN_SCHEDULE_NAMES)];
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

/** The micro-batches of a run's window of `steps` steps: one step's, or a stream's (PipeDream, 2BW) steps × m. */
export function windowMicrobatches(name: string, microbatches: number, steps: number): number {
  return UPDATE_WINDOWS[scheduleKind(name).update].microbatches(microbatches, steps);
}

/**
 * A run's window of `steps` steps of `microbatches` each: one step's schedule for a flushing schedule, all the steps
 * as one stream for PipeDream and PipeDream-2BW (never flushed: steps × m micro-batches in one order). The rules of
 * a step (2BW's m ≥ p) are checked on its own m.
 */
export function generateWindow(name: string, ranks: number, microbatches: number, steps: number, virtual?: number): Schedule {
  const kind = scheduleKind(name);
  const v = virtual ?? kind.defaultVirtual;
  kind.validateParams(ranks, microbatches, v);
  return generateSchedule(name, ranks, windowMicrobatches(name, microbatches, steps), v);
}
