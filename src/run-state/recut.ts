/**
 * The smaller mesh a run recovers on with recovery = 'fewer' (the workers that
 * remain after one died). The rule, one step down:
 *
 *  - dp > 1: drop the dead worker's whole replica (dp − 1 replicas of the same
 *    pipeline) when the global batch stays divisible by (dp − 1) × microbatches;
 *    ZeRO-1 is turned off when one replica is left (it needs two);
 *  - otherwise, with ep even, an ep group half the size; with tp even, a tp group half the size;
 *  - otherwise ranks − 1 (every replica one rank shorter): the partitioner
 *    re-cuts the model's blocks onto (ranks − 1) × virtual stages (an explicit
 *    cut, which has one entry per stage, becomes the balanced-FLOPs cut), the
 *    schedule kept when it is valid at the new size, else 1F1B with one stage
 *    per rank;
 *  - ranks = 1 with no replica to drop: no smaller mesh, the run ends saying why.
 *
 * The model, the global batch and everything else the run trains stay; so do
 * its losses and weights (pipeline training equals one device, and every
 * replica's rows are a slice of the same batch), and the checkpoint's state
 * loads onto the new cut by parameter name.
 */
import { RunError } from '../runtime/coordinator.ts';
import { validateRunConfig, withoutCut, type RunConfig } from '../config/run-config.ts';
import type { MeshShape } from '../runtime/report/index.ts';
import { ConfigError } from '../util/errors.ts';

export interface Recut {
  /** The configuration to restart on: the smaller mesh, everything else as it was. */
  config: RunConfig;
  before: MeshShape;
  after: MeshShape;
  /** What changed and why, in words. */
  how: string;
}

/** The mesh of `cfg`, as the recovery record shows it. */
export function meshShape(cfg: RunConfig): MeshShape {
  const tp = cfg.tp ?? 1, ep = cfg.ep ?? 1;
  return { dp: cfg.dp, ...(tp > 1 ? { tp } : {}), ...(ep > 1 ? { ep } : {}), ranks: cfg.ranks, virtual: cfg.virtual, schedule: cfg.schedule, workers: cfg.dp * ep * tp * cfg.ranks };
}

/** "dp 2 × 2 ranks (4 workers)" / "3 ranks". */
export function meshText(m: MeshShape): string {
  const ranks = `${(m.ep ?? 1) > 1 ? `ep ${m.ep} × ` : ''}${(m.tp ?? 1) > 1 ? `tp ${m.tp} × ` : ''}${m.ranks} rank${m.ranks === 1 ? '' : 's'}`;
  const shape = m.dp > 1 ? `dp ${m.dp} × ${ranks}` : ranks;
  return `${shape}${m.virtual > 1 ? ` (v ${m.virtual})` : ''}, ${m.schedule}, ${m.workers} worker${m.workers === 1 ? '' : 's'}`;
}

function messageOf(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** One replica fewer, when dp > 1 and the batch stays divisible; else undefined and why not (or nothing when dp = 1). */
function fewerReplicas(cfg: RunConfig): { config?: RunConfig; whyNot?: string } {
  if (cfg.dp <= 1) return {};
  const dp = cfg.dp - 1;
  if (cfg.batchSize % (dp * cfg.microbatches) !== 0) {
    return { whyNot: `dropping a replica would leave batchSize ${cfg.batchSize} not divisible by dp × microbatches = ${dp} × ${cfg.microbatches}` };
  }
  return { config: { ...cfg, dp, zero: dp === 1 ? 0 : cfg.zero } };
}

/**
 * The configuration `cfg` recovers on with recovery = 'fewer' (the rule above),
 * or a RunError saying why there is none.
 */
export function fewerWorkers(run: RunConfig): Recut {
  // A test's injected fault fired once: it is not part of the configuration recovered on.
  const { fault: _fault, ...cfg } = run;
  const before = meshShape(cfg);
  const replicas = fewerReplicas(cfg);
  if (replicas.config) {
    validateRunConfig(replicas.config);
    const after = meshShape(replicas.config);
    const zeroOff = cfg.zero === 1 && replicas.config.zero === 0 ? '; ZeRO-1 off with one replica left' : '';
    return { config: replicas.config, before, after, how: `the dead worker's replica dropped: ${cfg.dp} → ${after.dp} replica${after.dp === 1 ? '' : 's'} of the same ${cfg.ranks}-rank pipeline, the same global batch of ${cfg.batchSize}${zeroOff}` };
  }
  const because = replicas.whyNot ? ` (${replicas.whyNot})` : '';
  // Next, an ep group half the size: each worker holds twice the experts and sequences (any ep resumes a checkpoint).
  const ep = cfg.ep ?? 1;
  if (ep > 1 && ep % 2 === 0) {
    const halved: RunConfig = ep / 2 === 1 ? (({ ep: _ep, ...rest }) => rest)(cfg) : { ...cfg, ep: ep / 2 };
    validateRunConfig(halved);
    return { config: halved, before, after: meshShape(halved), how: `each stage's experts re-shared over ${ep / 2} expert-parallel worker${ep / 2 === 1 ? '' : 's'} instead of ${ep}${because}: the same ${cfg.ranks}-rank pipeline${cfg.dp > 1 ? ` in each of the ${cfg.dp} replicas` : ''}` };
  }
  // Next, a tp group half the size: each stage's layers split over fewer workers (a checkpoint holds whole tensors: any tp resumes it).
  const tp = cfg.tp ?? 1;
  if (tp > 1 && tp % 2 === 0) {
    // Sequence parallelism splits rows over a tp group: one worker has none to split.
    const { sequenceParallel, ...rest } = cfg;
    const spOff = sequenceParallel === true && tp / 2 === 1;
    const halved: RunConfig = spOff ? { ...rest, tp: 1 } : { ...cfg, tp: tp / 2 };
    validateRunConfig(halved);
    return { config: halved, before, after: meshShape(halved), how: `each stage's layers re-split over ${tp / 2} tensor-parallel worker${tp / 2 === 1 ? '' : 's'} instead of ${tp}${spOff ? ', sequence parallelism off' : ''}${because}: the same ${cfg.ranks}-rank pipeline${cfg.dp > 1 ? ` in each of the ${cfg.dp} replicas` : ''}` };
  }
  if (cfg.ranks <= 1) {
    throw new RunError(`no smaller mesh to recover on: the run has ranks = 1${cfg.dp > 1 ? ` and dp = ${cfg.dp}${because}` : ' and dp = 1, one worker'}`);
  }
  const ranks = cfg.ranks - 1;
  const notes: string[] = [];
  let next: RunConfig = { ...cfg, ranks };
  if (cfg.partition === 'cut') {
    next = withoutCut(next);
    notes.push(`the explicit cut (one entry per stage) replaced by the balanced-FLOPs cut`);
  }
  try {
    validateRunConfig(next);
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    const fallback: RunConfig = { ...next, schedule: '1f1b', virtual: 1 };
    try {
      validateRunConfig(fallback);
    } catch {
      throw new RunError(`no smaller mesh to recover on: the re-cut onto ${ranks} rank${ranks === 1 ? '' : 's'} is refused: ${e.message}`);
    }
    notes.push(`${cfg.schedule}${cfg.virtual > 1 ? ` with virtual ${cfg.virtual}` : ''} is not valid there (${messageOf(e)}), so 1F1B with one stage per rank is used`);
    next = fallback;
  }
  const after = meshShape(next);
  return {
    config: next,
    before,
    after,
    how: `re-cut onto ${ranks} rank${ranks === 1 ? '' : 's'}${cfg.dp > 1 ? ` in each of the ${cfg.dp} replicas` : ''}${because}: the model's ${cfg.layers + 1} blocks on ${ranks * next.virtual} stage${ranks * next.virtual === 1 ? '' : 's'}${notes.length ? `; ${notes.join('; ')}` : ''}`,
  };
}
