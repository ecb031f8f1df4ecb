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
 */
import type { Backend, MoeRoute, Tensor } from '../backend.ts';
import { expertCapacity } from '../moe/moe-shapes.ts';
import { createParam, type InitSpec, type Param } from '../param.ts';

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

/** What the forward keeps (indices into `saved`). */
const F = { u: 0, P: 1, sel: 2, slot: 3, rowToken: 4, gates: 5, xe: 6, h: 7, g: 8, ye: 9 } as const;
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

  constructor(
    private readonly be: Backend,
    private readonly o: MoeMlpOptions,
    seed: number,
  ) {
    const C = o.dim, E = o.experts;
    this.E = E;
    this.router = createParam(be, `${o.prefix}.router.weight`, [E, C], o.init, seed, true);
    this.fc = createParam(be, `${o.prefix}.experts.c_fc.weight`, [E * 4 * C, C], o.init, seed, true);
    this.proj = createParam(be, `${o.prefix}.experts.c_proj.weight`, [E * C, 4 * C], o.projInit, seed, true);
    this.params = [this.router, this.fc, this.proj];
  }

  /** Rows per expert for a group of S tokens. */
  capacity(S: number): number {
    return expertCapacity(this.o.capacityFactor, this.o.topK, S, this.E);
  }

  /** The router's probabilities and decisions for u (the caller disposes them). */
  route(u: Tensor): { P: Tensor; route: MoeRoute } {
    const be = this.be;
    const logits = be.matmul(u, this.router.value, { transB: true });
    const P = be.softmaxRows(logits);
    be.dispose(logits);
    return { P, route: be.moeRoute(P, this.o.topK, this.capacity(u.shape[0])) };
  }

  forward(u: Tensor, save: boolean, withAux: boolean): MoeForward {
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
  backwardInput(saved: Tensor[], dOut: Tensor, aux: { dProbs: Tensor; scale: number } | null): Tensor {
    const be = this.be, E = this.E, s = saved;
    const { dye, dGates } = be.moeCombineBackward(dOut, s[F.ye], s[F.slot], s[F.gates], s[F.rowToken]);
    const dg = be.groupedMatmul(dye, this.proj.value, E);
    const dh = be.activationBackward('gelu', s[F.h], dg);
    be.dispose(dg);
    const dxe = be.groupedMatmul(dh, this.fc.value, E);
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
    const be = this.be, E = this.E, s = kept;
    be.groupedMatmulAcc(this.proj.grad, s[Wk.dye], s[Wk.g], E, { transA: true });
    be.groupedMatmulAcc(this.fc.grad, s[Wk.dh], s[Wk.xe], E, { transA: true });
    be.matmulAcc(this.router.grad, s[Wk.dlogits], s[Wk.u], { transA: true });
  }
}
