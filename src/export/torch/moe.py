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

With expert parallelism (config.json "ep" > 1: ExpertParallel), as the tab runs it (src/nn/moe/moe-ep.ts): each of
the ep processes of an ep group holds its slice of every micro-batch's sequences (data.py: its S / ep tokens of the
group's S, sequence-major) and E / ep of every block's experts (expert e on process e // (E / ep), its rows of the
stacked weights). The routing group is still the whole micro-batch: each process all-gathers the group's router
probabilities [S, E] (dist.all_gather, ep order) and routes all of them as above, so the top-k, the capacity and the
drops are one device's. Its buffers [E, cap, C] hold its own tokens' rows (zeros where another process's token or
no token sits); one all_to_all_single over the ep group sends expert e's buffer to its process, which adds the ep
buffers up (each row filled by one process, so the sum is exact) and computes its experts on every row; one more
sends every expert's outputs back to every process, which combines its own tokens (the backward: the same exchanges
of the gradients; the probabilities' all_gather gives back each process its own rows' gradient). torch 1.13's gloo
has all_to_all_single (not all_to_all), and so has NCCL. The tab sends only the filled rows; this sends whole
buffers (the same values, more bytes). The aux loss and the dropped choices are the group's, counted once (ep
process 0); every process takes the aux's gradient for its own tokens' probabilities.

The load-balancing loss aux = E * sum_e f_e * mean_s P[s, e] (f_e the share of the group's first choices on e, a
count: no gradient), weighted by alpha * S / stepTokens (the group's share of the step's token rows): its gradient
joins the router's wherever the block's output gradient arrives (with_aux), as the page adds it in backwardInput;
the weighted value is counted there too, once per micro-batch whatever recomputes the forward (take_aux).
"""
import math

import torch
import torch.distributed as dist
import torch.nn.functional as F

from split_backward import recorded
from waits import wait

EXPERT_WEIGHTS = (".mlp.experts.c_fc.weight", ".mlp.experts.c_proj.weight")


def is_expert_weight(name):
    """Whether parameter `name` holds an MoE block's stacked experts (each ep process holds its rows of it)."""
    return name.endswith(EXPERT_WEIGHTS)


class ExpertParallel:
    """This process's place among the `size` processes sharing every MoE block's experts and each micro-batch's
    tokens (index: its place in its ep group, the group's torch.distributed group set once the process group exists:
    train.py); size 1: every expert and every token of the micro-batch here."""

    def __init__(self, size=1, index=0, timeout=None, who=""):
        self.size, self.index, self.timeout, self.who = size, index, timeout, who
        self.group, self.calls, self.gathers = None, 0, 0

    def rows(self, t):
        """This process's rows of a whole stacked expert weight (its experts' blocks of rows)."""
        n = t.shape[0] // self.size
        return t[self.index * n:(self.index + 1) * n]

    def pieces(self, tensors):
        """{name: tensor} with the expert weights cut to this process's rows (the rest whole)."""
        return {n: self.rows(t) if self.size > 1 and is_expert_weight(n) else t for n, t in tensors.items()}

    def exchange(self, x):
        """all_to_all_single over the ep group: x's i-th block of rows (dim 0 in `size` parts) to ep process i; the
        result's i-th block came from process i."""
        out = torch.empty_like(x)
        work = dist.all_to_all_single(out, x.contiguous(), group=self.group, async_op=True)
        wait(work, self.timeout, f"{self.who}: the experts' all_to_all_single did not finish within {self.timeout.total_seconds()} s")
        self.calls += 1
        return out

    def all_gather(self, x):
        """Every ep process's x, concatenated along dim 0 in ep order."""
        out = [torch.empty_like(x) for _ in range(self.size)]
        work = dist.all_gather(out, x.contiguous(), group=self.group, async_op=True)
        wait(work, self.timeout, f"{self.who}: the router probabilities' all_gather did not finish within {self.timeout.total_seconds()} s")
        self.gathers += 1
        return torch.cat(out)


class _AllToAll(torch.autograd.Function):
    """ExpertParallel.exchange, differentiable: its gradient is the same exchange of the output's gradient."""

    @staticmethod
    def forward(ctx, x, ep):
        ctx.ep = ep
        return ep.exchange(x)

    @staticmethod
    def backward(ctx, g):
        return ctx.ep.exchange(g), None


class _Gather(torch.autograd.Function):
    """ExpertParallel.all_gather, differentiable: every process computes the same function of the gathered rows, once
    each, so its own rows' gradient is its own copy's (no sum over the group)."""

    @staticmethod
    def forward(ctx, x, ep):
        ctx.ep, ctx.n = ep, x.shape[0]
        return ep.all_gather(x)

    @staticmethod
    def backward(ctx, g):
        i, n = ctx.ep.index, ctx.n
        return g[i * n:(i + 1) * n], None

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
        if ctx.dropped is not None:
            _counted.append((ctx.aux.item(), int(ctx.dropped.sum().item())))
        return dy, torch.ones_like(ctx.aux), None


def with_aux(y, aux, dropped):
    """y, with `aux` (a weighted aux loss [ ]) added to the objective its gradient flows back from; its backward
    counts aux and `dropped` (the group's dropped choices per expert) for take_aux (dropped None: counts nothing, the
    group counted by another process)."""
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

    def __init__(self, s, device, weight, ep=None):
        C, E, p = s["dim"], s["experts"], f"{s['prefix']}.mlp"
        self.C, self.E, self.k, self.cf = C, E, s["topK"], s["capacityFactor"]
        self.alpha, self.step_tokens = s["auxLossWeight"], s["stepTokens"]
        self.ep = ep or ExpertParallel()
        self.local = E // self.ep.size  # the experts this process holds
        self.router = weight((E, C), device)
        self.fc = weight((self.local * 4 * C, C), device)
        self.proj = weight((self.local * C, 4 * C), device)
        self.params = {f"{p}.router.weight": self.router, f"{p}.experts.c_fc.weight": self.fc, f"{p}.experts.c_proj.weight": self.proj}
        self.decay = {n: True for n in self.params}

    def __call__(self, u):
        """u [..., C] (this process's rows of the group: every leading index a token) -> the MoE's output, same shape.
        With ep > 1 the group is the ep group's rows of the micro-batch (this process's the index-th block)."""
        shape, C, E, ep = u.shape, self.C, self.E, self.ep
        u = u.reshape(-1, C)
        n = u.shape[0]  # this process's tokens
        probs_mine = F.softmax(recorded(F.linear(u, self.router), [self.router]), dim=-1)
        probs = _Gather.apply(probs_mine, ep) if ep.size > 1 else probs_mine
        S, first = probs.shape[0], ep.index * n  # the group's tokens; this process's are [first, first + n)
        cap = capacity(self.cf, self.k, S, E)
        sel_all, slot, row_token, dropped = route(probs, self.k, cap)
        sel, slot = sel_all[first:first + n], slot[first:first + n]
        gates = gates_of(probs_mine, sel)
        mine = (row_token >= first) & (row_token < first + n)
        u0 = torch.cat([u, u.new_zeros(1, C)])  # row n: an empty buffer row's input (or another process's token's)
        ye = self.experts(u0[torch.where(mine, row_token - first, torch.full_like(row_token, n))].view(E, cap, C))
        ye0 = torch.cat([ye.reshape(E * cap, C), ye.new_zeros(1, C)])  # row E * cap: what a dropped choice gets
        out = sum(gates[:, j:j + 1] * ye0[torch.where(slot[:, j] < 0, E * cap, slot[:, j])] for j in range(self.k))
        counted = dropped if ep.index == 0 else None  # the group's drops and aux, counted once
        return with_aux(out.view(shape), aux_loss(probs, sel_all) * (self.alpha * S / self.step_tokens), counted)

    def experts(self, xe):
        """The experts on the buffers xe [E, cap, C] -> ye [E, cap, C]; with ep > 1 each expert's buffer goes to the
        process holding it (which adds up the ep processes' buffers: each row is filled by one of them), and every
        expert's outputs come back to every process (all_to_all_single each way)."""
        C, L, n, cap = self.C, self.local, self.ep.size, xe.shape[1]
        if n > 1:  # [n, L, cap, C] by owner -> [n, L, cap, C] by source, summed: this process's experts' whole buffers
            xe = _AllToAll.apply(xe.contiguous(), self.ep).view(n, L, cap, C).sum(dim=0)
        h = recorded(torch.bmm(xe, self.fc.view(L, 4 * C, C).transpose(1, 2)), [self.fc])
        ye = recorded(torch.bmm(F.gelu(h, approximate="tanh"), self.proj.view(L, C, 4 * C).transpose(1, 2)), [self.proj])
        if n > 1:  # back: every process gets these outputs; the result by owner is [E, cap, C] by expert
            ye = _AllToAll.apply(ye.unsqueeze(0).expand(n, L, cap, C).contiguous(), self.ep).view(n * L, cap, C)
        return ye


def has_moe(model):
    """Whether the model (config.json "model") has a mixture-of-experts block."""
    return any(s["kind"] == "gpt-moe-block" for b in model["blocks"] for s in b["layers"])
