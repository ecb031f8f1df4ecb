"""The flush of a schedule with model copies (DualPipe, config.json "copies" = 2; the page's src/runtime/copy-sum.ts).

Each pipeline rank holds one stage of each copy (rank r: copy 0's stage r and copy 1's stage p - 1 - r; bundle.Copies
numbers them), built from the same initial weights by name, and each copy runs its own half of the step's
micro-batches. At the flush, before the optimizer step, each model stage's gradients are summed over its copies:
every pair of ranks holding the copies of some stage (r and p - 1 - r) forms a torch.distributed group (every
process creating every group, in the same order) and all_reduces each of those stages' gradients over it, in model
stage order on both ends. The sum of two float terms is the same on both ends, so both copies take the same update
from the same optimizer state and stay equal bit for bit; each copy's loss is scaled by the whole step's targets, so
the summed gradient is one device's. The step's loss is the two copies' last stages' losses summed the same way.

Checkpoints and trained.safetensors hold copy 0's weights (train.py gathers copy 0's stages); a resume loads them,
by name, into both copies.
"""
import torch
import torch.distributed as dist

from collectives import flat_grads, set_grads
from pipeline import wait


class CopySum:
    """This process's side of the copies' sums; with one copy every method does nothing."""

    def __init__(self, bundle, rank, stages, timeout):
        self.copies, self.rank, self.stages, self.timeout = bundle.copies, rank, stages, timeout
        copies = self.copies
        self.groups = {}  # the ranks holding a model stage's copies (sorted) -> their group
        if copies.n > 1:
            for k in range(copies.per):
                ranks = tuple(sorted(copies.holders(k)))
                if ranks not in self.groups:
                    self.groups[ranks] = dist.new_group(list(ranks), timeout=timeout)
        # This process's stages in model stage order: the order both ends of each group walk.
        self.mine = sorted(stages, key=lambda s: (copies.model_stage(s), s)) if copies.n > 1 else []
        self.last = copies.per - 1

    def group_of(self, s):
        return self.groups[tuple(sorted(self.copies.holders(self.copies.model_stage(s))))]

    def sum_grads(self, step):
        """Every stage's gradients summed over its copies, in place (before the optimizer step)."""
        for s in self.mine:
            params = list(self.stages[s].params.values())
            if not params:
                continue
            flat = flat_grads(params)
            k = self.copies.model_stage(s)
            wait(dist.all_reduce(flat, group=self.group_of(s), async_op=True), self.timeout,
                 f"rank {self.rank}: step {step}: the sum of model stage {k}'s gradients over its copies (stage {s} here, with "
                 f"ranks {self.copies.holders(k)}) did not finish within {self.timeout.total_seconds()} s")
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

    def difference(self, device):
        """The largest |difference| between the copies of any weight (0 when they agree bit for bit), on every
        process: each pair of copies' weights is gathered over its group, then the maximum taken over the world."""
        worst = torch.zeros(1, dtype=torch.float64, device=device)
        for s in self.mine:
            params = list(self.stages[s].params.values())
            if not params:
                continue
            flat = torch.cat([p.detach().reshape(-1) for p in params])
            parts = [torch.empty_like(flat) for _ in range(self.copies.n)]
            wait(dist.all_gather(parts, flat, group=self.group_of(s), async_op=True), self.timeout,
                 f"rank {self.rank}: the comparison of stage {s}'s copies did not finish within {self.timeout.total_seconds()} s")
            for other in parts[1:]:
                worst = torch.maximum(worst, (other - parts[0]).abs().max().double().reshape(1))
        if self.copies.n > 1:
            wait(dist.all_reduce(worst, op=dist.ReduceOp.MAX, async_op=True), self.timeout,
                 f"rank {self.rank}: the copies' difference was not gathered within {self.timeout.total_seconds()} s")
        return worst.item()
