"""Tensor parallelism (Megatron-LM, Shoeybi et al. 2019, section 3): each stage held by the tp processes of one
(replica, pipeline rank), each holding its piece of the stage's split weights, as src/nn/tp-shard.ts says.

config.json "tpParams" names every split parameter with its rule and whole shape (tpParams in tp-shard.ts); every
other parameter (embeddings, LayerNorms, the heads) is whole on every tp process:

  {"kind": "rows", "parts": P}   the rows cut in P equal parts, each part's rows split t ways: tp rank j holds rows
                                 [j*R/(P*t), (j+1)*R/(P*t)) of every part (the GPT's c_attn: q, k and v of its heads)
  {"kind": "cols"}               tp rank j holds columns [j*C/t, (j+1)*C/t) (a row-parallel GPT c_proj's [out, in]
                                 weight, and an MLP's [in, out] W: its output columns)

The collectives (Megatron's f and g, and the MLPs' gather), on the process's tp group, as autograd functions:

  copy(x)    f: identity forward; the gradient summed over the group backward (at a column-parallel layer's input)
  reduce(x)  g: the sum over the group forward (after a row-parallel matmul); identity backward
  gather(y)  the members' column blocks of y joined in member order forward (an MLP's column-parallel output, which
             the next LayerNorm or layer needs whole); this member's columns of the gradient backward

The GPT block does two reduces forward (attention's c_proj, the MLP's c_proj; each bias whole, added once after)
and two sums backward (at ln_1's and ln_2's outputs). Every tp process computes the same whole activations between
the split layers, the same loss and the same gradients for its whole parameters, so those stay equal without any
exchange. A checkpoint holds whole tensors: join() puts the pieces back; sliced() cuts a whole state again.

With sequence parallelism (the run's sequenceParallel; Korthikanti et al. 2022) the GPT's token rows, flattened
to [n*T, C], are split between the layers and stages: tp rank j holds rows [j*R/t, (j+1)*R/t), as the tab splits
them. Then:

  gather_rows(x)          before a column-parallel linear: the row blocks joined forward; the gradient summed over
                          the group and this member's rows kept, backward (a reduce-scatter)
  reduce_scatter_rows(y)  after a row-parallel matmul: the sum over the group, this member's rows, forward (gloo has
                          no reduce_scatter: an all_reduce, then the rows); the rows joined backward
  own_rows(x)             the GPT embedding's output, which every member computes whole: this member's rows
                          forward, the gradient's rows joined backward
  gather_rows(x, whole=True)  the head's input: joined forward; this member's rows of the gradient backward (every
                          member computes the same whole gradient after it)
  summed_grad(w)          a LayerNorm's weight inside the split region: its gradient over this member's rows is
                          summed over the group, so every member's copy takes the same update
"""
import torch
import torch.distributed as dist

from checkpoint import RunState
from waits import wait


def tp_groups(mesh, timeout):
    """Every (replica, pipeline rank)'s group of tp processes, {(replica, rank): group}; every process creates every
    group, in the same order. Empty when tp = 1."""
    if mesh.tp == 1:
        return {}
    return {(d, r): dist.new_group(mesh.tp_group(d, r), timeout=timeout) for d in range(mesh.dp) for r in range(mesh.ranks)}


def piece_shape(shape, rule, t):
    """The shape of one tp process's piece of a tensor of `shape` under `rule` (tpShape in tp-shard.ts)."""
    if rule is None or t == 1:
        return list(shape)
    if rule["kind"] == "rows":
        return [shape[0] // t, *shape[1:]]
    return [shape[0], shape[1] // t]


def tp_slice(whole, rule, t, j):
    """Tp rank j's piece of the whole tensor `whole` (tpSlice in tp-shard.ts), a new contiguous tensor."""
    if rule is None or t == 1:
        return whole.clone()
    if rule["kind"] == "rows":
        parts = rule["parts"]
        blocks = whole.reshape(parts, t, whole.shape[0] // (parts * t), *whole.shape[1:])
        return blocks[:, j].reshape(whole.shape[0] // t, *whole.shape[1:]).clone()
    w = whole.shape[1] // t
    return whole[:, j * w:(j + 1) * w].clone()


def tp_join(pieces, rule):
    """The whole tensor from its t pieces, pieces[j] tp rank j's (joinTpPieces in tp-shard.ts)."""
    t = len(pieces)
    if rule is None or t == 1:
        return pieces[0]
    if rule["kind"] == "rows":
        parts = rule["parts"]
        rows = pieces[0].shape[0] // parts
        blocks = torch.stack([p.reshape(parts, rows, *p.shape[1:]) for p in pieces], dim=1)  # [parts, t, rows, ...]
        return blocks.reshape(parts * t * rows, *pieces[0].shape[1:])
    return torch.cat(pieces, dim=1)


class _Copy(torch.autograd.Function):
    """f: identity forward, all-reduce backward."""

    @staticmethod
    def forward(ctx, x, tp):
        ctx.tp = tp
        return x.view_as(x)

    @staticmethod
    def backward(ctx, g):
        return ctx.tp.all_reduce(g.clone(memory_format=torch.contiguous_format), "the gradient sum (f)"), None


class _Reduce(torch.autograd.Function):
    """g: all-reduce forward, identity backward."""

    @staticmethod
    def forward(ctx, x, tp):
        return tp.all_reduce(x.clone(memory_format=torch.contiguous_format), "the activation sum (g)")  # a copy: x stays the partial product

    @staticmethod
    def backward(ctx, g):
        return g, None


class _Gather(torch.autograd.Function):
    """The column blocks joined forward; this member's block of the gradient backward."""

    @staticmethod
    def forward(ctx, y, tp):
        ctx.tp, ctx.width = tp, y.shape[-1]
        return tp.all_gather(y.contiguous())

    @staticmethod
    def backward(ctx, g):
        j, w = ctx.tp.index, ctx.width
        return g[..., j * w:(j + 1) * w].contiguous(), None


def _rows(x, tp):
    """This member's block of x's rows (dim 0)."""
    n = x.shape[0] // tp.size
    return x[tp.index * n:(tp.index + 1) * n].contiguous()


class _GatherRows(torch.autograd.Function):
    """Rows joined forward; backward, the gradient summed over the group and this member's rows (or, when every
    member computed the same whole gradient, this member's rows alone)."""

    @staticmethod
    def forward(ctx, x, tp, whole):
        ctx.tp, ctx.whole = tp, whole
        return tp.all_gather_rows(x.contiguous())

    @staticmethod
    def backward(ctx, g):
        if ctx.whole:
            return _rows(g, ctx.tp), None, None
        return _rows(ctx.tp.all_reduce(g.clone(memory_format=torch.contiguous_format), "the gradient's reduce-scatter of rows"), ctx.tp), None, None


class _ReduceScatterRows(torch.autograd.Function):
    """The sum over the group, this member's rows, forward; the rows joined backward."""

    @staticmethod
    def forward(ctx, y, tp):
        ctx.tp = tp
        return _rows(tp.all_reduce(y.clone(memory_format=torch.contiguous_format), "the activation's reduce-scatter of rows"), tp)

    @staticmethod
    def backward(ctx, g):
        return ctx.tp.all_gather_rows(g.contiguous()), None


class _OwnRows(torch.autograd.Function):
    """This member's rows of a tensor every member holds whole, forward; the gradient's rows joined backward."""

    @staticmethod
    def forward(ctx, x, tp):
        ctx.tp = tp
        return _rows(x, tp)

    @staticmethod
    def backward(ctx, g):
        return ctx.tp.all_gather_rows(g.contiguous()), None


class TensorParallel:
    """This process's place in its tp group (index j of size t), the split rules, and the collectives on the group.
    With t = 1 (WHOLE) every layer is whole and every collective is the identity."""

    def __init__(self, size=1, index=0, group=None, rules=None, timeout=None, who="", sequence_parallel=False, defer_partial_grads=False):
        self.size, self.index, self.group = size, index, group
        self.rules = rules or {}
        self.timeout, self.who = timeout, who
        self.sequence_parallel = sequence_parallel and size > 1
        # With sequence parallelism the gradients of the LayerNorms inside the blocks and of the row-parallel biases
        # hold this process's rows' part. Under a flush they are summed over the group once, where the update next
        # reads them (sum_partial_grads, called by pipeline.py), as Megatron does and the page's workers do; a stream
        # (PipeDream, 2BW) sums them in every backward (summed_grad's _Copy).
        self.defer_partial_grads = defer_partial_grads and self.sequence_parallel
        self.partial = {}  # id -> a parameter whose gradient is summed later (deferred)

    def rule(self, name):
        """The split of parameter `name`, or None when it is whole."""
        return self.rules.get(name, {}).get("rule") if self.size > 1 else None

    def splits(self, name):
        return self.rule(name) is not None

    # The pieces of whole tensors, and whole tensors from pieces ------------------------------------------------------

    def shape(self, name, shape):
        return piece_shape(shape, self.rule(name), self.size)

    def pieces(self, tensors):
        """{name: tensor} whole -> this process's pieces (slot names "optimizer.<param>.<slot>" follow their param)."""
        return {n: tp_slice(v, self.rule(param_of(n)), self.size, self.index) if self.size > 1 else v for n, v in tensors.items()}

    def sliced(self, state):
        """A checkpoint's RunState (whole tensors) with this process's pieces of its weights and optimizer slots."""
        if self.size == 1:
            return state
        return RunState(state.config, state.steps_done, self.pieces(state.params), state.optimizer, state.optimizer_steps,
                        {n: {k: tp_slice(v, self.rule(n), self.size, self.index) for k, v in s.items()} for n, s in state.slots.items()},
                        state.lr_next, state.losses, state.evals, state.producer, self.pieces(state.previous))

    # The collectives ----------------------------------------------------------------------------------------------

    def all_reduce(self, x, what):
        """Sums x over the group in place (every member gets the same values) and returns it."""
        wait(dist.all_reduce(x, group=self.group, async_op=True), self.timeout,
             f"{self.who}: {what} over the tp group did not finish within {self.timeout.total_seconds()} s")
        return x

    def all_gather(self, y):
        parts = [torch.empty_like(y) for _ in range(self.size)]
        wait(dist.all_gather(parts, y, group=self.group, async_op=True), self.timeout,
             f"{self.who}: the all_gather of a layer's columns over the tp group did not finish within {self.timeout.total_seconds()} s")
        return torch.cat(parts, dim=-1)

    def all_gather_rows(self, x):
        parts = [torch.empty_like(x) for _ in range(self.size)]
        wait(dist.all_gather(parts, x, group=self.group, async_op=True), self.timeout,
             f"{self.who}: the all_gather of token rows over the tp group did not finish within {self.timeout.total_seconds()} s")
        return torch.cat(parts, dim=0)

    def gather_rows(self, x, whole=False):
        return _GatherRows.apply(x, self, whole) if self.sequence_parallel else x

    def reduce_scatter_rows(self, y):
        return _ReduceScatterRows.apply(y, self) if self.sequence_parallel else self.reduce(y)

    def own_rows(self, x):
        return _OwnRows.apply(x, self) if self.sequence_parallel else x

    def summed_grad(self, w):
        if not self.sequence_parallel:
            return w
        if self.defer_partial_grads:
            self.partial[id(w)] = w
            return w
        return _Copy.apply(w, self)

    def sum_partial_grads(self, params):
        """The gradients of `params` that hold this process's rows' part (summed_grad, deferred), summed over the
        group in one all_reduce, in place."""
        ps = [p for p in params if id(p) in self.partial and p.grad is not None]
        if not ps:
            return
        with torch.no_grad():
            flat = torch.cat([p.grad.reshape(-1) for p in ps])
            self.all_reduce(flat, "the sum of the LayerNorms' and row-parallel biases' gradients")
            at = 0
            for p in ps:
                n = p.grad.numel()
                p.grad.copy_(flat[at:at + n].view_as(p.grad))
                at += n

    def copy(self, x):
        return _Copy.apply(x, self) if self.size > 1 else x

    def reduce(self, x):
        return _Reduce.apply(x, self) if self.size > 1 else x

    def gather(self, y):
        return _Gather.apply(y, self) if self.size > 1 else y


WHOLE = TensorParallel()


def param_of(name):
    """The parameter a tensor name belongs to: itself, or <param> of an optimizer slot "optimizer.<param>.<slot>"."""
    return name[len("optimizer."):name.rindex(".")] if name.startswith("optimizer.") else name
