"""One process's walk through its row of schedule.csv for one step: F (forward), B (full backward), I (backward
for the stage input only) and W (backward for the weights only), with the activations and gradients exchanged
between the pipeline ranks of its own replica by point-to-point sends and receives (with tensor parallelism, tp rank
j's process of one pipeline rank talks to tp rank j's of the next: every tp process holds the whole activations
between stages).

Column t of schedule.csv is time step t on every rank: after it, the messages it produced go from their sender to
their receiver, both ends posting them in the same order. Gradients accumulate over the step's micro-batches in
each parameter's .grad; the flush (collectives.py) sums them over the replicas and steps the optimizer. With ZeRO-2
and 3 collectives.py also acts around each action (before_action, after_action): it reduce-scatters a backward's
gradients, and with ZeRO-3 gathers a stage's weights before its F, B or I and frees them after.
"""
import math
import time

import torch
import torch.distributed as dist

from model import microbatch_loss
from split_backward import Tape, backward_input, backward_weight
from waits import wait


def accumulate(params, grads):
    """Gradients add up over the step's micro-batches; the optimizer steps once at the flush."""
    for p, g in zip(params, grads):
        p.grad = g if p.grad is None else p.grad + g


class PipelineRank:
    """Pipeline rank `prank` of replica `replica` (tp rank `tp_rank` of it): its stages, its actions, the messages of a step."""

    def __init__(self, bundle, replica, prank, tp_rank, stages, data, device, timeout, on_stage_done=None, around=None, versions=None, tp=None, first_mb=0):
        """`on_stage_done(s)`: stage s has all of its step's weight gradients. `around`: an object whose
        before_action(step, col, s, op) and after_action(step, col, s, op) run around each action of this rank
        (ZeRO-2/3's gathers, reduce-scatters and frees: collectives.DataParallel); None for nothing. `versions`: a
        stream's weight versions and updates (stream.StreamUpdates: PipeDream, PipeDream-2BW), or None (a flush).
        `tp`: the stages' tensor_parallel.TensorParallel (with sequence parallelism, messages hold token rows).
        `first_mb`: a resumed PipeDream-2BW stream walks the actions of micro-batches first_mb and later only (the
        others' columns pass with nothing to do; every rank drops the same micro-batches, so no message is missed)."""
        cfg, mesh = bundle.cfg, bundle.mesh
        self.cfg, self.mesh, self.replica, self.prank, self.tp_rank = cfg, mesh, replica, prank, tp_rank
        self.rank = mesh.process(replica, prank, tp_rank)
        self.stages, self.data, self.device, self.timeout = stages, data, device, timeout
        # The stages' tp (every stage of a process shares it): with sequence parallelism, messages hold token rows.
        self.stages_tp = tp
        self.on_stage_done = on_stage_done or (lambda s: None)
        self.around, self.versions = around, versions
        # Micro-batches of one window: a step's, or every step's for a stream (numbered across steps).
        self.M, self.copies = cfg.get("windowMicrobatches", cfg["microbatches"]), bundle.copies
        self.mb_losses = {}  # the last stage's loss share of each micro-batch of the window
        stage_to_rank = cfg["stageToRank"]
        order = [[a for a in row if a[3] >= first_mb] for row in bundle.order] if first_mb > 0 else bundle.order
        # The messages of a step, from the whole schedule (every process reads every row): what column t sends.
        # An F of stage s sends its output to stage s + 1; a B or I of stage s sends the input gradient to stage
        # s - 1, inside its own model copy (DualPipe: bundle.Copies; with one copy, s < S - 1 and s > 0).
        # Messages between two stages on one rank (e.g. ZB-V) stay in this process.
        self.columns = 1 + max((a[0] for row in order for a in row), default=0)
        self.sent_at = [[] for _ in range(self.columns)]
        for r, row in enumerate(order):
            for (c, s, op, mb) in row:
                if op == "F" and not self.copies.last(s):
                    self.sent_at[c].append((r, stage_to_rank[s + 1], "act", s + 1, mb))
                elif op in ("B", "I") and not self.copies.first(s):
                    self.sent_at[c].append((r, stage_to_rank[s - 1], "grad", s - 1, mb))
        self.my_action = {c: (s, op, mb) for (c, s, op, mb) in order[prank]}
        # The stages whose backward this rank splits into I and W: their forwards record a Tape (split_backward.py).
        self.split = {s for (c, s, op, mb) in order[prank] if op == "I"}
        # The column after which each of this rank's stages has all of its step's weight gradients.
        self.grads_done_at = {}
        for (c, s, op, mb) in order[prank]:
            if op in ("B", "W"):
                self.grads_done_at[s] = max(c, self.grads_done_at.get(s, -1))
        # Sequence parallelism under a flush: where the update next reads a stage's gradients (after its last B or W
        # of the step; after every one when ZeRO-2/3 reduce-scatters them), the parts this process holds are summed
        # over its tp group first (tensor_parallel.py sum_partial_grads).
        self.sums_partial = tp is not None and tp.defer_partial_grads
        self.sharded = getattr(around, "zero", 0) >= 2

    def who(self, step, col):
        return f"rank {self.rank}: step {step} column {col + 1}"

    def exchange(self, step, col, outbox, inbox):
        """After column `col`, every message it produced goes from its sender to its receiver (this replica's
        process of that pipeline rank and tp rank). Both ends post their operations in the same (sorted) order, as NCCL needs."""
        ops, waits = [], []
        for (src, dst, kind, to_stage, mb) in sorted(self.sent_at[col]):
            key = (kind, to_stage, mb)
            tag = (to_stage * self.M + mb) * 2 + (kind == "grad")
            if src == dst == self.prank:
                inbox[key] = outbox.pop(key)
            elif src == self.prank:
                peer = self.mesh.process(self.replica, dst, self.tp_rank)
                ops.append(dist.P2POp(dist.isend, outbox.pop(key).contiguous(), peer, tag=tag))
                waits.append(f"{self.who(step, col)}: {kind} of micro-batch {mb} for stage {to_stage} not taken by rank {peer} within {self.timeout.total_seconds()} s")
            elif dst == self.prank:
                peer = self.mesh.process(self.replica, src, self.tp_rank)
                shape = self.cfg["stageInShape"][to_stage] if kind == "act" else self.stages[to_stage].out_shape
                inbox[key] = torch.empty(*self.boundary_shape(shape), device=self.device)
                ops.append(dist.P2POp(dist.irecv, inbox[key], peer, tag=tag))
                waits.append(f"{self.who(step, col)}: no {kind} of micro-batch {mb} for stage {to_stage} from rank {peer} within {self.timeout.total_seconds()} s")
        if ops:
            for work, message in zip(dist.batch_isend_irecv(ops), waits):
                wait(work, self.timeout, message)

    def boundary_shape(self, shape):
        """A message's shape between stages: the micro-batch's rows of `shape` ([rows, T, C] for the GPT); with sequence
        parallelism this process's block of its token rows, [rows*T/t, C] (tensor_parallel.py)."""
        tp = self.stages_tp
        if tp is None or not tp.sequence_parallel:
            return (self.data.rows, *shape)
        tokens = self.data.rows * math.prod(shape[:-1])
        return (tokens // tp.size, shape[-1])

    def take(self, inbox, key, step, col, action):
        if key not in inbox:
            raise SystemExit(f"{self.who(step, col)}: {action} needs the {key[0]} of micro-batch {key[2]} for stage {key[1]}, "
                             "which no earlier column of schedule.csv sends: the file is not time-aligned (every input from another rank "
                             "must sit in an earlier column than its use; pipelab writes it so) or misses an action")
        return inbox.pop(key)

    def run_step(self, step, stall_s=0.0):
        """Runs this rank's actions of `step`; returns this replica's share of the step's loss (last stage only, else 0)."""
        for st in self.stages.values():
            for p in st.params.values():
                p.grad = None
        held, outbox, inbox, step_loss = {}, {}, {}, 0.0
        for col in range(self.columns):
            if col in self.my_action:
                s, op, mb = self.my_action[col]
                if self.around is not None:
                    self.around.before_action(step, col, s, op)
                step_loss += self.act(step, col, s, op, mb, held, outbox, inbox)
                if self.sums_partial and op in ("B", "W") and (self.sharded or self.grads_done_at.get(s) == col):
                    self.stages_tp.sum_partial_grads(self.stages[s].params.values())
                if self.around is not None:
                    self.around.after_action(step, col, s, op)
                if self.grads_done_at.get(s) == col:
                    self.on_stage_done(s)
            if stall_s and col == 0:
                time.sleep(stall_s)  # tests only: this rank stops answering
            self.exchange(step, col, outbox, inbox)
        return step_loss

    def act(self, step, col, s, op, mb, held, outbox, inbox):
        st, action = self.stages[s], f"{s}{op}{mb}"
        if op == "F":
            if self.copies.first(s):
                x = self.data.input(step, mb)
            else:
                x = self.take(inbox, ("act", s, mb), step, col, action).requires_grad_(True)
            tape = Tape() if s in self.split else None
            if self.versions is not None:
                self.versions.forward(s, mb)  # the weight version this micro-batch runs on, bound into the stage
            if tape is None:
                y = st.forward(x)
            else:
                with tape:
                    y = st.forward(x)
            loss = 0.0
            if st.is_last:
                y = microbatch_loss(y, self.data.target(step, mb), self.data.scale(step, mb))
                loss = self.mb_losses[mb] = y.item()
            else:
                outbox[("act", s + 1, mb)] = y.detach()
            held[(s, mb)] = (x, y, None, tape)
            return loss
        x, y, dy, tape = held[(s, mb)]
        if dy is None and not self.copies.last(s):
            dy = self.take(inbox, ("grad", s, mb), step, col, action)
        needs_input = not self.copies.first(s)  # a copy's first stage takes data, which has no gradient
        ps = list(st.params.values()) if self.versions is None else self.versions.tensors(s, mb)
        if self.versions is not None and st.recompute == "full":
            self.versions.bind_again(s, mb)  # the forward runs again inside this backward, on mb's weights
        if op == "B":
            gs = torch.autograd.grad(y, ([x] if needs_input else []) + ps, grad_outputs=dy)
            if needs_input:
                outbox[("grad", s - 1, mb)] = gs[0]
                gs = gs[1:]
            if self.versions is None:
                accumulate(ps, gs)
            else:
                self.versions.backward_done(s, mb, gs)  # PipeDream steps here; 2BW at its block's last backward
        elif self.versions is not None:
            raise SystemExit(f"{self.who(step, col)}: {action}: a stream (PipeDream, PipeDream-2BW) runs full backwards (B) only")
        elif op == "I":
            # I: the gradient for the stage input, and those of the weighted operations' outputs that W starts
            # from, keeping the graph for W (torch.distributed.pipelining's stage_backward_input).
            dx, grads = backward_input(x if needs_input else None, y, dy, tape)
            if needs_input:
                outbox[("grad", s - 1, mb)] = dx
            held[(s, mb)] = (x, y, dy, (tape, grads))
            return 0.0
        elif op == "W":
            # W: each weighted operation's weight gradients from its output's gradient, later (stage_backward_weight).
            tape, grads = tape
            for ws, gs in backward_weight(tape, grads):
                accumulate(ws, gs)
        del held[(s, mb)]
        return 0.0
