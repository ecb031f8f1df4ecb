"""PipeDream's and PipeDream-2BW's weight updates (config.json "update"), for a run that is one stream: schedule.csv
holds every step's micro-batches (config.json "windowMicrobatches" = steps x microbatches, numbered across steps),
walked once with no flush (pipeline.py), and each stage updates its own weights as the page's policies do
(src/runtime/policies/pipedream-policy.ts and double-buffer-policy.ts):

- 'stash-and-update-after-backward' (PipeDream, Narayanan et al., SOSP 2019): a stage steps its optimizer after
  every backward, at the learning rate of the micro-batch's step; a micro-batch's backward runs on the weight version
  its forward ran on (weight stashing), though other backwards have moved the stage's weights on in between.
- 'double-buffered' (PipeDream-2BW, Narayanan et al., ICML 2021, section 3.1): micro-batch k (0-based over the
  stream) runs forward and backward on version max(k // m - 1, 0); a stage adds up the gradients of each block of m
  micro-batches and, after the block's last backward, steps its optimizer on its latest weights with them (one
  version stale), at that step's learning rate. On dp replicas (the paper's hybrid) each replica trains its rows of
  every micro-batch, and the block's gradients are first summed over the stage's replicas with all_reduce (the
  process waits for it, as the page's worker does), so every replica takes the same update.

A PipeDream-2BW stream resumes from a checkpoint of step B (the page's, saved inside its stream; resume()): what it
computes depends on each micro-batch's number only, so the stages start at version B with W(B - 1) beside it, and
the walk runs schedule.csv's actions of micro-batches B * m and later (pipeline.py first_mb): the numbers of the
stream that went on.

A version is a snapshot: a copy of the stage's weights as leaf tensors, bound into the stage's layers for a
micro-batch's forward (model.Stage.bind). The micro-batch's autograd graph then holds its own version while the
optimizer moves the live weights on in place, and its backward's gradients (with respect to the snapshot) become the
live weights' gradients. PipeDream keeps a snapshot while a micro-batch that ran on it is in flight; 2BW keeps the two
newest, the next one taken at each update. The live weights are one copy more than the page holds (it exchanges
references instead); the arithmetic is the page's.
"""
import torch
import torch.distributed as dist

from collectives import flat_grads, set_grads
from optimizer import make_optimizer, step_with_lr
from waits import wait


class StageVersions:
    """One stage's live weights (which its optimizer steps), the snapshots micro-batches run on, and which micro-batch
    ran on which."""

    def __init__(self, stage, optimizer):
        self.stage, self.names = stage, list(stage.params)
        self.live = [stage.params[n] for n in self.names]
        self.optimizer = make_optimizer(optimizer, [(stage.params[n], stage.decay[n]) for n in self.names])
        self.latest = 0  # updates applied so far: the version the live weights hold
        self.snapshots = {}  # version -> its tensors, in self.names order
        self.of_mb = {}  # micro-batch in flight -> the version its forward ran on
        self.peak = 0  # the most snapshots held at once

    def take_snapshot(self):
        self.snapshots[self.latest] = [p.detach().clone().requires_grad_(True) for p in self.live]
        self.peak = max(self.peak, len(self.snapshots))

    def run_on(self, mb, v):
        self.of_mb[mb] = v
        self.stage.bind(dict(zip(self.names, self.snapshots[v])))

    def add_grads(self, grads):
        for p, g in zip(self.live, grads):
            p.grad = g if p.grad is None else p.grad + g

    def update(self, lr):
        step_with_lr(self.optimizer, lr)
        for p in self.live:
            p.grad = None
        self.latest += 1


class StreamUpdates:
    """The update policy of a stream, for this process's stages: pipeline.py calls forward(s, mb) before a forward,
    tensors(s, mb) for the weights a backward differentiates, and backward_done(s, mb, grads) after it."""

    def __init__(self, cfg, stages, group=None, timeout=None, who=""):
        """`group`: the stages' replicas (2BW with dp > 1: each block's gradients are all_reduced over it); None alone."""
        self.policy, self.m, self.lr = cfg["update"], cfg["microbatches"], cfg["lrPerStep"]
        self.group, self.timeout, self.who = group, timeout, who
        if self.policy not in ("stash-and-update-after-backward", "double-buffered"):
            raise SystemExit(f"config.json: update = {self.policy!r} is not a stream's (PipeDream's or PipeDream-2BW's)")
        if group is not None and self.policy != "double-buffered":
            raise SystemExit(f"config.json: schedule {cfg['schedule']} updates after every backward and runs without replicas (dp = 1)")
        self.stages = {s: StageVersions(st, cfg["optimizer"]) for s, st in stages.items()}
        if self.policy == "double-buffered":
            for sv in self.stages.values():
                sv.take_snapshot()  # version 0: the initial weights

    def resume(self, state, load):
        """PipeDream-2BW from `state` (this process's pieces of a checkpoint after step B = state.steps_done): each stage's
        weights and optimizer state loaded (`load(state, params, optimizer)`: checkpoint.load_run_state), its latest
        version B, and W(B - 1), the checkpoint's previous.*, the snapshot its block B runs on."""
        if self.policy != "double-buffered":
            raise SystemExit(f"--resume: {self.policy} keeps a weight version per micro-batch in flight; only a PipeDream-2BW stream resumes")
        b = state.steps_done
        for sv in self.stages.values():
            load(state, dict(zip(sv.names, sv.live)), sv.optimizer)
            missing = [n for n in sv.names if n not in state.previous]
            if b > 0 and missing:
                raise SystemExit(f"--resume: a PipeDream-2BW stream resumed at step {b} needs the checkpoint's previous weight version; it has no previous.{missing[0]}")
            sv.latest, sv.snapshots = b, {}
            if b > 0:
                sv.snapshots[b - 1] = [state.previous[n].detach().clone().to(p.device, p.dtype).requires_grad_(True) for n, p in zip(sv.names, sv.live)]
            sv.take_snapshot()

    def version(self, sv, mb):
        """The version micro-batch mb runs on: the stage's latest (PipeDream), or the one before its block's (2BW)."""
        if self.policy == "stash-and-update-after-backward":
            if sv.latest not in sv.snapshots:
                sv.take_snapshot()
            return sv.latest
        v = max(mb // self.m - 1, 0)
        if v not in sv.snapshots:
            raise SystemExit(f"stage {sv.stage.index}: micro-batch {mb} needs weight version {v}, but the stage holds versions "
                             f"{sorted(sv.snapshots)} (PipeDream-2BW needs m >= ranks)")
        return v

    def forward(self, s, mb):
        sv = self.stages[s]
        sv.run_on(mb, self.version(sv, mb))

    def bind_again(self, s, mb):
        """Binds micro-batch mb's version into the stage again, for a backward that runs its forward again (full
        recomputation); the stage's other micro-batches may have bound theirs since."""
        sv = self.stages[s]
        sv.stage.bind(dict(zip(sv.names, sv.snapshots[sv.of_mb[mb]])))

    def tensors(self, s, mb):
        sv = self.stages[s]
        return sv.snapshots[sv.of_mb[mb]]

    def backward_done(self, s, mb, grads):
        sv = self.stages[s]
        v = sv.of_mb.pop(mb)
        sv.add_grads(grads)
        if self.policy == "stash-and-update-after-backward":
            sv.update(self.lr[mb // self.m])
            if v not in sv.of_mb.values():  # no micro-batch in flight ran on it: its stash is freed
                del sv.snapshots[v]
            return
        if mb % self.m == self.m - 1:  # the stage's last backward of block mb // m: W(t+1) = W(t) - lr * grad(W(t-1))
            block = mb // self.m
            if sv.latest != block:
                raise SystemExit(f"stage {s} finished block {block} holding weight version {sv.latest}: blocks must end in order")
            if self.group is not None:  # the block's gradients summed over the stage's replicas first
                flat = flat_grads(sv.live)
                wait(dist.all_reduce(flat, group=self.group, async_op=True), self.timeout,
                     f"{self.who}: block {block}: the all_reduce of stage {s}'s gradients did not finish within {self.timeout.total_seconds()} s")
                set_grads(sv.live, flat)
            sv.update(self.lr[block])
            for old in [k for k in sv.snapshots if k < sv.latest - 1]:  # block mb // m was the last to need it
                del sv.snapshots[old]
            sv.take_snapshot()

    def peak_versions(self):
        """Per stage, the most weight versions it held at once."""
        return {s: sv.peak for s, sv in self.stages.items()}


def stream_step_losses(mb_losses, m, loss_over, group=None, timeout=None, who=""):
    """A stream's per-micro-batch losses grouped into steps of m, each the batch mean, as the page reports them: the
    sum of the micro-batches' shares ('step', 2BW; with replicas, summed over `group`, the last stage's) or the mean of
    their own means ('microbatch', PipeDream)."""
    ordered = torch.tensor([mb_losses[k] for k in sorted(mb_losses)], dtype=torch.float64)
    if group is not None:
        wait(dist.all_reduce(ordered, group=group, async_op=True), timeout, f"{who}: the losses' all_reduce did not finish within {timeout.total_seconds()} s")
    ordered = ordered.tolist()
    out = []
    for i in range(0, len(ordered), m):
        total = sum(ordered[i:i + m])
        out.append(total / m if loss_over == "microbatch" else total)
    return out
