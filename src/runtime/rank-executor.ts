/**
 * What one rank does in a step: walk its action list (F, B, I, W), take inputs
 * from the data set or from peers, run its stages' kernels, send outputs on,
 * and record every action and every transfer as a measured interval.
 *
 * It knows nothing of Workers or WebGPU: in the browser it runs inside a stage
 * worker on a GpuBackend; in Node tests it runs on the float64 CpuBackend over
 * real MessageChannels, which checks the pipeline logic exactly.
 */
import type { Backend, Tensor } from '../nn/backend.ts';
import type { Action, Interval, Schedule } from '../schedule/types.ts';
import { epochMs } from './clock.ts';
import { faultFires, type Fault } from './faults.ts';
import { Mailbox, type Payload, type PayloadKind } from './mailbox.ts';
import type { VersionRecord, WeightStash } from './pipedream.ts';

/** The part of a model stage (src/nn/stage.ts) the executor drives. */
export interface StageLike {
  readonly index: number;
  readonly isFirst: boolean;
  readonly isLast: boolean;
  forward(mb: number, input: Tensor, labels?: Tensor, lossScale?: number): Tensor;
  backwardInput(mb: number, dOutput: Tensor | null): Tensor | null;
  backwardWeight(mb: number): void;
  backward(mb: number, dOutput: Tensor | null): Tensor | null;
  stashBytes(): number;
  liveStashes(): number;
}

/** Where a rank gets a micro-batch's inputs (first stage) and labels (last stage). */
export interface MicrobatchSource {
  inputs(step: number, mb: number): Tensor;
  labels(step: number, mb: number): Tensor;
  /** 1 / (targets that take a loss in the whole step): makes micro-batch accumulation exact. */
  lossScale(step: number, mb: number): number;
}

export interface StepResult {
  rank: number;
  /** Epoch-ms intervals (the coordinator normalises them). */
  intervals: Interval[];
  /** Loss of each micro-batch this rank computed (last stage only), in micro-batch order. */
  losses: { mb: number; loss: number }[];
  /** Largest stash held at any point of the step, per stage. */
  peakStashBytes: Record<number, number>;
  /** Time spent in the optimizer at the flush, ms. */
  optimizerMs: number;
  /** PipeDream asynchronous runs: the weight version each backward used, and the stash peaks. */
  versions?: VersionRecord[];
  weightStash?: Record<number, { versions: number; bytes: number }>;
  stepStart: number;
  stepEnd: number;
}

export interface RankContext {
  rank: number;
  be: Backend;
  schedule: Schedule;
  stages: Map<number, StageLike>;
  data: MicrobatchSource;
  /** Applies the optimizer to this rank's stages and zeroes their gradients (the flush). */
  applyOptimizer(step: number): void;
  /**
   * PipeDream's asynchronous 1F1B: per stage, the stashed weight versions, and
   * an update after every backward (no flush).
   */
  async?: {
    stashes: Map<number, WeightStash>;
    update(stage: number, mb: number): void;
  };
  /**
   * Where the adapter has timestamp queries: opens a span around an action's
   * kernels; its end waits for them like sync() and gives their GPU time.
   */
  gpuSpan?(): { end(): Promise<{ ms: number; source: 'timestamp' | 'wall' }> };
  /** Throws if the rank can no longer compute (e.g. its device was lost). */
  checkHealthy?(): void;
  /** Ports to peer ranks, by peer rank. */
  ports: Map<number, MessagePort>;
  mailbox: Mailbox;
  recvTimeoutMs: number;
  fault?: Fault;
  /** Called when an injected fault asks for the device to be lost. */
  loseDevice?(): void;
  /** Called when an injected fault asks for the worker to die. */
  crash?(): void;
}

export class ActionError extends Error {
  constructor(
    readonly rank: number,
    readonly action: Action | null,
    readonly step: number,
    cause: unknown,
  ) {
    const what = action ? `stage ${action.stage}, action ${action.stage}${action.op}${action.mb}` : 'optimizer flush';
    const msg = cause instanceof Error ? cause.message : String(cause);
    super(`rank ${rank}, ${what}, step ${step}: ${msg}`);
    this.name = 'ActionError';
  }
}

function actionText(a: Action): string {
  return `${a.stage}${a.op}${a.mb}`;
}

export class RankExecutor {
  /** Tensors handed from one stage to the next on this same rank (interleaved, V-shapes). */
  private readonly local = new Map<string, Tensor>();

  constructor(private readonly ctx: RankContext) {}

  async runStep(step: number): Promise<StepResult> {
    const { ctx } = this;
    const { be, schedule, rank } = ctx;
    const intervals: Interval[] = [];
    const losses: { mb: number; loss: Tensor }[] = [];
    const peak: Record<number, number> = {};
    const sends: Promise<void>[] = [];
    const versions: VersionRecord[] = [];
    let sendError: Error | null = null;
    const stepStart = epochMs();

    const trackPeak = () => {
      for (const [s, st] of ctx.stages) peak[s] = Math.max(peak[s] ?? 0, st.stashBytes());
    };
    const comm = (stage: number, mb: number, kind: Interval['comm'], start: number, end: number, peer?: number) => {
      intervals.push({ rank, stage, op: 'comm', mb, start, end, comm: kind, peer });
    };

    const receive = async (kind: PayloadKind, a: Action, fromStage: number): Promise<Tensor> => {
      const key = `${kind}:${a.stage}:${a.mb}`;
      const mine = this.local.get(key);
      if (mine) {
        this.local.delete(key);
        return mine;
      }
      const peer = schedule.stageToRank[fromStage];
      const what =
        kind === 'act'
          ? `the activation of micro-batch ${a.mb} from rank ${peer} (stage ${fromStage}) for ${actionText(a)}`
          : `the gradient of micro-batch ${a.mb} from rank ${peer} (stage ${fromStage}) for ${actionText(a)}`;
      const t0 = epochMs();
      const p: Payload = await ctx.mailbox.take(kind, a.stage, a.mb, step, ctx.recvTimeoutMs, what);
      const t1 = epochMs();
      const arrived = p.receivedAt ?? t1;
      if (arrived > t0) comm(a.stage, a.mb, 'recv-wait', t0, Math.min(arrived, t1), peer);
      comm(a.stage, a.mb, 'transfer', p.sentAt, arrived, peer);
      const data = p.dtype === 'f64' ? new Float64Array(p.buffer) : new Float32Array(p.buffer);
      const t2 = epochMs();
      const t = be.tensor(data, p.shape);
      comm(a.stage, a.mb, 'upload', t2, epochMs(), peer);
      return t;
    };

    const send = (kind: PayloadKind, toStage: number, mb: number, t: Tensor, fromAction: Action) => {
      const peer = schedule.stageToRank[toStage];
      if (peer === rank) {
        this.local.set(`${kind}:${toStage}:${mb}`, t);
        return;
      }
      const port = ctx.ports.get(peer);
      if (!port) throw new Error(`no channel from rank ${rank} to rank ${peer} (stage ${toStage})`);
      const drop = ctx.fault?.kind === 'drop-message' && faultFires(ctx.fault, fromAction, step);
      const malformed = ctx.fault?.kind === 'malformed-message' && faultFires(ctx.fault, fromAction, step);
      const shape = [...t.shape];
      const t0 = epochMs();
      const p = be.read(t).then((arr) => {
        be.dispose(t);
        const t1 = epochMs();
        comm(fromAction.stage, mb, 'readback', t0, t1, peer);
        if (drop) return;
        const copy = arr instanceof Float64Array ? arr : arr instanceof Float32Array ? arr : Float32Array.from(arr);
        const buffer = copy.buffer.byteLength === copy.byteLength ? copy.buffer : copy.slice().buffer;
        const msg: Payload = {
          kind,
          stage: toStage,
          mb,
          step,
          shape,
          dtype: copy instanceof Float64Array ? 'f64' : 'f32',
          buffer: buffer as ArrayBuffer,
          sentAt: t1,
          from: rank,
        };
        if (malformed) {
          port.postMessage({ ...msg, shape: [shape[0] + 1, ...shape.slice(1)] });
          return;
        }
        port.postMessage(msg, [msg.buffer]);
        comm(fromAction.stage, mb, 'send', t1, epochMs(), peer);
      });
      sends.push(
        p.catch((e: unknown) => {
          sendError = new ActionError(rank, fromAction, step, e);
          ctx.mailbox.fail(sendError);
        }),
      );
    };

    /** Waits for an action's kernels; the GPU's own time when timestamp queries give it. */
    const finish = async (span: ReturnType<NonNullable<RankContext['gpuSpan']>> | undefined): Promise<number | undefined> => {
      if (!span) {
        await be.sync();
        return undefined;
      }
      const r = await span.end();
      return r.source === 'timestamp' ? r.ms : undefined;
    };
    const computed = (a: Action, start: number, gpuMs: number | undefined): Interval => {
      const iv: Interval = { rank, stage: a.stage, op: a.op, mb: a.mb, start, end: epochMs() };
      if (gpuMs !== undefined) iv.gpuMs = gpuMs;
      return iv;
    };

    for (const a of schedule.order[rank]) {
      try {
        if (sendError) throw sendError;
        const stage = ctx.stages.get(a.stage);
        if (!stage) throw new Error(`stage ${a.stage} is not held by this rank`);
        if (ctx.fault && faultFires(ctx.fault, a, step)) {
          if (ctx.fault.kind === 'throw') throw new Error('injected fault: the stage kernel threw');
          if (ctx.fault.kind === 'lose-device') ctx.loseDevice?.();
          if (ctx.fault.kind === 'crash-worker') ctx.crash?.();
        }
        if (a.op === 'F') {
          const input = stage.isFirst ? ctx.data.inputs(step, a.mb) : await receive('act', a, a.stage - 1);
          const labels = stage.isLast ? ctx.data.labels(step, a.mb) : undefined;
          const t0 = epochMs();
          const span = ctx.gpuSpan?.();
          ctx.async?.stashes.get(a.stage)?.onForward(a.mb);
          const out = stage.forward(a.mb, input, labels, ctx.data.lossScale(step, a.mb));
          const gpuMs = await finish(span);
          ctx.checkHealthy?.();
          intervals.push(computed(a, t0, gpuMs));
          if (labels) be.dispose(labels);
          if (stage.isLast) losses.push({ mb: a.mb, loss: out });
          else send('act', a.stage + 1, a.mb, out, a);
        } else if (a.op === 'B' || a.op === 'I') {
          const dOut = stage.isLast ? null : await receive('grad', a, a.stage + 1);
          const t0 = epochMs();
          const span = ctx.gpuSpan?.();
          let dIn: Tensor | null;
          const ws = ctx.async?.stashes.get(a.stage);
          if (ws && ctx.async) {
            if (a.op !== 'B') throw new Error('the asynchronous PipeDream runtime takes full backwards (B) only');
            const r = ws.withForwardWeights(a.mb, () => stage.backward(a.mb, dOut));
            dIn = r.result;
            versions.push(r.record);
            ctx.async.update(a.stage, a.mb);
            ws.version++;
          } else {
            dIn = a.op === 'B' ? stage.backward(a.mb, dOut) : stage.backwardInput(a.mb, dOut);
          }
          const gpuMs = await finish(span);
          ctx.checkHealthy?.();
          intervals.push(computed(a, t0, gpuMs));
          if (dIn && !stage.isFirst) send('grad', a.stage - 1, a.mb, dIn, a);
          else if (dIn) be.dispose(dIn);
        } else {
          const t0 = epochMs();
          const span = ctx.gpuSpan?.();
          stage.backwardWeight(a.mb);
          const gpuMs = await finish(span);
          ctx.checkHealthy?.();
          intervals.push(computed(a, t0, gpuMs));
        }
        trackPeak();
      } catch (e) {
        if (e instanceof ActionError) throw e;
        throw new ActionError(rank, a, step, e);
      }
    }

    await Promise.all(sends);
    if (sendError) throw sendError;

    const lossValues: { mb: number; loss: number }[] = [];
    for (const { mb, loss } of losses) {
      const v = await be.read(loss);
      be.dispose(loss);
      let value = v[0];
      if (ctx.fault?.kind === 'nan-loss' && (ctx.fault.step ?? 0) === step) value = NaN;
      lossValues.push({ mb, loss: value });
    }
    lossValues.sort((x, y) => x.mb - y.mb);

    const o0 = epochMs();
    try {
      if (!ctx.async) ctx.applyOptimizer(step);
      await be.sync();
    } catch (e) {
      throw new ActionError(rank, null, step, e);
    }
    const o1 = epochMs();
    for (const st of ctx.stages.values()) {
      if (st.liveStashes() !== 0) {
        throw new ActionError(rank, null, step, new Error(`stage ${st.index} still holds ${st.liveStashes()} stashes after the step: the schedule left a backward undone`));
      }
    }
    const result: StepResult = { rank, intervals, losses: lossValues, peakStashBytes: peak, optimizerMs: o1 - o0, stepStart, stepEnd: o1 };
    if (ctx.async) {
      result.versions = versions;
      result.weightStash = {};
      for (const [s, ws] of ctx.async.stashes) result.weightStash[s] = ws.peak();
    }
    return result;
  }
}
