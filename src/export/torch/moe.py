"""A GPT block's mixture-of-experts MLP (Switch top-1, GShard top-2), as the page computes it (src/nn/layers/moe-mlp.ts,
its float64 reference src/nn/moe/moe-reference.ts), on one group of token rows u [S, C]: one micro-batch's tokens on
one process.

    P      = softmax(u @ router.weight^T)                  router.weight [E, C], no bias
    sel    = each token's k best experts by P, ties to the lower expert index (the second: the best of the others)
    slot   = positions in each expert's buffer of cap rows: every first choice of the group in token order, then
             every second choice behind them; a choice past cap is dropped. cap = ceil(capacityFactor * k * S / E),
             at least 1, at most S; capacityFactor = 0: dropless (cap = S)
    gates  = top-1: P[e1] (Switch: not renormalised); top-2: P[e_j] / (P[e1] + P[e2]) (GShard), before the capacity
    out[s] = sum over the kept choices j of gates[s, j] * c_proj_e(gelu_tanh(c_fc_e(u[s]))): a token over capacity
             gets nothing from that expert (its block passes it on through the residual only)

The experts are stacked as the page stores them, no biases: experts.c_fc.weight [E*4C, C] (expert e's rows e*4C..),
experts.c_proj.weight [E*C, 4C]. The dispatch gathers each expert's rows into a buffer [E, cap, C], the experts run
as one batched matmul each way, the combine gathers back: every value is the reference's, to float32 rounding.

The load-balancing loss aux = E * sum_e f_e * mean_s P[s, e] (f_e the share of the group's first choices on e, a
count: no gradient), weighted by alpha * S / stepTokens (the group's share of the step's token rows): its gradient
joins the router's wherever the block's output gradient arrives (with_aux), as the page adds it in backwardInput;
the weighted value is counted there too, once per micro-batch whatever recomputes the forward (take_aux).
"""
import math

import torch
import torch.nn.functional as F

from split_backward import recorded

_counted = []  # (weighted aux loss, choices dropped) of each group whose gradient went back since take_aux last read them


def take_aux():
    """(the weighted aux losses, the choices dropped for capacity) summed over the groups whose backward ran since the
    last call (this process's MoE blocks, each micro-batch once)."""
    total = (sum(a for a, _ in _counted), sum(d for _, d in _counted))
    _counted.clear()
    return total


class _WithAux(torch.autograd.Function):
    """y unchanged; its backward also gives the aux term gradient 1 (so d(objective)/d(aux) = 1) and counts it."""

    @staticmethod
    def forward(ctx, y, aux, dropped):
        ctx.aux, ctx.dropped = aux.detach(), dropped
        return y.clone()

    @staticmethod
    def backward(ctx, dy):
        _counted.append((ctx.aux.item(), int(ctx.dropped.sum().item())))
        return dy, torch.ones_like(ctx.aux), None


def with_aux(y, aux, dropped):
    """y, with `aux` (a weighted aux loss [ ]) added to the objective its gradient flows back from; its backward
    counts aux and `dropped` (the group's dropped choices per expert) for take_aux."""
    return _WithAux.apply(y, aux, dropped)


def capacity(capacity_factor, k, S, E):
    """Rows of one expert's buffer (moe-shapes.ts expertCapacity)."""
    if capacity_factor == 0:
        return S
    return min(S, max(1, math.ceil(capacity_factor * k * S / E)))


def first_best(p):
    """Per row, the index of the largest value, the lowest index among equals."""
    E = p.shape[1]
    at_max = p == p.max(dim=1, keepdim=True).values
    return (at_max.to(torch.int64) * torch.arange(E, 0, -1, device=p.device)).argmax(dim=1)


def route(probs, k, cap):
    """(sel [S, k], slot [S, k]: e * cap + position, -1 when dropped; row_token [E * cap]: the token a row holds, S when
    empty; dropped per expert [E]), as moe-reference.ts routeRef decides them."""
    S, E = probs.shape
    p = probs.detach()
    sel = [first_best(p)]
    if k == 2:
        sel.append(first_best(p.scatter(1, sel[0][:, None], -1.0)))  # probabilities are >= 0: the first choice never wins again
    sel = torch.stack(sel, dim=1)
    onehot = F.one_hot(sel.t().reshape(-1), E)  # [k*S, E], every first choice before every second choice
    pos = ((onehot.cumsum(dim=0) - 1) * onehot).sum(dim=1).view(k, S).t()  # [S, k]
    kept = pos < cap
    slot = torch.where(kept, sel * cap + pos, torch.full_like(pos, -1))
    row_token = torch.full((E * cap,), S, dtype=torch.int64, device=probs.device)
    tokens = torch.arange(S, device=probs.device)[:, None].expand(S, k)
    row_token[slot[kept]] = tokens[kept]
    dropped = torch.zeros(E, dtype=torch.int64, device=probs.device).index_add_(0, sel[~kept], torch.ones_like(sel[~kept]))
    return sel, slot, row_token, dropped


def gates_of(probs, sel):
    """[S, k]: top-1 the chosen probability; top-2 each over the two's sum (gradients to P as gatesBackwardRef's)."""
    p = probs.gather(1, sel)
    return p if sel.shape[1] == 1 else p / p.sum(dim=1, keepdim=True)


def aux_loss(probs, sel):
    """E * sum_e f_e * mean_s P[s, e], f_e the share of first choices on e (auxLossRef)."""
    S, E = probs.shape
    f = torch.zeros(E, dtype=probs.dtype, device=probs.device).index_add_(0, sel[:, 0], torch.ones(S, dtype=probs.dtype, device=probs.device)) / S
    return E * (f * probs.mean(dim=0)).sum()


class MoeMlp:
    """The MoE MLP of GPT block `prefix` (s: the block's spec, kind 'gpt-moe-block'): router.weight, experts.c_fc.weight
    and experts.c_proj.weight under f"{prefix}.mlp"; `weight(shape, device)` makes a parameter (model.py's)."""

    def __init__(self, s, device, weight):
        C, E, p = s["dim"], s["experts"], f"{s['prefix']}.mlp"
        self.C, self.E, self.k, self.cf = C, E, s["topK"], s["capacityFactor"]
        self.alpha, self.step_tokens = s["auxLossWeight"], s["stepTokens"]
        self.router = weight((E, C), device)
        self.fc = weight((E * 4 * C, C), device)
        self.proj = weight((E * C, 4 * C), device)
        self.params = {f"{p}.router.weight": self.router, f"{p}.experts.c_fc.weight": self.fc, f"{p}.experts.c_proj.weight": self.proj}
        self.decay = {n: True for n in self.params}

    def __call__(self, u):
        """u [..., C] (the group's rows: every leading index a token) -> the MoE's output, same shape."""
        shape, C, E = u.shape, self.C, self.E
        u = u.reshape(-1, C)
        S = u.shape[0]
        cap = capacity(self.cf, self.k, S, E)
        probs = F.softmax(recorded(F.linear(u, self.router), [self.router]), dim=-1)
        sel, slot, row_token, dropped = route(probs, self.k, cap)
        gates = gates_of(probs, sel)
        u0 = torch.cat([u, u.new_zeros(1, C)])  # row S: an empty buffer row's input
        xe = u0[row_token].view(E, cap, C)
        h = recorded(torch.bmm(xe, self.fc.view(E, 4 * C, C).transpose(1, 2)), [self.fc])
        ye = recorded(torch.bmm(F.gelu(h, approximate="tanh"), self.proj.view(E, C, 4 * C).transpose(1, 2)), [self.proj])
        ye0 = torch.cat([ye.reshape(E * cap, C), ye.new_zeros(1, C)])  # row E * cap: what a dropped choice gets
        out = sum(gates[:, j:j + 1] * ye0[torch.where(slot[:, j] < 0, E * cap, slot[:, j])] for j in range(self.k))
        return with_aux(out.view(shape), aux_loss(probs, sel) * (self.alpha * S / self.step_tokens), dropped)


def has_moe(model):
    """Whether the model (config.json "model") has a mixture-of-experts block."""
    return any(s["kind"] == "gpt-moe-block" for b in model["blocks"] for s in b["layers"])
