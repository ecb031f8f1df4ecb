"""The data-parallel flush: each stage's gradients summed over its dp replicas, then the optimizer step.

Every pipeline rank's dp processes (one per replica, bundle.Mesh.group) form a torch.distributed group. At the
flush each stage's gradients, as one flat vector, are summed over that group with all_reduce (gloo on CPU, nccl
on GPUs); with `overlap` the all-reduce of a stage starts as soon as the stage has its step's last weight
gradient, while the pipeline is still running, and the flush only waits for it. Then every process steps the
optimizer of its own stages: all replicas apply the same update to the same weights.

ZeRO-1 (config.json "run.zero" = 1) shards the optimizer state instead: a stage's parameters as one flat vector
are cut into dp chunks (chunkBounds in src/schedule/mesh.ts: sizes differ by at most one, the first n mod dp one
longer), and replica d keeps the optimizer state of chunk d only, updates that chunk, and an all_gather gives every
replica the whole updated vector. The textbook form reduce-scatters the gradients; torch 1.13's gloo has no
reduce_scatter, so here the gradients are all-reduced (twice the traffic of a reduce-scatter) and each replica
reads its chunk of the sum. AdamW and SGD are element-wise, so the weights equal plain AdamW's.
"""
import torch
import torch.distributed as dist

from checkpoint import SLOTS, optimizer_slots, optimizer_state_dict
from optimizer import make_optimizer, step_with_lr
from pipeline import wait


def replica_groups(mesh, timeout):
    """Every pipeline rank's group of dp processes (every process creates every group, in the same order); None when dp = 1."""
    return [dist.new_group(mesh.group(r), timeout=timeout) for r in range(mesh.ranks)] if mesh.dp > 1 else [None] * mesh.ranks


def chunk_bounds(n, dp):
    """Chunk c of a vector of n elements over dp replicas is [bounds[c], bounds[c + 1])."""
    base, extra = divmod(n, dp)
    out = [0]
    for c in range(dp):
        out.append(out[c] + base + (1 if c < extra else 0))
    return out


def flat_grads(params):
    return torch.cat([(p.grad if p.grad is not None else torch.zeros_like(p)).reshape(-1) for p in params])


def set_grads(params, flat):
    offset = 0
    for p in params:
        p.grad = flat[offset:offset + p.numel()].view_as(p)
        offset += p.numel()


class Zero1Shard:
    """One stage's optimizer over its replica's chunk of the stage's flat parameter vector."""

    def __init__(self, stage, opt, group, replica, dp):
        self.params = list(stage.params.values())
        self.names = list(stage.params)
        self.group, self.dp, self.kind = group, dp, opt["name"]
        n = sum(p.numel() for p in self.params)
        self.bounds = chunk_bounds(n, dp)
        lo, hi = self.bounds[replica], self.bounds[replica + 1]
        self.width = self.bounds[1] - self.bounds[0]  # the longest chunk; all_gather takes equal sizes
        self.pieces, offset = [], 0  # (parameter, [a, b) of it in this chunk, the chunk's copy of it)
        for name, p in stage.params.items():
            a, b = max(lo, offset), min(hi, offset + p.numel())
            if a < b:
                self.pieces.append((p, a - offset, b - offset, p.detach().reshape(-1)[a - offset:b - offset].clone(), stage.decay[name]))
            offset += p.numel()
        self.optimizer = make_optimizer(opt, [(leaf, decay) for (_, _, _, leaf, decay) in self.pieces])

    def step(self, lr, timeout, who):
        for (p, a, b, leaf, _) in self.pieces:
            leaf.grad = p.grad.reshape(-1)[a:b]
        step_with_lr(self.optimizer, lr)
        mine = torch.zeros(self.width, device=self.params[0].device)
        pos = 0
        for (_, a, b, leaf, _) in self.pieces:
            mine[pos:pos + b - a] = leaf
            pos += b - a
        parts = [torch.empty_like(mine) for _ in range(self.dp)]
        wait(dist.all_gather(parts, mine, group=self.group, async_op=True), timeout, f"{who}: the ZeRO-1 all_gather did not finish within {timeout.total_seconds()} s")
        flat = torch.cat([parts[d][:self.bounds[d + 1] - self.bounds[d]] for d in range(self.dp)])
        with torch.no_grad():
            offset = 0
            for p in self.params:
                p.copy_(flat[offset:offset + p.numel()].view_as(p))
                offset += p.numel()


    def slots(self, timeout, who):
        """The whole stage's optimizer slots ({name: {slot: tensor}}), every replica's chunk gathered (a collective
        of the stage's group: every replica calls it)."""
        out = {n: {} for n in self.names}
        if not self.params:
            return out
        for slot in SLOTS[self.kind]:
            mine = torch.zeros(self.width, device=self.params[0].device)
            pos = 0
            for (_, a, b, leaf, _) in self.pieces:
                st = self.optimizer.state.get(leaf, {}) if self.optimizer is not None else {}
                if slot in st:
                    mine[pos:pos + b - a] = st[slot]
                pos += b - a
            parts = [torch.empty_like(mine) for _ in range(self.dp)]
            wait(dist.all_gather(parts, mine, group=self.group, async_op=True), timeout, f"{who}: the ZeRO-1 all_gather of {slot} did not finish within {timeout.total_seconds()} s")
            flat = torch.cat([parts[d][:self.bounds[d + 1] - self.bounds[d]] for d in range(self.dp)])
            offset = 0
            for n, p in zip(self.names, self.params):
                out[n][slot] = flat[offset:offset + p.numel()].view_as(p).clone()
                offset += p.numel()
        return out

    def load(self, state):
        """This replica's chunk of the checkpoint's slots, and its chunk's copy of the (already loaded) weights."""
        names = {id(p): n for n, p in zip(self.names, self.params)}
        slots_of = {}
        with torch.no_grad():
            for (p, a, b, leaf, _) in self.pieces:
                leaf.copy_(p.detach().reshape(-1)[a:b])
                slots_of[leaf] = {s: v.reshape(-1)[a:b] for s, v in state.slots[names[id(p)]].items()}
        if self.optimizer is not None:
            self.optimizer.load_state_dict(optimizer_state_dict(self.optimizer, state.optimizer, state.optimizer_steps, slots_of))


class DataParallel:
    """The flush of one process: the gradient all-reduce of its stages over its group, then the optimizer step."""

    def __init__(self, mesh, replica, rank, group, stages, opt, zero, overlap, timeout):
        self.dp, self.rank, self.group, self.stages, self.overlap, self.timeout = mesh.dp, rank, group, stages, overlap, timeout
        self.pending = {}
        if zero:
            self.shards = {s: Zero1Shard(st, opt, self.group, replica, mesh.dp) for s, st in stages.items()}
            self.optimizer = None
        else:
            self.shards = {}
            self.optimizer = make_optimizer(opt, [(p, st.decay[n]) for st in stages.values() for n, p in st.params.items()])

    def start_all_reduce(self, s):
        params = list(self.stages[s].params.values())
        flat = flat_grads(params)
        return params, flat, dist.all_reduce(flat, group=self.group, async_op=True)

    def stage_done(self, s):
        """Stage s has every weight gradient of the step (the pipeline calls this)."""
        if self.overlap and self.dp > 1 and self.stages[s].params:
            self.pending[s] = self.start_all_reduce(s)

    def flush(self, step, lr):
        if self.dp > 1:
            for s in sorted(self.stages):
                if s not in self.pending and self.stages[s].params:
                    self.pending[s] = self.start_all_reduce(s)
            for s, (params, flat, work) in self.pending.items():
                wait(work, self.timeout, f"rank {self.rank}: step {step}: the all_reduce of stage {s}'s gradients did not finish within {self.timeout.total_seconds()} s")
                set_grads(params, flat)
            self.pending = {}
        for s in sorted(self.shards):
            self.shards[s].step(lr, self.timeout, f"rank {self.rank}: step {step} stage {s}")
        step_with_lr(self.optimizer, lr)

    def step_loss(self, loss, device):
        """The whole step's loss from this replica's share: summed over the last stage's group."""
        if self.dp == 1:
            return loss
        t = torch.tensor([loss], dtype=torch.float64, device=device)
        wait(dist.all_reduce(t, group=self.group, async_op=True), self.timeout, f"rank {self.rank}: the step loss's all_reduce did not finish within {self.timeout.total_seconds()} s")
        return t.item()

    def optimizer_slots(self):
        """Every slot of this process's stages' parameters, whole ({name: {slot: tensor}}); with ZeRO-1 a collective
        of each stage's group (every process calls it at the same step)."""
        out = {}
        for s in sorted(self.shards):
            out.update(self.shards[s].slots(self.timeout, f"rank {self.rank}: checkpoint of stage {s}"))
        if self.optimizer is not None:
            params = {n: p for st in self.stages.values() for n, p in st.params.items()}
            out.update(optimizer_slots(self.optimizer, params)[1])
        return out

    def load_optimizer(self, state):
        """The checkpoint's optimizer state for this process's stages (their weights already loaded)."""
        for s in sorted(self.shards):
            self.shards[s].load(state)
        if self.optimizer is not None:
            slots_of = {p: state.slots[n] for st in self.stages.values() for n, p in st.params.items()}
            self.optimizer.load_state_dict(optimizer_state_dict(self.optimizer, state.optimizer, state.optimizer_steps, slots_of))
