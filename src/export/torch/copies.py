"""The flush of a schedule with model copies (DualPipe, config.json "copies" = 2; the page's src/runtime/policies/copy-sum.ts).

Each pipeline rank holds one stage of each copy (rank r: copy 0's stage r and copy 1's stage p - 1 - r; bundle.Copies
numbers them), built from the same initial weights by name, and each copy runs its own half of the step's
micro-batches. At the flush, after the sum over the replicas (collectives.py) and before the optimizer step, each
model stage's gradients are summed over its copies: in every replica and for every tp rank, the processes of the
pipeline ranks holding the copies of some stage (r and p - 1 - r) form a torch.distributed group (every process
creating every group, in the same order) and all_reduce each of those stages' gradients (a tp process: its pieces)
over it, in model stage order on both ends. The sum of two float terms is the same on both ends, so both copies take
the same update from the same optimizer state and stay equal bit for bit, on every replica; each copy's loss is
scaled by the whole step's targets, so the summed gradient is one device's. The step's loss is the two copies' last
stages' losses summed the same way (then over the replicas).

Checkpoints and trained.safetensors hold copy 0's weights (train.py gathers copy 0's stages); a resume loads them,
by name, into both copies.
"""
import torch
import torch.distributed as dist

from collectives import flat_grads, set_grads
from waits import wait


class CopySum:
    """This process's side of the copies' sums; with one copy every method does nothing."""

    def __init__(self, bundle, rank, stages, timeout):
        self.copies, self.rank, self.stages, self.timeout = bundle.copies, rank, stages, timeout
        copies, mesh = self.copies, bundle.mesh
        replica, _, tp_rank = mesh.place(rank)
        self.groups = {}  # the pipeline ranks holding a model stage's copies (sorted) -> this process's group of them
        if copies.n > 1:
            made = {}
            for d in range(mesh.dp):
                for j in range(mesh.tp):
                    for k in range(copies.per):
                        ranks = tuple(sorted(copies.holders(k)))
                        if (d, j, ranks) not in made:
                            made[(d, j, ranks)] = dist.new_group([mesh.process(d, r, j) for r in ranks], timeout=timeout)
                        if d == replica and j == tp_rank:
                            self.groups[ranks] = made[(d, j, ranks)]
        # This process's stages in model stage order: the order both ends of each group walk.
        self.mine = sorted(stages, key=lambda s: (copies.model_stage(s), s)) if copies.n > 1 else []
        self.last = copies.per - 1

    def group_of(self, s):
        return self.groups[tuple(sorted(self.copies.holders(self.copies.model_stage(s))))]

    def sum_grads(self, step, chunks=None):
        """Every stage's gradients summed over its copies, in place (before the optimizer step); with ZeRO-2/3,
        `chunks` (stage -> the owned chunk's accumulated gradient: a copy's partner owns the same chunk) instead."""
        for s in self.mine:
            params = list(self.stages[s].params.values())
            if not params:
                continue
            flat = chunks[s] if chunks is not None else flat_grads(params)
            k = self.copies.model_stage(s)
            wait(dist.all_reduce(flat, group=self.group_of(s), async_op=True), self.timeout,
                 f"rank {self.rank}: step {step}: the sum of model stage {k}'s gradients over its copies (stage {s} here, with "
                 f"ranks {self.copies.holders(k)}) did not finish within {self.timeout.total_seconds()} s")
            if chunks is None:
                set_grads(params, flat)

    def holds_loss(self):
        """This process holds the last stage of some copy (it computes that copy's loss)."""
        return any(self.copies.last(s) for s in self.stages)

    def step_loss(self, loss, device):
        """The step's loss from this process's copy's share: summed over the copies' last stages."""
        if self.copies.n == 1:
            return loss
        s = next(s for s in self.stages if self.copies.last(s))
        t = torch.tensor([loss], dtype=torch.float64, device=device)
        wait(dist.all_reduce(t, group=self.group_of(s), async_op=True), self.timeout,
             f"rank {self.rank}: the step loss's sum over the model copies did not finish within {self.timeout.total_seconds()} s")
        return t.item()

    def difference(self, device, values=None):
        """The largest |difference| between the copies of any weight (0 when they agree bit for bit), on every
        process: each pair of copies' weights is gathered over its group, then the maximum taken over the world.
        `values` (ZeRO-3, whose parameters are freed between steps): stage -> the tensors to compare instead (the
        owned chunk's master weights, the same chunk on both copies)."""
        worst = torch.zeros(1, dtype=torch.float64, device=device)
        for s in self.mine:
            params = list(self.stages[s].params.values())
            if not params:
                continue
            flat = torch.cat([p.detach().reshape(-1) for p in (values(s) if values else params)])
            parts = [torch.empty_like(flat) for _ in range(self.copies.n)]
            wait(dist.all_gather(parts, flat, group=self.group_of(s), async_op=True), self.timeout,
                 f"rank {self.rank}: the comparison of stage {s}'s copies did not finish within {self.timeout.total_seconds()} s")
            for other in parts[1:]:
                worst = torch.maximum(worst, (other - parts[0]).abs().max().double().reshape(1))
        if self.copies.n > 1:
            wait(dist.all_reduce(worst, op=dist.ReduceOp.MAX, async_op=True), self.timeout,
                 f"rank {self.rank}: the copies' difference was not gathered within {self.timeout.total_seconds()} s")
        return worst.item()
