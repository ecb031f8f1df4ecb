/**
 * The data-parallel figures of a run report, from the measured timelines: per
 * stage, how long its collective took (from the first part's start to the last
 * part's end over every worker of its group; with ZeRO-2/3, whose collectives run
 * between the actions, the time of its ring collectives) and the bytes of gradients it
 * summed; the step time with the collectives; the part of it the collectives
 * added after the last compute ended (exposed, not overlapped).
 */
import { isCompute, makespan } from '../../schedule/timeline.ts';
import type { Interval, Timeline } from '../../schedule/timeline.ts';

export interface AllReduceFigures {
  /**
   * Per stage: mean time of its collective, ms (reading the gradients back, the ring, writing the sum back; from
   * the first worker's start to the last one's end), the bytes of the vector it reduced (its gradients), and the
   * ring's own part, ms: on each worker from its first chunk exchange's start to its last one's end, the least
   * over the group's workers (the one that waited least for its peers); ownMs the same for the whole collective
   * (readback to write-back) on one worker: what it costs without the replicas' skew. With ZeRO-2/3 (`spread`: the
   * stage's reduce-scatters and all-gathers run between its actions all step, so first-to-last spans the step's
   * compute) `ms` is instead the time of those ring collectives themselves, summed over the step on each worker and
   * averaged over the replicas: what the simulator counts as the stage's collective time.
   */
  perStage: { ms: number; bytes: number; ringMs: number; ownMs: number }[];
  /** Mean step time with the collectives (latest end − earliest start over every interval), ms. */
  stepMs: number;
  /** Mean time from the last compute's end to the step's end: the collectives' share not hidden behind compute, ms. */
  exposedMs: number;
  /** exposedMs / stepMs. */
  share: number;
  /** Bytes one worker sent over its ring in a step (every reduce-scatter and all-gather exchange), the most over the workers, mean over the steps. */
  ringBytesPerWorker: number;
  /** The same by the formula (held-bytes.ts ringBytesFormula, float32), set by the report. */
  ringBytesFormula?: number;
  /** The simulator's step with the run's own op times and the α–β ring fitted to these collectives, and its exposed share (report.ts). */
  /** perStageMs: each stage's collective (a stream's: one block's, read-back and write around its ring included, as `perStage` measures it). */
  simulated?: { stepMs: number; share: number; perStageMs: number[] };
}

/** The flush's data-parallel collectives (tp's, between a stage's layers, are report-tp.ts's; DualPipe's sum over its copies is its own). */
function isDpCollective(iv: Interval): boolean {
  return iv.op === 'collective' && iv.coll !== 'tp-all-reduce' && iv.coll !== 'tp-all-gather' && iv.coll !== 'tp-reduce-scatter' && iv.coll !== 'copy-sum' && iv.coll !== 'ep-all-to-all' && iv.coll !== 'cpu-update';
}

function mean(xs: number[]): number {
  return xs.length > 0 ? xs.reduce((a, b) => a + b, 0) / xs.length : 0;
}

/**
 * The figures over `timelines` (the measured steps), or null when they hold no collective. `perBlock`: a stream's
 * timeline holds one all-reduce per stage and block (PipeDream-2BW on replicas), each opened by its 'gather-grads',
 * and perStage is their mean; else each timeline holds one collective per stage (its parts, ZeRO-2/3's many, all one).
 */
export function allReduceFigures(timelines: readonly Timeline[], stages: number, perBlock = false, spread = false): AllReduceFigures | null {
  if (!timelines.some((t) => t.intervals.some(isDpCollective))) return null;
  const perStage = Array.from({ length: stages }, () => ({ ms: [] as number[], ring: [] as number[], own: [] as number[], bytes: 0 }));
  const steps: number[] = [];
  const exposed: number[] = [];
  const sent: number[] = [];
  for (const t of timelines) {
    const byWorker = new Map<string, number>();
    // With `spread`: per stage, per replica, the summed time of its ring collectives in this step.
    const ringTime = Array.from({ length: stages }, () => new Map<number, number>());
    // Instance k of stage s's collective (the step's one at a flush; PipeDream-2BW's per block of a stream, each
    // opened by its 'gather-grads'), by replica: the span of its parts (own) and of its chunk exchanges (ring).
    const instances = new Map<number, Map<number, { own: [number, number]; ring: [number, number] }[]>>();
    const widen = (w: [number, number], a: number, b: number) => {
      w[0] = Math.min(w[0], a);
      w[1] = Math.max(w[1], b);
    };
    let lastCompute = -Infinity;
    const parts = t.intervals.filter((iv) => {
      if (isCompute(iv)) lastCompute = Math.max(lastCompute, iv.end);
      return isDpCollective(iv);
    });
    parts.sort((x, y) => x.start - y.start || (x.coll === 'gather-grads' ? -1 : y.coll === 'gather-grads' ? 1 : 0));
    for (const iv of parts) {
      const byReplica = instances.get(iv.stage) ?? new Map<number, { own: [number, number]; ring: [number, number] }[]>();
      instances.set(iv.stage, byReplica);
      const list = byReplica.get(iv.replica ?? 0) ?? [];
      byReplica.set(iv.replica ?? 0, list);
      if ((perBlock && iv.coll === 'gather-grads') || list.length === 0) list.push({ own: [Infinity, -Infinity], ring: [Infinity, -Infinity] });
      const cur = list[list.length - 1];
      if (iv.coll === 'gather-grads' && iv.bytes !== undefined) perStage[iv.stage].bytes = iv.bytes;
      widen(cur.own, iv.start, iv.end);
      if (iv.coll === 'reduce-scatter' || iv.coll === 'all-gather') {
        widen(cur.ring, iv.start, iv.end);
        const r = iv.replica ?? 0;
        ringTime[iv.stage]?.set(r, (ringTime[iv.stage].get(r) ?? 0) + (iv.end - iv.start));
        const w = `${iv.replica ?? 0}:${iv.rank}`;
        byWorker.set(w, (byWorker.get(w) ?? 0) + (iv.bytes ?? 0));
      }
    }
    for (const [s, byReplica] of instances) {
      const lists = [...byReplica.values()];
      const count = Math.min(...lists.map((l) => l.length));
      for (let k = 0; k < count; k++) {
        const own = lists.map((l) => l[k].own);
        if (!spread) perStage[s]?.ms.push(Math.max(...own.map((w) => w[1])) - Math.min(...own.map((w) => w[0])));
        perStage[s]?.own.push(Math.min(...own.map(([a, b]) => b - a)));
        const ring = lists.map((l) => l[k].ring).filter((w) => w[1] >= w[0]);
        if (ring.length > 0) perStage[s]?.ring.push(Math.min(...ring.map(([a, b]) => b - a)));
      }
    }
    if (spread) ringTime.forEach((byReplica, s) => byReplica.size > 0 && perStage[s].ms.push(mean([...byReplica.values()])));
    // The step as the simulator plays it: DualPipe's sum over its copies (drawn, not simulated) left out.
    const played = t.intervals.filter((iv) => iv.coll !== 'copy-sum');
    const lo = Math.min(...played.map((iv) => iv.start));
    const hi = Math.max(...played.map((iv) => iv.end));
    sent.push(Math.max(0, ...byWorker.values()));
    steps.push(makespan({ ...t, intervals: played }));
    exposed.push(Math.max(0, hi - Math.max(lo, lastCompute)));
  }
  const stepMs = mean(steps);
  const exposedMs = mean(exposed);
  return { perStage: perStage.map((p) => ({ ms: mean(p.ms), bytes: p.bytes, ringMs: mean(p.ring), ownMs: mean(p.own) })), stepMs, exposedMs, share: stepMs > 0 ? exposedMs / stepMs : 0, ringBytesPerWorker: mean(sent) };
}
