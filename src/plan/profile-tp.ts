/**
 * Planning tensor parallelism from a cluster's profile (`pipelab plan --tp T`).
 *
 * train.py --profile on a bundle exported with tp = T measures, besides the
 * whole blocks, each block as one worker of a tp group computes it (its pieces
 * of the split layers: Megatron's heads and MLP columns) and counts the
 * collectives that worker waits for (profile.tp), and times the tp group's
 * all-reduce on the cluster (profile.tpAllReduce, the ring's α–β fit). A
 * pipeline rank of the plan is then one tp group: its workers run the same
 * actions at the same times, so the plan schedules one of them, whose block
 * times are the measured piece times plus its collectives on the fitted ring,
 * none of them overlapped (the layer waits for the sum before its next
 * kernel):
 *   all-reduce of n bytes: 2(t − 1)·α + 2(t − 1)/t · n / β (the ring),
 *   all-gather to n bytes: (t − 1)·α + (t − 1)/t · n / β (the ring's second half),
 *   reduce-scatter of n bytes: the same (the ring's first half),
 * the forward's in F, the backward's in B and in I (the input gradient sums;
 * W runs none). Held and weight bytes are the piece's: a data-parallel plan's
 * rings move 1/t of the stage's gradients each. A profile measured with
 * sequence parallelism gives the boundaries' times for a worker's block of the
 * rows (profile.tp.comm): the pipeline sends 1/t of the activation.
 */
import { ConfigError } from '../util/errors.ts';
import type { AllReduceProfile, Profile, TpCollectiveProfile } from './profile.ts';

/** One collective's time on the ring fitted over the tp group (unit of the profile). */
export function tpCollectiveTime(c: TpCollectiveProfile, fit: AllReduceProfile): number {
  const t = fit.replicas;
  const ring = (t - 1) * fit.latency + ((t - 1) / t) * (c.bytes / fit.bandwidth);
  return c.coll === 'tp-all-reduce' ? 2 * ring : ring;
}

/** The summed time of a list of collectives. */
export function tpCollectivesTime(list: readonly TpCollectiveProfile[], fit: AllReduceProfile): number {
  return list.reduce((s, c) => s + tpCollectiveTime(c, fit), 0);
}

/**
 * The profile one worker of a tp group of `tp` sees: each block's piece times with its collectives' times added
 * (the forward's to F, the backward's to I and B), its piece's held and weight bytes; comm, lanes and the rest as
 * measured. `tp` = 1 returns the profile itself. Throws ConfigError naming tp, profile.tp or profile.tpAllReduce.
 */
export function tpWorkerProfile(p: Profile, tp: number): Profile {
  if (!Number.isInteger(tp) || tp < 1) throw new ConfigError('tp', tp, 'must be a whole number ≥ 1 (workers per pipeline stage)');
  if (tp === 1) return p;
  const how = `train.py --profile on a bundle exported with --tp ${tp}`;
  if (!p.tp) throw new ConfigError('profile.tp', undefined, `is missing: planning tp = ${tp} needs each block measured as one tp worker computes it (${how})`);
  if (p.tp.t !== tp) throw new ConfigError('tp', tp, `must be the tp the profile was measured with (profile.tp.t = ${p.tp.t}); for tp = ${tp}, profile with ${how}`);
  const fit = p.tpAllReduce;
  if (!fit) throw new ConfigError('profile.tpAllReduce', undefined, `is missing: planning tp = ${tp} needs the tp group's all-reduce measured on the cluster (${how})`);
  const blocks = p.tp.blocks.map((b) => {
    const fwd = tpCollectivesTime(b.forward, fit);
    const back = tpCollectivesTime(b.backward, fit);
    const out = { name: b.name, F: b.F + fwd, I: b.I + back, W: b.W, B: b.B + back, heldBytes: b.heldBytes, heldBytesRecompute: b.heldBytesRecompute };
    return b.paramBytes === undefined ? out : { ...out, paramBytes: b.paramBytes };
  });
  const sp = p.tp.sequenceParallel === true;
  return { ...p, blocks, comm: p.tp.comm ?? p.comm, source: `${p.source ? `${p.source}; ` : ''}one worker of a tp group of ${tp}${sp ? ' with sequence parallelism' : ''}` };
}
