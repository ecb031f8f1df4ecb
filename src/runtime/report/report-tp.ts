/**
 * The tensor-parallel figures of a run report, read off the measured timelines'
 * `tp-all-reduce` / `tp-all-gather` intervals (tp-collective.ts logs one on every
 * member of a tp group for every collective, with the bytes it sent):
 *
 * - per stage: the collectives one worker ran per micro-batch in each op, and per
 *   split layer (Megatron's count: 4 per GPT block, 2 per MLP linear), the bytes
 *   a worker sent in one, their time;
 * - each collective's own time: the k-th collective of a stage in a step is the
 *   same exchange on every member of the group, and the member that waited least
 *   (the last to arrive) measures the exchange itself; the others also waited for
 *   their peers' compute (wait);
 * - exposed: the collectives sit inside the actions (a layer waits for the sum
 *   before its next kernel), so all of their time stops the worker's compute; per
 *   step, the mean over workers of their collectives' time, and its share of the step;
 * - the α–β line of one round of direct exchange, time = α + bytes sent / β,
 *   fitted to the own times (schedule/tp-cost.ts's price): with sizes at least
 *   2× apart both parameters, else all of the time read as α (one size cannot
 *   separate them; at these sizes the messages are latency-bound);
 * - the actions' compute without their collectives' own times (what the simulator
 *   is fed, the collectives priced on top by the fit); the waits stay in it: a
 *   group's action ends with its slowest member, and the simulator plays the group
 *   as one lane.
 */
import { tokenRowSplit } from '../../schedule/mesh.ts';
import { gradSumEvery } from '../../schedule/registry.ts';
import { gradSumActions, gradSumKey, isSplitTpLayer, tpLayerMessages, tpStageGradSum, tpStageMessages, type TpCosts, type TpLayer, type TpOpMessages } from '../../schedule/tp-cost.ts';
import { isCompute, laneOf, makespan, type Interval, type Timeline } from '../../schedule/timeline.ts';
import type { Op } from '../../schedule/types.ts';
import type { ModelSpec } from '../../nn/model-spec.ts';
import { rowsPerExample } from '../../nn/model-spec.ts';
import type { RunPlan } from '../executor/index.ts';

export interface TpStageFigures {
  /** Layers of the stage that tp splits (GPT blocks, hidden linears). */
  splitLayers: number;
  /** Collectives one worker ran per micro-batch, by op (mean over its actions of that op). */
  perMicrobatch: Partial<Record<Op, number>>;
  /**
   * Collectives per split layer and micro-batch, over all ops (4 for a GPT block; 8 with sequence parallelism, whose
   * embedding and head gathers and LayerNorm gradient sums are the stage's, not counted here).
   */
  perLayer: number;
  /** Sequence parallelism: the stage's sums of its LayerNorms' gradients over the group per step of m micro-batches (1 under a flush). */
  gradSumsPerStep?: number;
  /** Bytes a worker sent in one collective, mean. */
  bytes: number;
  /** Mean own time of one collective (the member that waited least), ms; waitMs the mean the others waited on top. */
  ownMs: number;
  waitMs: number;
}

export interface TpFigures {
  /** Workers per tp group. */
  t: number;
  perStage: TpStageFigures[];
  /** Per worker and step (mean over workers and steps): collectives, bytes sent, time in them (ms). */
  perWorker: { count: number; bytes: number; ms: number; ownMs: number };
  /** Mean step (latest end − earliest start), ms. */
  stepMs: number;
  /** perWorker.ms: nothing overlaps a tp collective; exposedMs / stepMs. */
  exposedMs: number;
  share: number;
  /** perWorker.ownMs / stepMs: the exchanges themselves, without the waits for slower members (what the simulator prices). */
  ownShare: number;
  /** α (ms) and β (bytes per ms, Infinity when only α) of one collective, fitted to the own times; `sizes` the distinct sizes sent. */
  fit: { latencyMs: number; bytesPerMs: number; sizes: number; points: number };
  /** Each distinct size a worker sent in one collective, with its mean own time: what the fit read. */
  points: { bytes: number; ms: number; n: number }[];
  /** Bytes per activation element (the workers' float: 4, the CPU host's 8): measured bytes over the layers' counted elements. */
  bytesPerElement: number;
  /** The simulator's step with the run's compute and the tp collectives priced by the fit, and their share (report.ts). */
  simulated?: { stepMs: number; share: number; exposedMs: number };
}

/**
 * The layers of each stage that tp splits: every GPT block and hidden linear except in the model's last block (the
 * head stays whole); with sequence parallelism, the GPT's embedding and head too, whose rows it gathers.
 */
export function stageTpLayers(spec: ModelSpec, stageBlocks: readonly (readonly [number, number])[], sequenceParallel = false): TpLayer[][] {
  const last = spec.blocks.length - 1;
  const layer = (l: ModelSpec['blocks'][number]['layers'][number]): TpLayer[] => {
    if (l.kind === 'gpt-block') return [{ kind: 'gpt-block', width: l.dim, sequenceParallel }];
    if (l.kind === 'linear') return [{ kind: 'linear', in: l.in, out: l.out }];
    if (sequenceParallel && l.kind === 'gpt-embedding') return [{ kind: 'sp-embedding', width: l.dim }];
    if (sequenceParallel && l.kind === 'gpt-head') return [{ kind: 'sp-head', width: l.dim }];
    return [];
  };
  return stageBlocks.map(([a, b]) =>
    spec.blocks.slice(a, b).flatMap((blk, i) => (a + i === last ? (sequenceParallel ? blk.layers.filter((l) => l.kind === 'gpt-head').flatMap(layer) : []) : blk.layers.flatMap(layer))),
  );
}

/** Each stage's tp collectives per op and micro-batch, as the run's layers issue them (tp-cost.ts). */
export function runTpMessages(plan: RunPlan): TpOpMessages[] {
  const { config, spec } = plan;
  const rows = (config.batchSize / (config.dp * config.microbatches)) * rowsPerExample(spec);
  return stageTpLayers(spec, plan.stageBlocks, tokenRowSplit(config) > 1).map((layers) => tpStageMessages(layers, rows, config.tp ?? 1, config.recompute ?? false));
}

/** With sequence parallelism, each stage's sum of its LayerNorms' gradients over the tp group and where the run plays it (registry.ts gradSumEvery); else undefined. */
export function runTpGradSum(plan: RunPlan): TpCosts['gradSum'] {
  const { config } = plan;
  if (tokenRowSplit(config) <= 1) return undefined;
  const messages = stageTpLayers(plan.spec, plan.stageBlocks, true).map((layers) => tpStageGradSum(layers, config.tp ?? 1));
  const every = gradSumEvery(plan.kind.update, config, config.microbatches);
  return every === undefined ? { messages } : { messages, every };
}

const isTp = (iv: Interval): boolean => iv.op === 'collective' && (iv.coll === 'tp-all-reduce' || iv.coll === 'tp-all-gather' || iv.coll === 'tp-reduce-scatter');

/**
 * Fits t = α + x / β to points (least squares weighted by how many collectives each point stands for, so the
 * line prices the step's total; both non-negative; β = ∞ when the time does not grow with x).
 */
export function fitLine(points: readonly { bytes: number; ms: number; n?: number }[]): { latencyMs: number; bytesPerMs: number } {
  const ws = points.map((p) => p.n ?? 1);
  const sw = ws.reduce((s, w) => s + w, 0);
  const mx = points.reduce((s, p, i) => s + ws[i] * p.bytes, 0) / sw;
  const my = points.reduce((s, p, i) => s + ws[i] * p.ms, 0) / sw;
  let sxy = 0, sxx = 0;
  points.forEach((p, i) => {
    sxy += ws[i] * (p.bytes - mx) * (p.ms - my);
    sxx += ws[i] * (p.bytes - mx) ** 2;
  });
  // A time that does not grow with the size: no bandwidth term to read (β = ∞), α the weighted mean.
  if (!(sxx > 0) || sxy / sxx <= 1e-12) return { latencyMs: my, bytesPerMs: Infinity };
  const a = sxy / sxx;
  return { latencyMs: Math.max(0, my - a * mx), bytesPerMs: 1 / a };
}

/** α–β from size points (each size's mean time: a step pays the mean): a line when the sizes are at least 2× apart, else α alone (the mean time). */
export function tpFit(points: readonly { bytes: number; ms: number; n: number }[]): TpFigures['fit'] {
  const sizes = points.map((p) => p.bytes);
  const n = points.reduce((a, p) => a + p.n, 0);
  if (points.length >= 2 && Math.max(...sizes) >= 2 * Math.min(...sizes)) return { ...fitLine(points), sizes: points.length, points: n };
  return { latencyMs: points.reduce((a, p) => a + p.n * p.ms, 0) / Math.max(n, 1), bytesPerMs: Infinity, sizes: points.length, points: n };
}

/**
 * The figures over `timelines` (the measured steps), and each compute interval's time less the own times of
 * the tp collectives inside it (`computeMs`, keyed by the interval); null when the run has no tp collective.
 */
export function tpFigures(timelines: readonly Timeline[], plan: RunPlan): { figures: TpFigures; computeMs: Map<Interval, number> } | null {
  const t = plan.config.tp ?? 1;
  if (t <= 1 || !timelines.some((tl) => tl.intervals.some(isTp))) return null;
  const stages = plan.schedule.stages;
  const computeMs = new Map<Interval, number>();
  const count = Array.from({ length: stages }, () => ({} as Partial<Record<Op, number>>));
  const actions = Array.from({ length: stages }, () => ({} as Partial<Record<Op, number>>));
  const own: number[][] = Array.from({ length: stages }, () => []);
  const wait: number[][] = Array.from({ length: stages }, () => []);
  const bytes: number[][] = Array.from({ length: stages }, () => []);
  const bySize = new Map<number, number[]>();
  const perWorker = { count: [] as number[], bytes: [] as number[], ms: [] as number[], ownMs: [] as number[] };
  const steps: number[] = [];
  let sentBytes = 0;
  let sentElements = 0;
  const messages = runTpMessages(plan);
  // Sequence parallelism: the stage's gradient sum ends the actions after which the policy reads the gradients, the last collective in them.
  const gradSum = runTpGradSum(plan);
  const sumAt = gradSum ? gradSumActions(plan.schedule.order, gradSum.every) : null;
  const sums = new Array<number>(stages).fill(0);
  for (const tl of timelines) {
    const lanes = new Map<number, { compute: Interval[]; coll: Interval[] }>();
    for (const iv of tl.intervals) {
      const lane = laneOf(tl, iv);
      const l = lanes.get(lane) ?? { compute: [], coll: [] };
      if (isCompute(iv)) l.compute.push(iv);
      else if (isTp(iv)) l.coll.push(iv);
      lanes.set(lane, l);
    }
    // The k-th collective of a stage on each member of a group: key replica:rank:stage:k → durations.
    const matched = new Map<string, { ms: number[]; bytes: number }>();
    const keyOf = new Map<Interval, string>();
    const w = { count: 0, bytes: 0, ms: 0 };
    for (const { coll } of lanes.values()) {
      coll.sort((a, b) => a.start - b.start);
      const seq = new Map<number, number>();
      for (const c of coll) {
        const k = seq.get(c.stage) ?? 0;
        seq.set(c.stage, k + 1);
        const key = `${c.replica ?? 0}:${c.rank}:${c.stage}:${k}`;
        keyOf.set(c, key);
        const m = matched.get(key) ?? { ms: [], bytes: c.bytes ?? 0 };
        m.ms.push(c.end - c.start);
        matched.set(key, m);
        w.count++;
        w.bytes += c.bytes ?? 0;
        w.ms += c.end - c.start;
      }
    }
    const ownOf = (c: Interval) => Math.min(...(matched.get(keyOf.get(c) ?? '')?.ms ?? [0]));
    // An action's compute: its time less its collectives' own times (the waits for slower members stay: the group moves at its slowest member's pace).
    for (const { compute, coll } of lanes.values()) {
      for (const a of compute) {
        const inside = coll.filter((c) => c.stage === a.stage && c.start >= a.start && c.end <= a.end);
        computeMs.set(a, a.end - a.start - inside.reduce((s, c) => s + ownOf(c), 0));
        const op = a.op as Op;
        const sum = sumAt?.has(gradSumKey({ stage: a.stage, op, mb: a.mb })) ? gradSum?.messages[a.stage] ?? null : null;
        if (sum) sums[a.stage]++;
        count[a.stage][op] = (count[a.stage][op] ?? 0) + inside.length - (sum ? 1 : 0);
        actions[a.stage][op] = (actions[a.stage][op] ?? 0) + 1;
        for (const c of inside) sentBytes += c.bytes ?? 0;
        sentElements += (t - 1) * (messages[a.stage][op].reduce((s, m) => s + m.elements, 0) + (sum ? sum.elements : 0));
      }
    }
    const laneCount = lanes.size;
    let ownSum = 0;
    for (const [key, m] of matched) {
      const stage = Number(key.split(':')[2]);
      const least = Math.min(...m.ms);
      own[stage].push(least);
      ownSum += least * m.ms.length;
      for (const x of m.ms) wait[stage].push(x - least);
      bytes[stage].push(m.bytes);
      const s = bySize.get(m.bytes) ?? [];
      s.push(least);
      bySize.set(m.bytes, s);
    }
    perWorker.count.push(w.count / laneCount);
    perWorker.bytes.push(w.bytes / laneCount);
    perWorker.ms.push(w.ms / laneCount);
    perWorker.ownMs.push(ownSum / laneCount);
    steps.push(makespan(tl));
  }
  const mean = (xs: number[]) => (xs.length > 0 ? xs.reduce((a, b) => a + b, 0) / xs.length : 0);
  const all = stageTpLayers(plan.spec, plan.stageBlocks, tokenRowSplit(plan.config) > 1);
  const layers = all.map((ls) => ls.filter(isSplitTpLayer));
  // Sequence parallelism's ends (the embedding's and the head's row gathers) are a stage's, not a block's.
  const ends = all.map((ls) => ls.filter((l) => !isSplitTpLayer(l)).reduce((a, l) => { const m = tpLayerMessages(l, 1, t); return a + m.forward.length + m.backward.length; }, 0));
  const perStage = Array.from({ length: stages }, (_, s): TpStageFigures => {
    const perMicrobatch: Partial<Record<Op, number>> = {};
    for (const [op, n] of Object.entries(actions[s]) as [Op, number][]) perMicrobatch[op] = (count[s][op] ?? 0) / n;
    // Per layer and micro-batch: F's plus the backward's (B, or I; W none).
    const perMb = (perMicrobatch.F ?? 0) + (perMicrobatch.B ?? 0) + (perMicrobatch.I ?? 0) + (perMicrobatch.W ?? 0);
    const n = layers[s]?.length ?? 0;
    const figures: TpStageFigures = { splitLayers: n, perMicrobatch, perLayer: n > 0 ? (perMb - ends[s]) / n : 0, bytes: mean(bytes[s]), ownMs: mean(own[s]), waitMs: mean(wait[s]) };
    if (gradSum?.messages[s]) figures.gradSumsPerStep = (sums[s] / Math.max(1, actions[s].F ?? 0)) * plan.config.microbatches;
    return figures;
  });
  const points = [...bySize.entries()].sort((a, b) => a[0] - b[0]).map(([b, ms]) => ({ bytes: b, ms: ms.reduce((x, y) => x + y, 0) / Math.max(ms.length, 1), n: ms.length }));
  const stepMs = mean(steps);
  const exposedMs = mean(perWorker.ms);
  return {
    figures: {
      t,
      perStage,
      perWorker: { count: mean(perWorker.count), bytes: mean(perWorker.bytes), ms: exposedMs, ownMs: mean(perWorker.ownMs) },
      stepMs,
      exposedMs,
      share: stepMs > 0 ? exposedMs / stepMs : 0,
      ownShare: stepMs > 0 ? mean(perWorker.ownMs) / stepMs : 0,
      fit: tpFit(points),
      points,
      bytesPerElement: sentElements > 0 ? sentBytes / sentElements : 0,
    },
    computeMs,
  };
}
