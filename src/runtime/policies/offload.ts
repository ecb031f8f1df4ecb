/**
 * ZeRO-Offload (Ren et al. 2021) for a stage without ZeRO: its optimizer state (AdamW's moments, SGD's velocity) and
 * a master copy of its weights live in the worker's host memory, not on its device. At the step's end (flush.ts) the
 * stage's final gradients come down, the step runs on the CPU (nn/host-optimizer.ts: the device kernel's arithmetic)
 * and the weights go back up. The device holds the weights and gradients alone. ZeRO-1's shard offloads the same
 * way, its chunk only (zero-shard.ts).
 */
import type { Backend } from '../../nn/backend.ts';
import { HostOptimizer, type HostVector } from '../../nn/host-optimizer.ts';
import type { OptimizerName, OptimizerState } from '../../nn/optimizer.ts';
import type { Param } from '../../nn/param.ts';
import type { TrainConfig } from '../../nn/train-config.ts';
import { readVector, writeVector } from '../comm/index.ts';
import type { OptimizerPieces } from './policy.ts';

export class OffloadedStage {
  private readonly opt: HostOptimizer;
  /** The weights' master copy on the host, read off the device at the first step (after any resume's load). */
  private master: HostVector | null = null;

  constructor(
    private readonly be: Backend,
    private readonly params: readonly Param[],
    train: TrainConfig,
  ) {
    this.opt = new HostOptimizer(params.map((p) => ({ name: p.name, size: p.value.size, decay: p.decay })), train);
  }

  /** One step at learning rate `lr`: the gradients down, the CPU's update, the weights up. Resolves to the bytes moved. */
  async step(lr: number): Promise<number> {
    const { be, params } = this;
    const grads = await readVector(be, params.map((p) => p.grad));
    this.master ??= await readVector(be, params.map((p) => p.value));
    const master = this.master;
    const values: HostVector[] = [];
    const gs: HostVector[] = [];
    let at = 0;
    for (const p of params) {
      values.push(master.subarray(at, at + p.value.size));
      gs.push(grads.subarray(at, at + p.value.size));
      at += p.value.size;
    }
    this.opt.lr = lr;
    this.opt.step(values, gs, 1);
    // Queued, not waited for: the queue runs the write before the next step's kernels read the weights.
    writeVector(be, params.map((p) => p.value), master);
    return grads.byteLength + master.byteLength;
  }

  /** Bytes of its optimizer state in host memory (4 bytes a value, as on the device). */
  hostBytes(): number {
    return this.opt.bytes(4);
  }

  readState(): Promise<OptimizerState> {
    return this.opt.readState();
  }

  /** The state from a run's whole state; the weights' master copy is read again at the next step (a resume loads them onto the device). */
  loadState(state: OptimizerState<ArrayLike<number>>): void {
    this.opt.loadState(state);
    this.master = null;
  }
}

/** The offloaded stages' states as whole-parameter pieces (one step count: they step together). */
export async function offloadedPieces(name: OptimizerName, stages: readonly OffloadedStage[]): Promise<OptimizerPieces> {
  const states = await Promise.all(stages.map((s) => s.readState()));
  const pieces = states.flatMap((st) => Object.entries(st.slots).map(([param, slots]) => ({ param, lo: 0, hi: Object.values(slots)[0].length, slots })));
  return { name, steps: states[0]?.steps ?? 0, pieces };
}
