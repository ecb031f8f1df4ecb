/**
 * The flush of a schedule with several model copies (DualPipe: Schedule.copies
 * = 2, schedule/copies.ts): before the update, each stage's gradients are
 * summed over its copies, so every copy takes the same update and the copies
 * stay identical. Copy c's stage j (schedule stage c·k + j) lives on some rank;
 * its gradients go round a ring of the ranks holding stage j's copies, in copy
 * order (ring-allreduce.ts over this rank's pipeline ports: the ranks of its own
 * replica and tp rank, the messages of kind 'copy' keyed by the model stage j,
 * which both ends agree on). For DualPipe the ring is two ranks: r and p − 1 − r,
 * which hold stages r and p − 1 − r of the model, one of each copy. Each copy
 * accumulated the loss-scaled gradients of its own half of the step's
 * micro-batches, so the sum is the whole step's gradient (a float sum of two
 * terms is the same on both ends: the copies stay equal bit for bit).
 *
 * The flush (flush.ts) calls `sumCopies` once its data-parallel all-reduces of
 * the step are done and before its update: with dp replicas each stage is first
 * summed over the replicas (one ring per schedule stage), then over the copies
 * (a sum is a sum in either order, and both ends of a copy ring then hold the
 * same two terms on every replica, so replicas and copies stay equal bit for
 * bit). With a tp group each tp worker sums its own pieces with its partner's
 * same tp rank. With ZeRO the policy sums each stage's owned chunk instead (the
 * partner copy in the same replica owns the same chunk): ZeRO-1 (DeepSeek-V3's
 * setting) after the chunk's reduce-scatter (flush.ts), ZeRO-2 and 3 the chunk's
 * accumulator (sharded-step.ts); then the chunk's update and the all-gather.
 * It is drawn as one 'copy-sum' interval per stage (the run's dp figures leave
 * it out; the report's copySum figures and the simulator's play of it are
 * report-copies.ts and schedule/simulate-copies.ts), and is part of the step's
 * optimizer time (optimizerMs). The optimizer
 * state a checkpoint reads is copy 0's (`withCopyState`: the copies' states are
 * equal; each parameter is then covered once over the ranks), and a resume loads
 * it into every copy by name.
 */
import type { Backend } from '../../nn/backend.ts';
import { copiesOf, copyOfStage, modelStage, stagesPerCopy } from '../../schedule/copies.ts';
import type { Schedule } from '../../schedule/types.ts';
import { readVector, writeVector } from '../comm/index.ts';
import type { Mailbox } from '../comm/index.ts';
import { forwardingPolicy, type UpdatableStage, type UpdatePolicy } from './policy.ts';
import { allReduce, type Vector } from '../comm/index.ts';
import { portRing } from '../comm/index.ts';
import { epochMs } from '../comm/index.ts';
import type { StepLog } from '../comm/index.ts';

export interface CopySumParts {
  be: Backend;
  rank: number;
  schedule: Pick<Schedule, 'stages' | 'microbatches' | 'copies' | 'stageToRank'>;
  /** This rank's stages, by schedule stage. */
  stages: ReadonlyMap<number, UpdatableStage>;
  /** Ports to the other ranks of this worker's pipeline (its replica, its tp rank), by rank (the coordinator wires the copies' partners too). */
  ports: ReadonlyMap<number, MessagePort>;
  mailbox: Mailbox;
  recvTimeoutMs: number;
}

/** The ring of stage `stage`'s copies: this rank's position (its copy) and its neighbours' ranks. */
export function copyRing(s: CopySumParts['schedule'], stage: number): { position: number; size: number; next: number; prev: number } {
  const size = copiesOf(s);
  const k = stagesPerCopy(s);
  const j = modelStage(s, stage);
  const c = copyOfStage(s, stage);
  return { position: c, size, next: s.stageToRank[((c + 1) % size) * k + j], prev: s.stageToRank[((c + size - 1) % size) * k + j] };
}

/**
 * Sums every stage's gradients over its copies, in place on the device; or, given `chunks` (ZeRO: each stage's
 * owned chunk of its replicas' sum, by stage), those vectors in place (a copy's partner owns the same chunk: the same
 * model stage, the same replica).
 */
export async function sumCopies(parts: CopySumParts, step: number, log: StepLog, chunks?: ReadonlyMap<number, Vector>): Promise<void> {
  const { be, rank, schedule, stages } = parts;
  // Both ends of a ring walk their stages in the same order: by model stage.
  const order = [...stages.keys()].sort((a, b) => modelStage(schedule, a) - modelStage(schedule, b) || a - b);
  // Every stage's gradients read off the device at once (one wait for the queue, not one per stage), unless ZeRO's
  // chunks are given; each ring then sums its vector, written back before the next ring, and one wait at the end.
  const read = chunks ? null : Promise.all(order.map((stage) => readVector(be, (stages.get(stage) as UpdatableStage).params.map((p) => p.grad))));
  // A failed read is the first ring's failure; the others' are not left unhandled.
  read?.catch(() => {});
  const t0 = epochMs();
  for (const [i, stage] of order.entries()) {
    const st = stages.get(stage) as UpdatableStage;
    const ring = copyRing(schedule, stage);
    const j = modelStage(schedule, stage);
    if (ring.next === rank || ring.prev === rank) throw new Error(`rank ${rank} holds two copies of model stage ${j}; their gradients are summed between ranks only`);
    const toNext = parts.ports.get(ring.next);
    if (!toNext) throw new Error(`no channel from rank ${rank} to rank ${ring.next}, which holds the next copy of model stage ${j}`);
    const link = portRing({
      ...ring,
      worker: rank,
      toNext,
      mailbox: parts.mailbox,
      stage: j,
      step,
      kind: 'copy',
      recvTimeoutMs: parts.recvTimeoutMs,
      what: `the sum of model stage ${j}'s gradients over its ${ring.size} copies (stage ${stage} here, copy ${ring.position})`,
    });
    // Drawn as one interval per stage, with the bytes this worker sent: the first from the read-back of them all, each
    // to its ring's end and its write-back (queued: the CPU's part).
    const start = i === 0 ? t0 : epochMs();
    const chunk = chunks?.get(stage);
    if (chunk) {
      await allReduce(link, chunk);
      log.collective(stage, 'copy-sum', -1, start, epochMs(), sentBytes(chunk, ring.size));
      continue;
    }
    const x = (await (read as Promise<Vector[]>))[i];
    await allReduce(link, x);
    writeVector(be, st.params.map((p) => p.grad), x); // queued, not waited for: the update after it is queued behind it
    log.collective(stage, 'copy-sum', -1, start, epochMs(), sentBytes(x, ring.size));
  }
}

/** What one member of a ring of `size` sends in an all-reduce of `x`: 2(size − 1)/size of it. */
function sentBytes(x: Vector, size: number): number {
  return (2 * (size - 1) * x.byteLength) / size;
}

/** `inner` (whose flush calls sumCopies) reading copy 0's optimizer state only: each parameter once over the ranks. */
export function withCopyState(inner: UpdatePolicy, parts: CopySumParts): UpdatePolicy {
  return {
    ...forwardingPolicy(inner),
    async readOptimizer() {
      const all = await inner.readOptimizer();
      const first = new Set<string>();
      for (const [stage, st] of parts.stages) if (copyOfStage(parts.schedule, stage) === 0) for (const p of st.params) first.add(p.name);
      return { ...all, pieces: all.pieces.filter((piece) => first.has(piece.param)) };
    },
  };
}
