/**
 * ZeRO's shard of one stage on one worker (ZeRO-1, 2 and 3 alike): the stage's parameters laid end to
 * end as one vector (their order in the stage), cut into dp chunks as the ring
 * cuts it (mesh.ts chunkBounds); this worker owns chunk ownedChunk(replica, dp),
 * the one its reduce-scatter leaves summed. It keeps the optimizer state (AdamW
 * moments, SGD velocity) and a master copy of the weights for that chunk only,
 * as pieces of the parameters it crosses, so the update is the optimizer's own
 * per-element rule, the same as on one device: ZeRO-1 changes where the state
 * lives, not the numbers. ZeRO-3 also starts its all-gathers from this
 * master copy (placeOwn) and saves it as pieces (weightPieces).
 *
 * On the device the shard holds, between its updates, only what its stage keeps (`keep`): ZeRO-2 and 3 the
 * owned chunk's gradient accumulator, ZeRO-3 the owned chunk's weights; the other pieces get storage for the
 * update alone (Backend.allocStorage / freeStorage), so ZeRO-1 never holds more than ZeRO-0.
 */
import { chunkBounds } from '../../schedule/mesh.ts';
import type { Backend, Tensor } from '../../nn/backend.ts';
import { createOptimizer, OPTIMIZER_SLOTS, type Optimizer, type OptimizerState } from '../../nn/optimizer.ts';
import { ConfigError } from '../../util/errors.ts';
import { HostOptimizer } from '../../nn/host-optimizer.ts';
import type { OptimizerPieces } from './policy.ts';
import { tagged, type Param } from '../../nn/param.ts';
import type { TrainConfig } from '../../nn/train-config.ts';
import { ownedChunk, type Vector } from '../comm/index.ts';

interface Segment {
  /** The parameter it is a piece of, and the piece [lo, hi) of its values. */
  param: Param;
  lo: number;
  hi: number;
  /** Where the piece sits in the stage's vector. */
  at: number;
  /** The piece's name (`name[lo:hi]`) and, on the device, the piece as a parameter the optimizer updates (its own value and grad tensors; none offloaded). */
  name: string;
  piece: Param | null;
}

/** Offsets of each parameter in the stage's vector, and the vector's length. */
export function paramOffsets(params: readonly Param[]): { offsets: number[]; total: number } {
  const offsets: number[] = [];
  let total = 0;
  for (const p of params) {
    offsets.push(total);
    total += p.value.size;
  }
  return { offsets, total };
}

/** The key of the piece [lo, hi) of parameter `name` among a worker's ZeRO-3 weights. */
export function pieceName(name: string, lo: number, hi: number): string {
  return `${name}[${lo}:${hi}]`;
}

/** Splits a piece key into its parameter and range; null for a whole parameter's name. */
export function parsePieceName(key: string): { name: string; lo: number; hi: number } | null {
  const m = /^(.*)\[(\d+):(\d+)\]$/.exec(key);
  return m ? { name: m[1], lo: Number(m[2]), hi: Number(m[3]) } : null;
}

/** Which pieces stay on the device between updates. */
export interface ShardKeeps {
  /** The owned chunk's weights (ZeRO-3: the device's only copy of them between gathers). */
  weights: boolean;
  /** The owned chunk's gradient, accumulated over the step (ZeRO-2 and 3: accumulate). */
  grads: boolean;
}

export class ZeroShard {
  private readonly segments: Segment[] = [];
  private readonly opt: Optimizer | null;
  /** Offloaded (ZeRO-Offload): the shard's optimizer on the host, stepping the master copy in place. */
  private readonly hostOpt: HostOptimizer | null;
  private loaded = false;
  /** The owned chunk's weights on the host (the master copy's values), once loaded. */
  private host: Vector | null = null;
  /** Offloaded with ZeRO-2: the owned chunk's gradient, accumulated over the step in host memory (none on the device). */
  private hostGrad: Vector | null = null;
  /** The chunk this worker owns: [lo, hi) of the stage's vector. */
  readonly lo: number;
  readonly hi: number;

  constructor(
    private readonly be: Backend,
    params: readonly Param[],
    train: TrainConfig,
    replica: number,
    dp: number,
    private readonly keep: ShardKeeps = { weights: false, grads: false },
    offload = false,
  ) {
    if (offload && keep.weights) throw new Error('an offloaded shard keeps no weights on the device (ZeRO-Offload goes with ZeRO 0, 1 and 2)');
    const { offsets, total } = paramOffsets(params);
    const bounds = chunkBounds(total, dp);
    const c = ownedChunk(replica, dp);
    this.lo = bounds[c];
    this.hi = bounds[c + 1];
    params.forEach((param, i) => {
      const lo = Math.max(this.lo, offsets[i]) - offsets[i];
      const hi = Math.min(this.hi, offsets[i] + param.value.size) - offsets[i];
      if (hi <= lo) return;
      const name = pieceName(param.name, lo, hi);
      const piece = offload ? null : tagged(be, { name, value: be.zeros([hi - lo]), grad: be.zeros([hi - lo]), decay: param.decay });
      this.segments.push({ param, lo, hi, at: offsets[i] + lo, name, piece });
    });
    this.hostOpt = offload ? new HostOptimizer(this.segments.map((s) => ({ name: s.name, size: s.hi - s.lo, decay: s.param.decay })), train) : null;
    this.opt = offload ? null : createOptimizer(be, this.devicePieces(), train);
    for (const p of this.devicePieces()) {
      if (!keep.weights) be.freeStorage(p.value);
      if (!keep.grads) be.freeStorage(p.grad);
    }
  }

  private devicePieces(): Param[] {
    return this.segments.flatMap((s) => (s.piece ? [s.piece] : []));
  }

  /** The device pieces, each with its segment (none offloaded). */
  private held(): { s: Segment; piece: Param }[] {
    return this.segments.flatMap((s) => (s.piece ? [{ s, piece: s.piece }] : []));
  }

  /** Bytes of its optimizer state and (ZeRO-2) its gradient accumulator in host memory (offloaded; 4 bytes a value), else 0. */
  hostBytes(): number {
    return (this.hostOpt?.bytes(4) ?? 0) + (this.hostOpt && this.keep.grads ? 4 * (this.hi - this.lo) : 0);
  }

  /**
   * Adds the owned chunk [lo, hi) of `g` (a stage vector after its reduce-scatter) to the gradient kept between
   * updates (keep.grads): on the device, or, offloaded, in host memory (the same additions, in `g`'s precision).
   */
  accumulate(g: Vector): void {
    if (!this.keep.grads) throw new Error('this shard keeps no gradient between updates');
    if (this.hostOpt) {
      const acc = (this.hostGrad ??= g instanceof Float64Array ? new Float64Array(this.hi - this.lo) : new Float32Array(this.hi - this.lo));
      for (let i = 0; i < acc.length; i++) acc[i] += g[this.lo + i];
      return;
    }
    for (const { s, piece } of this.held()) {
      const t = this.be.memory.scope('staging', () => this.be.tensor(g.subarray(s.at, s.at + s.hi - s.lo), [s.hi - s.lo]));
      this.be.axpy(piece.grad, t, 1);
      this.be.dispose(t);
    }
  }

  /** The gradient kept between updates, as the owned chunk's vector (keep.grads). */
  async readGrad(): Promise<Vector> {
    if (this.hostOpt) return this.hostGrad ? this.hostGrad.slice() : this.vector(this.hi - this.lo);
    const held = this.held();
    const parts = await Promise.all(held.map(({ piece }) => this.be.read(piece.grad)));
    const out = this.vector(this.hi - this.lo);
    held.forEach(({ s }, k) => out.set(parts[k], s.at - this.lo));
    return out;
  }

  /** Replaces the gradient kept on the device with the owned chunk's vector `g` (keep.grads: after a sum over model copies). */
  writeGrad(g: Vector): void {
    if (this.hostOpt) {
      this.hostGrad = g.slice();
      return;
    }
    for (const { s, piece } of this.held()) this.write(piece.grad, g.subarray(s.at - this.lo, s.at - this.lo + s.hi - s.lo));
  }

  /** The optimizer-state parameters of this shard on the device (its pieces; none offloaded). */
  get pieces(): readonly Param[] {
    return this.devicePieces();
  }

  /**
   * One optimizer step on the owned chunk: `x` holds the summed gradients there
   * (after the reduce-scatter); afterwards it holds the updated weights there.
   * The first call reads the chunk's weights off the device (every replica holds
   * the same); later steps keep them here.
   */
  async update(x: Vector, lr: number): Promise<void> {
    const { be, keep } = this;
    await this.ensureLoaded();
    const host = this.host as Vector;
    if (this.hostOpt) {
      // Offloaded: the master copy stepped on the CPU in place, with the summed chunk as its gradients (ZeRO-2: the
      // host accumulator's, which starts the next step at zero).
      if (keep.grads) {
        x.fill(0, this.lo, this.hi);
        if (this.hostGrad) x.set(this.hostGrad, this.lo);
        this.hostGrad = null;
      }
      this.hostOpt.lr = lr;
      this.hostOpt.step(
        this.segments.map((s) => host.subarray(s.at - this.lo, s.at - this.lo + s.hi - s.lo)),
        this.segments.map((s) => x.subarray(s.at, s.at + s.hi - s.lo)),
      );
      x.set(host, this.lo);
      return;
    }
    const held = this.held();
    for (const { s, piece } of held) {
      // The pieces not kept get storage for this update alone: the weights from the master copy, the gradient from x.
      if (!keep.weights) {
        be.allocStorage(piece.value, 'weights');
        this.write(piece.value, host.subarray(s.at - this.lo, s.at - this.lo + s.hi - s.lo));
      }
      if (!keep.grads) {
        be.allocStorage(piece.grad, 'grads');
        this.write(piece.grad, x.subarray(s.at, s.at + s.hi - s.lo));
      }
    }
    const opt = this.opt as Optimizer;
    opt.lr = lr;
    opt.step(1);
    const updated = await Promise.all(held.map(({ piece }) => be.read(piece.value)));
    held.forEach(({ s }, k) => x.set(updated[k], s.at));
    this.host = x.slice(this.lo, this.hi);
    for (const { piece } of held) {
      if (!keep.weights) be.freeStorage(piece.value);
      if (keep.grads) be.fill(piece.grad, 0);
      else be.freeStorage(piece.grad);
    }
  }

  /**
   * Takes the owned chunk's weights off the device into the master copy, once
   * (every replica holds the same weights until ZeRO-3 frees them; a resume
   * writes the saved weights onto the device and calls `reload` first).
   */
  async ensureLoaded(): Promise<void> {
    if (this.loaded) return;
    const values = await Promise.all(this.segments.map((s) => this.be.read(s.param.value)));
    if (this.keep.weights) this.segments.forEach((s, k) => s.piece && this.write(s.piece.value, values[k].subarray(s.lo, s.hi)));
    const host = values[0] instanceof Float64Array || values.length === 0 ? new Float64Array(this.hi - this.lo) : new Float32Array(this.hi - this.lo);
    this.segments.forEach((s, k) => host.set(values[k].subarray(s.lo, s.hi), s.at - this.lo));
    this.host = host;
    this.loaded = true;
  }

  /** The next ensureLoaded reads the device again (its weights were just loaded from a saved state). */
  reload(): void {
    this.loaded = false;
    this.host = null;
  }

  /** A zeroed host vector of `n` values, of the device's precision (known once loaded). */
  vector(n: number): Vector {
    if (!this.host) throw new Error('the shard is read before its weights were loaded');
    return this.host instanceof Float64Array ? new Float64Array(n) : new Float32Array(n);
  }

  /** Puts the owned chunk's weights at [lo, hi) of the stage vector `x` (the part an all-gather starts from). */
  placeOwn(x: Vector): void {
    if (!this.host) throw new Error('the shard is read before its weights were loaded');
    x.set(this.host, this.lo);
  }

  /** The owned chunk's weights, as pieces of whole parameters: `name[lo:hi]` → values (ZeRO-3's part of a checkpoint). */
  weightPieces(): Record<string, Vector> {
    if (!this.host) throw new Error('the shard is read before its weights were loaded');
    const out: Record<string, Vector> = {};
    for (const s of this.segments) out[pieceName(s.param.name, s.lo, s.hi)] = this.host.slice(s.at - this.lo, s.at - this.lo + s.hi - s.lo);
    return out;
  }

  /** This shard's optimizer state: its step count and the slots of each piece [lo, hi) of a parameter it holds. */
  async readState(): Promise<OptimizerPieces> {
    const { name, steps, slots } = await (this.hostOpt ?? (this.opt as Optimizer)).readState();
    return { name, steps, pieces: this.segments.map((s) => ({ param: s.param.name, lo: s.lo, hi: s.hi, slots: slots[s.name] })) };
  }

  /** Sets this shard's optimizer state from a run's whole state (by parameter name): its pieces of each slot. Checked whole first. */
  loadState(state: OptimizerState<ArrayLike<number>>): void {
    const opt = this.hostOpt ?? (this.opt as Optimizer);
    const names = OPTIMIZER_SLOTS[opt.name];
    const slots: OptimizerState<ArrayLike<number>>['slots'] = {};
    for (const s of this.segments) {
      const own = state.slots[s.param.name];
      const piece: Record<string, ArrayLike<number>> = {};
      for (const slot of names) {
        const v = own?.[slot];
        if (v === undefined) throw new ConfigError(`optimizer state.slots["${s.param.name}"].${slot}`, 'missing', `must be given (${opt.name} keeps ${names.join(' and ')})`);
        if (v.length !== s.param.value.size) throw new ConfigError(`optimizer state.slots["${s.param.name}"].${slot}.length`, v.length, `must be ${s.param.value.size} (shape [${s.param.value.shape.join(', ')}])`);
        piece[slot] = ArrayBuffer.isView(v) ? (v as Float64Array).subarray(s.lo, s.hi) : Array.prototype.slice.call(v, s.lo, s.hi);
      }
      slots[s.name] = piece;
    }
    opt.loadState({ name: state.name, steps: state.steps, slots });
  }

  private write(dst: Tensor, values: ArrayLike<number>): void {
    const t = this.be.memory.scope('staging', () => this.be.tensor(values, dst.shape));
    this.be.copyInto(dst, t);
    this.be.dispose(t);
  }

  dispose(): void {
    this.opt?.dispose();
    for (const p of this.devicePieces()) {
      this.be.dispose(p.value);
      this.be.dispose(p.grad);
    }
  }
}
