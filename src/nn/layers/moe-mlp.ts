/**
 * A mixture-of-experts MLP (Switch Transformer top-1, GShard top-2) on one group of token rows u [S, C] (the
 * group: the rows one forward sees, i.e. one micro-batch's tokens on one worker):
 *
 *   P = softmax(u·Wrᵀ)                        the router, Wr [E, C], no bias
 *   route = top-k of P, positions in token order within cap = capacityFactor·k·S/E rows per expert
 *           (first choices of the whole group before any second choice; 0: dropless, cap = S)
 *   gates: top-1 g = P[e1] (not renormalised); top-2 g_j = P[e_j] / (P[e1] + P[e2]), normalised before the
 *          capacity as GShard's Algorithm 1 does (a token whose second choice is dropped keeps g1 < 1; fairseq's
 *          top2gating renormalises over the kept choices instead)
 *   out[s] = Σ_j g_j · c_proj_e(gelu(c_fc_e(u[s])))  over the kept choices; a token over capacity gets 0 from
 *            that expert (its block passes it through the residual only)
 *
 * The experts are stacked: c_fc [E·4C, C], c_proj [E·C, 4C] (expert e's rows e·4C.. and e·C..), PyTorch's layout,
 * no biases (as Switch's and Mixtral's experts). The dispatch gathers each expert's rows into a buffer [E·cap, C],
 * the experts run as one grouped matmul each way, the combine gathers back. Backward: the combine's gradient goes
 * to the experts' rows and to the gates, the gates' to P, the softmax's to the router and to u; the dispatch's
 * backward sums each token's rows (the scatter-add of a gather, written as a gather per token: no atomics).
 *
 * The load-balancing loss aux = E·Σ_e f_e·P̄_e (moe-reference.ts) is computed by the forward when asked; its
 * gradient, times the scale the caller gives, is added to the router's in backwardInput.
 *
 * Expert parallelism (an ep group of more than one, nn/expert-parallel.ts; the bookkeeping: moe/moe-ep.ts): this
 * worker holds experts [i·E/ep, (i+1)·E/ep) (pieces `name@epI/EP` of c_fc and c_proj, the rows of the whole
 * initialisation) and the router whole; its u is its slice of the group's tokens. The forward gathers the router's
 * probabilities of the group and routes it whole (one device's decisions, capacity and drops); dispatches its tokens'
 * rows into its local buffer; an all-to-all takes them to their experts' owners, which compute their block of the
 * group's buffer; another brings the outputs back to be combined. The backward runs the same two exchanges with the
 * gradients. The aux loss is the group's (its gradient's rows this worker's), counted by member 0 only, as are the
 * routing counts.
 */
import type { Backend, MoeRoute, Tensor } from '../backend.ts';
import { SOLO_EP, type EpGroup } from '../expert-parallel.ts';
import { epLocalSlot, epPieceName, epPlan } from '../moe/moe-ep.ts';
import { expertCapacity } from '../moe/moe-shapes.ts';
import { createParam, initValues, tagged, type InitSpec, type Param } from '../param.ts';

export interface MoeMlpOptions {
  readonly prefix: string;
  readonly dim: number;
  readonly experts: number;
  readonly topK: number;
  /** ≥ 0; 0: dropless. */
  readonly capacityFactor: number;
  readonly init: InitSpec;
  readonly projInit: InitSpec;
}

/** What the forward keeps (indices into `saved`); with ep, xe, h and g are the owner's block, ye the local rows, and the group's rowToken follows. */
const F = { u: 0, P: 1, sel: 2, slot: 3, rowToken: 4, gates: 5, xe: 6, h: 7, g: 8, ye: 9, groupRowToken: 10 } as const;
/** What backwardInput keeps for backwardWeight. */
const Wk = { u: 0, xe: 1, g: 2, dye: 3, dh: 4, dlogits: 5 } as const;

export interface MoeForward {
  out: Tensor;
  saved: Tensor[];
  /** The group's aux loss [1] and its gradient with respect to P [S, E], when asked. */
  aux: { loss: Tensor; dProbs: Tensor } | null;
  /** With save: the route's load [E, 3] (first choices, second choices, dropped per expert) and the capacity; the caller owns it. */
  load: { counts: Tensor; capacity: number } | null;
}

export class MoeMlp {
  readonly router: Param;
  readonly fc: Param;
  readonly proj: Param;
  readonly params: readonly Param[];
  readonly E: number;
  /** Experts this worker holds (E / ep). */
  private readonly mine: number;
  /** Tensors the forward keeps. */
  readonly savedCount: number;

  constructor(
    private readonly be: Backend,
    private readonly o: MoeMlpOptions,
    seed: number,
    private readonly ep: EpGroup = SOLO_EP,
  ) {
    const C = o.dim, E = o.experts;
    this.E = E;
    this.mine = E / ep.size;
    this.router = createParam(be, `${o.prefix}.router.weight`, [E, C], o.init, seed, true);
    this.fc = this.expertParam(`${o.prefix}.experts.c_fc.weight`, 4 * C, C, o.init, seed);
    this.proj = this.expertParam(`${o.prefix}.experts.c_proj.weight`, C, 4 * C, o.projInit, seed);
    this.params = [this.router, this.fc, this.proj];
    this.savedCount = ep.size > 1 ? 11 : 10;
  }

  /** The stacked experts' weight [E·rows, cols], or with ep this worker's experts' rows of it (the whole one's initial values). */
  private expertParam(name: string, rows: number, cols: number, init: InitSpec, seed: number): Param {
    const { size, index } = this.ep;
    if (size === 1) return createParam(this.be, name, [this.E * rows, cols], init, seed, true);
    const whole = initValues(name, this.E * rows * cols, init, seed);
    const n = this.mine * rows * cols;
    const shape = [this.mine * rows, cols];
    return tagged(this.be, { name: epPieceName(name, index, size), value: this.be.tensor(whole.subarray(index * n, (index + 1) * n), shape), grad: this.be.zeros(shape), decay: true });
  }

  /** Rows per expert for a group of S tokens. */
  capacity(S: number): number {
    return expertCapacity(this.o.capacityFactor, this.o.topK, S, this.E);
  }

  /** The routing group's rows when this worker holds `S` of them (the whole micro-batch over the ep group). */
  groupRows(S: number): number {
    return S * this.ep.size;
  }

  /** The router's probabilities and decisions for u (the caller disposes them). */
  route(u: Tensor): { P: Tensor; route: MoeRoute } {
    const be = this.be;
    const logits = be.matmul(u, this.router.value, { transB: true });
    const P = be.softmaxRows(logits);
    be.dispose(logits);
    return { P, route: be.moeRoute(P, this.o.topK, this.capacity(u.shape[0])) };
  }

  async forward(u: Tensor, save: boolean, withAux: boolean): Promise<MoeForward> {
    if (this.ep.size > 1) return this.forwardEp(u, save, withAux);
    const be = this.be, E = this.E;
    const { P, route } = this.route(u);
    const gates = be.moeGates(P, route.sel);
    const xe = be.moeDispatch(u, route.rowToken, this.o.topK);
    const h = be.groupedMatmul(xe, this.fc.value, E, { transB: true });
    const g = be.activation('gelu', h);
    const ye = be.groupedMatmul(g, this.proj.value, E, { transB: true });
    const out = be.moeCombine(ye, route.slot, gates);
    const aux = withAux ? be.moeAuxLoss(P, route.sel) : null;
    const saved = [u, P, route.sel, route.slot, route.rowToken, gates, xe, h, g, ye];
    if (save) return { out, saved, aux, load: { counts: route.load, capacity: this.capacity(u.shape[0]) } };
    for (const t of saved.slice(1)) be.dispose(t);
    be.dispose(route.load);
    return { out, saved: [], aux, load: null };
  }

  /**
   * du from dOut; `aux` (the forward's) adds aux.scale·∂aux/∂P to the router's gradient. Replaces `saved` by what
   * backwardWeight reads (the owner frees what was dropped, as a Stage does: layer.ts).
   */
  async backwardInput(saved: Tensor[], dOut: Tensor, aux: { dProbs: Tensor; scale: number } | null): Promise<Tensor> {
    const be = this.be, E = this.mine, s = saved;
    const { dye: dyeLocal, dGates } = be.moeCombineBackward(dOut, s[F.ye], s[F.slot], s[F.gates], s[F.rowToken]);
    // With ep: the combine's gradient rows to their experts' owners, the experts' input gradients back (moe-ep.ts).
    const plan = this.ep.size > 1 ? epPlan((await be.read(s[F.groupRowToken])) as Int32Array, this.o.topK, dOut.shape[0], this.ep.size, this.ep.index) : null;
    const dye = plan ? await this.ep.exchangeRows(dyeLocal, plan.toOwners.send, plan.toOwners.recv, plan.blockRows) : dyeLocal;
    const dg = be.groupedMatmul(dye, this.proj.value, E);
    const dh = be.activationBackward('gelu', s[F.h], dg);
    be.dispose(dg);
    const dxeMine = be.groupedMatmul(dh, this.fc.value, E);
    const dxe = plan ? await this.ep.exchangeRows(dxeMine, plan.toTokens.send, plan.toTokens.recv, plan.localRows) : dxeMine;
    const duExperts = be.moeDispatchBackward(dxe, s[F.slot]);
    be.dispose(dxe);
    const dP = be.moeGatesBackward(s[F.P], s[F.sel], dGates);
    be.dispose(dGates);
    if (aux && aux.scale !== 0) be.axpy(dP, aux.dProbs, aux.scale);
    const dlogits = be.softmaxRowsBackward(s[F.P], dP);
    be.dispose(dP);
    const duRouter = be.matmul(dlogits, this.router.value);
    const du = be.add(duExperts, duRouter);
    be.dispose(duExperts);
    be.dispose(duRouter);
    saved.splice(0, saved.length, s[F.u], s[F.xe], s[F.g], dye, dh, dlogits);
    return du;
  }

  /** Weight gradients from what backwardInput kept. */
  backwardWeight(kept: readonly Tensor[]): void {
    const be = this.be, E = this.mine, s = kept;
    be.groupedMatmulAcc(this.proj.grad, s[Wk.dye], s[Wk.g], E, { transA: true });
    be.groupedMatmulAcc(this.fc.grad, s[Wk.dh], s[Wk.xe], E, { transA: true });
    be.matmulAcc(this.router.grad, s[Wk.dlogits], s[Wk.u], { transA: true });
  }

  /** The forward with ep > 1 (the header's last paragraph). */
  private async forwardEp(u: Tensor, save: boolean, withAux: boolean): Promise<MoeForward> {
    const be = this.be, ep = this.ep, k = this.o.topK;
    const S = u.shape[0];
    const logits = be.matmul(u, this.router.value, { transB: true });
    const P = be.softmaxRows(logits);
    be.dispose(logits);
    // The counts: every member's probabilities, so each routes the whole group as one device does.
    const groupP = await ep.allGatherRows(P);
    const cap = this.capacity(groupP.shape[0]);
    const route = be.moeRoute(groupP, k, cap);
    const [selG, slotG, rowTokenG] = (await (be.readMany ? be.readMany([route.sel, route.slot, route.rowToken]) : Promise.all([be.read(route.sel), be.read(route.slot), be.read(route.rowToken)]))) as Int32Array[];
    const plan = epPlan(rowTokenG, k, S, ep.size, ep.index);
    const sel = be.tensor(selG.subarray(ep.index * S * k, (ep.index + 1) * S * k), [S, k], 'i32');
    const slot = be.tensor(epLocalSlot(slotG, rowTokenG, k, S, ep.index), [S, k], 'i32');
    const rowToken = be.tensor(plan.rowToken, [plan.localRows], 'i32');
    const gates = be.moeGates(P, sel);
    const xeLocal = be.moeDispatch(u, rowToken, k);
    const xe = await ep.exchangeRows(xeLocal, plan.toOwners.send, plan.toOwners.recv, plan.blockRows);
    const h = be.groupedMatmul(xe, this.fc.value, this.mine, { transB: true });
    const g = be.activation('gelu', h);
    const yeMine = be.groupedMatmul(g, this.proj.value, this.mine, { transB: true });
    const ye = await ep.exchangeRows(yeMine, plan.toTokens.send, plan.toTokens.recv, plan.localRows);
    const out = be.moeCombine(ye, slot, gates);
    let aux: MoeForward['aux'] = null;
    if (withAux) {
      const group = be.moeAuxLoss(groupP, route.sel);
      // This member's rows of the gradient; the group's loss counted once (member 0).
      const mine = be.tensor(Int32Array.from({ length: S }, (_, i) => ep.index * S + i), [S], 'i32');
      aux = { loss: ep.index === 0 ? group.loss : be.zeros([1]), dProbs: be.moeDispatch(group.dProbs, mine, 1) };
      if (ep.index !== 0) be.dispose(group.loss);
      be.dispose(group.dProbs);
      be.dispose(mine);
    }
    be.dispose(groupP);
    be.dispose(route.sel);
    be.dispose(route.slot);
    const saved = [u, P, sel, slot, rowToken, gates, xe, h, g, ye, route.rowToken];
    const load = save && ep.index === 0 ? { counts: route.load, capacity: cap } : null;
    if (!load) be.dispose(route.load);
    if (save) return { out, saved, aux, load };
    for (const t of saved.slice(1)) be.dispose(t);
    return { out, saved: [], aux, load: null };
  }
}
