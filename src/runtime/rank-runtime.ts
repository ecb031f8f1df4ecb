/**
 * Everything one rank holds: its stages (with the same seeded initialisation
 * the single-device loop uses), its data (first and last stage), its
 * optimizer, its mailbox, and the executor that walks its actions. Built the
 * same way in a stage worker (GpuBackend) and in-process (CpuBackend, tests).
 */
import { BatchSampler, splitMicrobatches } from '../data/batches.ts';
import { createDataset } from '../data/datasets.ts';
import { targetCount, type Examples } from '../data/examples.ts';
import type { Backend, Tensor } from '../nn/backend.ts';
import { rowsPerExample } from '../nn/model-spec.ts';
import { Stage } from '../nn/stage.ts';
import { createOptimizer } from '../nn/optimizer.ts';
import { scheduleKind, UPDATE_WINDOWS } from '../schedule/registry.ts';
import { faultyPolicy, faultyRunner, FaultyTransport, type FaultEffects } from './faults.ts';
import { epochMs } from './clock.ts';
import { Mailbox } from './mailbox.ts';
import { RankExecutor, type GpuSpanStart, type MicrobatchSource, type StepResult, type StepRunner } from './rank-executor.ts';
import type { RankInit, RankStats, Weights } from './rank-host.ts';
import { toTrainConfig } from './run-config.ts';
import { Transport } from './transport.ts';
import { createUpdatePolicy } from './update-policy.ts';

export interface RankRuntime {
  /**
   * Compiles every kernel the rank's steps will run, and only those, before the
   * first step, so step 0 is measured like the others and peers do not wait on
   * a compiler: a dry forward and backward of a one-example micro-batch through
   * each of the rank's stages and a throwaway optimizer step, run with nothing
   * computed (Backend.compileUsed) to name the kernels, compiled in parallel and
   * asynchronously; then the gradients are zeroed. On a backend that compiles
   * nothing (CPU), the dry forward and backward run as they are. Weights and
   * optimizer state are untouched.
   */
  warmUp(): Promise<WarmUp>;
  step(step: number): Promise<StepResult>;
  readWeights(): Promise<Weights>;
  stats(): Omit<RankStats, 'buffers' | 'bufferBytes' | 'adapter'>;
  /** Ends every pending and future wait with `e` (device lost, peer failed). */
  fail(e: Error): void;
  dispose(): void;
}

/** What a rank's warm-up did: its time, the kernels its steps use and how many of them it compiled (the rest were compiled already). */
export interface WarmUp {
  warmUpMs: number;
  kernels: number;
  compiled: number;
}

export interface RankHooks extends FaultEffects {
  /** GPU timing of an action's kernels (a GpuBackend with timestamp queries). */
  gpuSpan?: GpuSpanStart;
}

/** Micro-batch inputs and labels from the seeded sampler; a stream (one window for the whole run) numbers micro-batches across steps. */
class SampledMicrobatches implements MicrobatchSource {
  private cached: { step: number; mbs: Examples[] } | null = null;

  constructor(
    private readonly be: Backend,
    private readonly sampler: BatchSampler,
    private readonly microbatches: number,
    private readonly streaming: boolean,
  ) {}

  /**
   * Synchronous: 1 / the batch's targets (its size for the MLPs, its non-padded
   * positions for the GPT), so accumulating the micro-batches gives the batch mean.
   * Asynchronous: every micro-batch is its own update, so 1 / its own targets.
   */
  lossScale(step: number, mb: number): number {
    if (this.streaming) return 1 / targetCount(this.examples(step, mb));
    this.examples(step, mb);
    const mbs = (this.cached as { mbs: Examples[] }).mbs;
    return 1 / mbs.reduce((s, ex) => s + targetCount(ex), 0);
  }

  private examples(step: number, mb: number): Examples {
    const s = this.streaming ? Math.floor(mb / this.microbatches) : step;
    const i = this.streaming ? mb % this.microbatches : mb;
    if (!this.cached || this.cached.step !== s) this.cached = { step: s, mbs: splitMicrobatches(this.sampler.batch(s), this.microbatches) };
    return this.cached.mbs[i];
  }

  inputs(step: number, mb: number): Tensor {
    const ex = this.examples(step, mb);
    return this.be.tensor(ex.inputs, [ex.n, ex.inputCols], ex.inputDType);
  }

  labels(step: number, mb: number): Tensor {
    const ex = this.examples(step, mb);
    return this.be.tensor(ex.labels, [ex.labels.length], 'i32');
  }
}

export function createRankRuntime(be: Backend, init: RankInit, ports: Map<number, MessagePort>, hooks: RankHooks = {}): RankRuntime {
  const { config, rank, schedule, stageBlocks, spec } = init;
  const train = toTrainConfig(config);
  const kind = scheduleKind(config.schedule);
  const stages = new Map<number, Stage>();
  schedule.stageToRank.forEach((r, s) => {
    if (r === rank) stages.set(s, new Stage(be, spec, s, stageBlocks[s], config.seed, { recompute: config.recompute }));
  });
  const sampler = new BatchSampler(createDataset(train, init.corpus).train, config.batchSize, config.seed);
  const data = new SampledMicrobatches(be, sampler, config.microbatches, UPDATE_WINDOWS[kind.update].stream);

  const mailbox = new Mailbox(rank);
  for (const [peer, port] of ports) mailbox.attach(port, peer);

  const fault = init.fault;
  const transportOptions = { rank, be, stageToRank: schedule.stageToRank, ports, mailbox, recvTimeoutMs: init.recvTimeoutMs };
  const transport = fault ? new FaultyTransport(transportOptions, fault) : new Transport(transportOptions);
  const policy = createUpdatePolicy(kind.update, be, stages, train);
  let current = 0;
  const executor = new RankExecutor({
    rank,
    be,
    order: schedule.order[rank],
    stages,
    data,
    transport,
    policy: fault ? faultyPolicy(policy, fault, hooks, () => current) : policy,
    gpuSpan: hooks.gpuSpan,
  });
  const runner: StepRunner = fault ? faultyRunner(executor, fault) : executor;

  const WARM_UP_MB = 0x7fffffff;
  /** One forward and backward of a one-example micro-batch through each of the rank's stages; with `update`, a throwaway optimizer's step too. */
  const dryStep = (update: boolean) => {
    for (const st of stages.values()) {
      // One example: one row on the first stage, its rows (the GPT: one per token) after it.
      const rows = rowsPerExample(spec);
      const input = st.inDType === 'i32' ? be.zeros([1, st.inCols], 'i32') : be.zeros([st.isFirst ? 1 : rows, st.inCols]);
      const labels = st.isLast ? be.zeros([rows], 'i32') : undefined;
      const out = st.forward(WARM_UP_MB, input, labels, 1);
      if (labels) be.dispose(labels);
      const dOut = st.isLast ? null : be.zeros([...out.shape]);
      be.dispose(out);
      const dIn = st.backward(WARM_UP_MB, dOut);
      if (dIn) be.dispose(dIn);
    }
    if (update) {
      const opt = createOptimizer(be, [...stages.values()].flatMap((st) => st.params), train);
      opt.step(1);
      opt.dispose();
    }
    for (const st of stages.values()) st.zeroGrads();
  };
  return {
    async warmUp() {
      const t0 = epochMs();
      let kernels = 0, compiled = 0;
      if (be.compileUsed) {
        // Nothing is computed in this pass (weights, optimizer state untouched): it only names the kernels to compile.
        ({ kernels, compiled } = await be.compileUsed(() => dryStep(true)));
        for (const st of stages.values()) st.zeroGrads();
      } else {
        dryStep(false);
      }
      await be.sync();
      return { warmUpMs: epochMs() - t0, kernels, compiled };
    },
    step: (step) => {
      current = step;
      return runner.runStep(step);
    },
    async readWeights() {
      const out: Weights = {};
      for (const st of stages.values()) Object.assign(out, await st.readParams());
      return out;
    },
    stats() {
      let liveStashes = 0, stashBytes = 0;
      for (const st of stages.values()) {
        liveStashes += st.liveStashes();
        stashBytes += st.stashBytes();
      }
      return { rank, liveStashes, stashBytes };
    },
    fail(e) {
      mailbox.fail(e);
    },
    dispose() {
      policy.dispose();
      for (const st of stages.values()) st.dispose();
      mailbox.clear();
      for (const p of ports.values()) p.close();
    },
  };
}
