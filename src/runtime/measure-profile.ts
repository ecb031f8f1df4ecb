/**
 * The profiling pass: a short real run with one block per stage and one stage
 * per rank under ZB-H1 (so F, I and W are each timed apart) and one
 * micro-batch per step (so the ranks take turns and an op's time is its own,
 * not shared), on one device per stage whatever the run's mesh (whole blocks,
 * as a profile's `blocks` are: the planner adds replicas and tp), read back as
 * a Profile:
 *
 *   F, I, W      the run's mean time per stage and op: the GPU's own time from
 *                timestamp queries where the adapter has them, wall time
 *                otherwise;
 *   heldBytes    the stage's peak stash, one micro-batch's worth (m = 1);
 *   heldBytesRecompute  the block's input, rows × columns × 4 bytes (what a
 *                recomputing stage keeps);
 *   paramBytes   the block's weights, 4 bytes a value (the model's count);
 *   workBytes    the temporaries the block's worker held at its
 *                allocator's high-water mark (its steady state): a
 *                backward's received gradient and working set;
 *   comm[b]      readback + send + transfer + upload across boundary b, per
 *                crossing;
 *   lanes        the device's effective lanes (how many ranks compute at full
 *                speed at once), from a second short run on the configured
 *                ranks under GPipe with as many micro-batches as ranks, where
 *                every rank computes at once in the middle: the k whose
 *                shared-device play of that run's op times gives its measured
 *                makespan (prediction-check.ts). The simulator's "this
 *                machine" prediction takes it. (Fewer lanes per rank as more
 *                workers share the machine: on 2 cores here, k ≈ 1.8 with 4
 *                ranks, ≈ 1.1 with 5.)
 *
 * `measureProfile` takes the runner (the browser's workers, or the in-process
 * CPU runtime in tests), so it runs wherever a pipeline runs.
 */
import { blockInCols, layerParamCount, type ModelSpec } from '../nn/model-spec.ts';
import type { RunReport } from './report/index.ts';
import { MAX_RUN_RANKS, withoutCut, type RunConfig } from '../config/run-config.ts';
import { planRun } from './executor/index.ts';
import type { Op } from '../schedule/index.ts';
import { ConfigError } from '../util/errors.ts';
import { PROFILE_VERSION, type BlockProfile, type Profile } from '../plan/profile.ts';
import { fitLanes, laneCandidates, recordedRunOf } from '../plan/prediction-check.ts';

const COMM_COST: ReadonlySet<string> = new Set(['readback', 'transfer', 'upload', 'send']);

/** Steps of a profiling run; the first warms caches and is left out of the report's means. */
export const PROFILE_STEPS = 4;

/** The model a run configuration trains (its blocks do not depend on ranks or schedule). */
export function modelSpecOf(cfg: RunConfig): ModelSpec {
  return planRun({ ...withoutCut(cfg), schedule: '1f1b', ranks: 1, virtual: 1 }).spec;
}

/**
 * Rows of one micro-batch of `cfg` on one pipeline: the global batch over its dp replicas and m micro-batches (what
 * one worker computes at a time; tp workers share those rows), as the PyTorch bundle's rowsPerMicrobatch.
 */
export function rowsPerMicrobatch(cfg: RunConfig): number {
  return Math.max(1, Math.floor(cfg.batchSize / (cfg.dp * cfg.microbatches)));
}

/**
 * `cfg` on one device per stage: no replicas, no tp, no sharding. A profile times whole blocks (what the planner's
 * `blocks` are): the data-parallel and tp collectives and pieces are the plan's to add (profile.ts), so the
 * profiling runs leave them out, whatever mesh the Train view is set to.
 */
function onOneDevicePerStage(cfg: RunConfig): RunConfig {
  const { sequenceParallel: _sp, ...rest } = withoutCut(cfg);
  return { ...rest, dp: 1, tp: 1, zero: 0 };
}

/** The run that profiles `cfg`'s model: ZB-H1, one block per rank, one micro-batch of cfg's micro-batch size, no dp or tp. */
export function profilingConfig(cfg: RunConfig): RunConfig {
  const blocks = modelSpecOf(cfg).blocks.length;
  if (blocks > MAX_RUN_RANKS) {
    throw new ConfigError('layers', cfg.layers, `gives ${blocks} blocks; the profiling pass runs one block per rank, at most ${MAX_RUN_RANKS}`);
  }
  return { ...onOneDevicePerStage(cfg), schedule: 'zb-h1', ranks: blocks, virtual: 1, microbatches: 1, batchSize: rowsPerMicrobatch(cfg), steps: PROFILE_STEPS, evalEvery: 0, recompute: false };
}

/** Steps of the lanes probe; the first warms caches and is left out. */
export const LANES_PROBE_STEPS = 6;

/**
 * The run that measures the device's lanes: the configured model on the
 * configured ranks (effective lanes fall as more workers share the machine, so
 * they are measured with as many ranks as the run will have), one stage per
 * rank, under GPipe with as many micro-batches (of the configured size) as
 * ranks, on one pipeline: the fit replays the pipeline alone
 * (prediction-check.ts), with no replicas' or tp workers' collectives in it.
 */
export function lanesProbeConfig(cfg: RunConfig): RunConfig {
  const rows = rowsPerMicrobatch(cfg);
  return { ...onOneDevicePerStage(cfg), schedule: 'gpipe', virtual: 1, microbatches: cfg.ranks, batchSize: rows * cfg.ranks, steps: LANES_PROBE_STEPS, evalEvery: 0, recompute: false };
}

/** The lanes that make the shared-device play of `report` (a run of lanesProbeConfig) take its measured makespan. */
export function lanesFromReport(report: RunReport): number {
  return fitLanes([recordedRunOf(report)], laneCandidates(report.config.ranks));
}

/** Per-boundary communication per crossing, from the report's last timeline; the report's mean where a boundary shows none. */
function commPerBoundary(report: RunReport): number[] {
  const n = report.schedule.stages;
  const time = new Array<number>(Math.max(0, n - 1)).fill(0);
  const crossings = new Array<number>(Math.max(0, n - 1)).fill(0);
  for (const iv of report.timeline.intervals) {
    if (iv.op !== 'comm' || !iv.comm || !COMM_COST.has(iv.comm) || iv.peer === undefined) continue;
    const peerStage = report.schedule.stageToRank.indexOf(iv.peer);
    const b = Math.min(iv.stage, peerStage);
    if (b < 0 || b >= n - 1) continue;
    time[b] += iv.end - iv.start;
    if (iv.comm === 'transfer') crossings[b]++;
  }
  return time.map((t, b) => (crossings[b] > 0 ? t / crossings[b] : report.commMsPerCrossing));
}

/** The profile a profiling run measured (`report` of a run of profilingConfig). */
export function profileFromReport(report: RunReport): Profile {
  const cfg = report.config;
  const plan = planRun(cfg);
  const rows = cfg.batchSize / cfg.microbatches;
  const n = plan.spec.blocks.length;
  if (report.schedule.stages !== n || report.stageBlocks.some(([a, b], s) => a !== s || b !== s + 1)) {
    throw new ConfigError('report.stageBlocks', report.stageBlocks, 'must hold one block per stage: profile a run of profilingConfig(config)');
  }
  const timed = (s: number, op: Op): number => {
    const gpu = report.meanGpuOpMs?.[s]?.[op];
    const wall = report.meanOpMs[s]?.[op];
    const t = gpu !== undefined && gpu > 0 ? gpu : wall;
    if (t === undefined) throw new ConfigError(`report.meanOpMs[${s}].${op}`, t, 'is missing: the profiling run must time F, I and W of every stage (ZB-H1)');
    return t;
  };
  const blocks: BlockProfile[] = plan.spec.blocks.map((blk, s) => {
    const I = timed(s, 'I');
    const W = timed(s, 'W');
    const held = report.peakStashBytes[s] ?? 0;
    const paramBytes = 4 * blk.layers.reduce((n, l) => n + layerParamCount(l), 0);
    const m = report.heldBytesPerWorker[s]?.measured;
    const work = m ? { workBytes: m.byKind.gathered + m.byKind.staging + m.byKind.temp } : {};
    return { name: blk.name, F: timed(s, 'F'), I, W, B: I + W, heldBytes: held, heldBytesRecompute: Math.min(held, blockInCols(blk) * rows * 4), paramBytes, ...work };
  });
  const gpu = report.meanGpuOpMs !== undefined && Object.keys(report.meanGpuOpMs).length > 0;
  return {
    version: PROFILE_VERSION,
    unit: 'ms',
    source: `measured on ${report.adapter} (${gpu ? 'GPU timestamps' : 'wall time'}), ${rows} rows per micro-batch`,
    blocks,
    comm: commPerBoundary(report),
  };
}

/** Runs the profiling pass of `cfg` with `run` (the profiling run, then the lanes probe) and reads the profile back. */
export async function measureProfile(cfg: RunConfig, run: (c: RunConfig) => Promise<RunReport>): Promise<Profile> {
  const profile = profileFromReport(await run(profilingConfig(cfg)));
  // One rank shares nothing: no lanes to measure.
  if (cfg.ranks < 2) return profile;
  const lanes = lanesFromReport(await run(lanesProbeConfig(cfg)));
  return { ...profile, lanes, source: `${profile.source}; ${lanes} effective lanes with ${cfg.ranks} ranks at once (GPipe, ${cfg.ranks} micro-batches)` };
}
