"""The data-parallel update: each stage's gradients summed over its dp replicas, then the optimizer step; with
ZeRO (config.json "run.zero" 1, 2 or 3), sharded as the page's workers shard it.

The dp processes of every (pipeline rank, tp rank) (one per replica, bundle.Mesh.group: every replica's copy of
the same piece of the rank's stages) form a torch.distributed group, and every collective here runs on it (gloo on CPU, nccl on GPUs), issued by each replica in the same order (they all walk the
same schedule row).

ZeRO-0: at the flush each stage's gradients, as one flat vector, are summed over the group with all_reduce; with
`overlap` the all-reduce of a stage starts as soon as the stage has its step's last weight gradient, while the
pipeline is still running, and the flush only waits for it. Then every process steps the optimizer of its own
stages: all replicas apply the same update to the same weights.

ZeRO-1, 2 and 3 cut a stage's parameters, as one flat vector (the stage's order), into dp chunks as the page's ring
cuts it (chunkBounds in src/schedule/mesh.ts: sizes differ by at most one, the first n mod dp one longer). Replica d
owns chunk (d + 1) mod dp (ownedChunk in src/runtime/comm/ring-allreduce.ts: the chunk the ring's reduce-scatter leaves
summed on it) and keeps the optimizer state of that chunk only, with the chunk's master copy of the weights. The
update is the optimizer's own per-element rule (AdamW and SGD are element-wise), so every ZeRO stage trains the
weights plain AdamW or SGD would: only the order in which the gradients are summed differs (rounding).

- ZeRO-1 (the optimizer state): the flush sums the gradients as ZeRO-0 does; each replica updates its chunk and an
  all_gather gives every replica the whole updated vector.
- ZeRO-2 (and the gradients; src/runtime/policies/sharded-step.ts on the page): after every action that leaves weight
  gradients (B, or W where the backward is split) the stage's gradient vector is reduce-scattered over the group,
  the replica adds its chunk of the sum to its own accumulator and drops the full gradient (p.grad = None): one
  reduce-scatter per micro-batch, as DeepSpeed's ZeRO-2 with gradient accumulation. At the flush it updates its
  chunk from the accumulator and an all_gather spreads the updated weights.
- ZeRO-3 (and the weights: FSDP): between actions a stage's weights exist only as the owners' chunks. Before an F,
  B or I of a stage they are all-gathered into the stage's parameters, and freed after the stage's last such action
  of the step (run.reshard "step", FSDP's reshard_after_forward = False) or after every action ("microbatch",
  True). Freed means overwritten with zeros (p.data.zero_(); the storage stays, as the page's buffers do), so a
  missed gather would show in the losses. W needs no weights: it reads what its I stashed. With run.prefetch the
  next gather this process will need starts while the current action computes. Gradients as in ZeRO-2; the flush
  updates the owned chunks and gathers nothing; a checkpoint gathers the whole weights first (full_weights).

torch 1.13's gloo has no reduce_scatter, so it is emulated exactly: the flat gradient is all_reduced and each
replica keeps its chunk of the sum (twice a reduce-scatter's traffic, the same sum up to its order). The all-gathers
are all_gather of equal-length chunks (the longest chunk's length; a shorter chunk is padded and cut back).
"""
import torch
import torch.distributed as dist

from checkpoint import SLOTS, optimizer_slots, optimizer_state_dict
from moe import is_expert_weight
from optimizer import make_optimizer, step_with_lr
from waits import wait

READS_WEIGHTS = ("F", "B", "I")  # the actions ZeRO-3 gathers a stage's weights for
MAKES_GRADS = ("B", "W")  # the actions after which ZeRO-2 and ZeRO-3 reduce-scatter a stage's gradients


def replica_groups(mesh, timeout):
    """Every (pipeline rank, tp rank)'s group of dp processes, {(rank, j): group} (every process creates every group,
    in the same order); None for each when dp = 1."""
    keys = [(r, j) for r in range(mesh.ranks) for j in range(mesh.tp)]
    return {k: dist.new_group(mesh.group(*k), timeout=timeout) if mesh.dp > 1 else None for k in keys}


def chunk_bounds(n, dp):
    """Chunk c of a vector of n elements over dp replicas is [bounds[c], bounds[c + 1])."""
    base, extra = divmod(n, dp)
    out = [0]
    for c in range(dp):
        out.append(out[c] + base + (1 if c < extra else 0))
    return out


def owned_chunk(replica, dp):
    """The chunk replica `replica` owns: ownedChunk in src/runtime/comm/ring-allreduce.ts."""
    return (replica + 1) % dp


def flat_grads(params):
    return torch.cat([(p.grad if p.grad is not None else torch.zeros_like(p)).reshape(-1) for p in params])


def set_grads(params, flat):
    offset = 0
    for p in params:
        p.grad = flat[offset:offset + p.numel()].view_as(p)
        offset += p.numel()


class ZeroShard:
    """One stage's ZeRO shard on one replica: its chunk of the stage's flat parameter vector, the optimizer over that
    chunk (as pieces of the parameters it crosses, each its own tensor) and, in those pieces, the chunk's master copy
    of the weights; with ZeRO-2 and 3 also the chunk's gradient summed over the replicas and the step's micro-batches."""

    def __init__(self, stage, opt, group, replica, dp):
        self.params = list(stage.params.values())
        self.names = list(stage.params)
        self.group, self.dp, self.kind = group, dp, opt["name"]
        self.device = self.params[0].device if self.params else torch.device("cpu")
        self.total = sum(p.numel() for p in self.params)
        self.bounds = chunk_bounds(self.total, dp)
        self.lo, self.hi = self.bounds[owned_chunk(replica, dp)], self.bounds[owned_chunk(replica, dp) + 1]
        self.width = self.bounds[1] - self.bounds[0]  # the longest chunk; all_gather takes equal sizes
        self.owner = {owned_chunk(d, dp): d for d in range(dp)}  # chunk -> the replica (group rank) that owns it
        self.grad = None  # ZeRO-2/3: the owned chunk's summed gradient, accumulated over the step's micro-batches
        self.pieces, offset = [], 0  # (parameter, [a, b) of it in this chunk, the chunk's copy of it, decays)
        for name, p in stage.params.items():
            a, b = max(self.lo, offset), min(self.hi, offset + p.numel())
            if a < b:
                self.pieces.append((p, a - offset, b - offset, p.detach().reshape(-1)[a - offset:b - offset].clone(), stage.decay[name]))
            offset += p.numel()
        self.optimizer = make_optimizer(opt, [(leaf, decay) for (_, _, _, leaf, decay) in self.pieces])

    def padded(self, values):
        """This replica's chunk, as all_gather sends it: `values` (one tensor per piece) end to end, padded to width."""
        mine = torch.zeros(self.width, device=self.device)
        pos = 0
        for (_, a, b, _, _), v in zip(self.pieces, values):
            mine[pos:pos + b - a] = v.reshape(-1)
            pos += b - a
        return mine

    def start_gather(self, mine):
        """all_gather of every replica's padded chunk (async); finish_gather makes the stage's vector of it."""
        parts = [torch.empty_like(mine) for _ in range(self.dp)]
        return parts, dist.all_gather(parts, mine, group=self.group, async_op=True)

    def finish_gather(self, started, timeout, message):
        parts, work = started
        wait(work, timeout, message)
        # parts[d] is replica d's chunk, owned_chunk(d); the vector is the chunks in order.
        return torch.cat([parts[self.owner[c]][:self.bounds[c + 1] - self.bounds[c]] for c in range(self.dp)])

    def gather(self, values, timeout, message):
        return self.finish_gather(self.start_gather(self.padded(values)), timeout, message)

    def masters(self):
        return [leaf for (_, _, _, leaf, _) in self.pieces]

    def start_weights(self):
        """ZeRO-3: starts the all_gather of the stage's weights from every owner's master chunk."""
        return self.start_gather(self.padded(self.masters()))

    def place(self, flat):
        """Writes the stage's vector `flat` into its parameters. Through .data: autograd's saved references to the
        parameters (a B after its F) read the values put back, and no version counter moves."""
        offset = 0
        for p in self.params:
            p.data.copy_(flat[offset:offset + p.numel()].view_as(p))
            offset += p.numel()

    def free(self):
        """ZeRO-3: the stage's weights leave this process: zeros in their place (the storage stays)."""
        for p in self.params:
            p.data.zero_()

    def grad_chunk(self):
        """ZeRO-2/3: the owned chunk's accumulated gradient (zeros when the step left none), summed in place by
        DualPipe's copies (copies.py) before the update."""
        if self.grad is None:
            self.grad = torch.zeros(self.hi - self.lo, device=self.device)
        return self.grad

    def add_grad(self, summed):
        """ZeRO-2/3: adds the owned chunk of `summed` (the stage's gradient vector summed over the replicas)."""
        chunk = summed[self.lo:self.hi]
        if self.grad is None:
            self.grad = chunk.clone()
        else:
            self.grad += chunk

    def step(self, lr, timeout, who, gather=True):
        """The optimizer step on the owned chunk: from its accumulated gradient (ZeRO-2/3) or from the chunk of the
        parameters' all-reduced .grad (ZeRO-1); then, with `gather`, the all_gather of the updated weights into the
        parameters (ZeRO-1/2; ZeRO-3 keeps them as the master chunk)."""
        if not self.params:
            return
        pos = 0
        for (p, a, b, leaf, _) in self.pieces:
            if self.grad is not None:
                leaf.grad = self.grad[pos:pos + b - a]
            else:
                leaf.grad = p.grad.reshape(-1)[a:b] if p.grad is not None else torch.zeros_like(leaf)
            pos += b - a
        step_with_lr(self.optimizer, lr)
        self.grad = None
        if gather:
            flat = self.gather(self.masters(), timeout, f"{who}: the ZeRO all_gather of the weights did not finish within {timeout.total_seconds()} s")
            with torch.no_grad():
                offset = 0
                for p in self.params:
                    p.copy_(flat[offset:offset + p.numel()].view_as(p))
                    offset += p.numel()

    def whole(self, flat):
        """The stage's vector `flat` as whole tensors by name."""
        out, offset = {}, 0
        for n, p in zip(self.names, self.params):
            out[n] = flat[offset:offset + p.numel()].view_as(p).clone()
            offset += p.numel()
        return out

    def slots(self, timeout, who):
        """The whole stage's optimizer slots ({name: {slot: tensor}}), every replica's chunk gathered (a collective
        of the stage's group: every replica calls it)."""
        out = {n: {} for n in self.names}
        if not self.params:
            return out
        for slot in SLOTS[self.kind]:
            values = []
            for (_, _, _, leaf, _) in self.pieces:
                st = self.optimizer.state.get(leaf, {}) if self.optimizer is not None else {}
                values.append(st[slot] if slot in st else torch.zeros_like(leaf))
            flat = self.gather(values, timeout, f"{who}: the ZeRO all_gather of {slot} did not finish within {timeout.total_seconds()} s")
            for n, t in self.whole(flat).items():
                out[n][slot] = t
        return out

    def load(self, state):
        """This replica's chunk of the checkpoint's slots, and its chunk's copy of the (already loaded) weights."""
        names = {id(p): n for n, p in zip(self.names, self.params)}
        slots_of = {}
        self.grad = None
        with torch.no_grad():
            for (p, a, b, leaf, _) in self.pieces:
                leaf.copy_(p.detach().reshape(-1)[a:b])
                slots_of[leaf] = {s: v.reshape(-1)[a:b] for s, v in state.slots[names[id(p)]].items()}
        if self.optimizer is not None:
            self.optimizer.load_state_dict(optimizer_state_dict(self.optimizer, state.optimizer, state.optimizer_steps, slots_of))


class DataParallel:
    """One process's data-parallel side: ZeRO-2/3's work around the pipeline's actions (before_action, after_action),
    the flush (the gradients' sum over its group, the optimizer step), the step's loss over the replicas, and the
    whole weights and optimizer slots a checkpoint takes.

    `row` is this process's row of schedule.csv ((column, stage, op, micro-batch) in column order); `reshard` and
    `prefetch` are the run's ZeRO-3 settings."""

    def __init__(self, mesh, replica, rank, group, stages, opt, zero, overlap, timeout, row=(), reshard="step", prefetch=False, expert_group=None):
        self.dp, self.rank, self.group, self.stages, self.overlap, self.timeout = mesh.dp, rank, group, stages, overlap, timeout
        self.zero = zero if mesh.dp > 1 else 0
        # With ep > 1 (bundle.py; ZeRO 0) `group` is every pipe of the (pipeline rank): the dense gradients are summed
        # over the ep group and the replicas in one all_reduce; each expert's over `expert_group`, the replicas holding
        # it (None with dp = 1: one process holds it).
        self.dense = (lambda name: not is_expert_weight(name)) if mesh.ep > 1 else (lambda name: True)
        self.expert_group = expert_group
        self.reshard, self.prefetch = reshard, prefetch
        self.pending = {}  # ZeRO-0/1: stage -> its overlapped all_reduce at the flush
        self.reducing = []  # ZeRO-2/3: overlapped reduce-scatters in issue order (stage, vector, work, message)
        if self.zero:
            self.shards = {s: ZeroShard(st, opt, self.group, replica, mesh.dp) for s, st in stages.items()}
            self.optimizer = None
        else:
            self.shards = {}
            self.optimizer = make_optimizer(opt, [(p, st.decay[n]) for st in stages.values() for n, p in st.params.items()])
        # ZeRO-3: which of this row's actions gather their stage's weights, and after which ones they are freed.
        self.at = {c: k for k, (c, _s, _op, _mb) in enumerate(row)}
        self.acts = [(s, op) for (_c, s, op, _mb) in row]
        last_use = {}
        for k, (s, op) in enumerate(self.acts):
            if op in READS_WEIGHTS:
                last_use[s] = k
        self.frees_after, self.gathers_at, resident = set(), [], set()
        for k, (s, op) in enumerate(self.acts):
            if op not in READS_WEIGHTS:
                continue
            if s not in resident:
                self.gathers_at.append(k)
                resident.add(s)
            if reshard == "microbatch" or last_use[s] == k:
                self.frees_after.add(k)
                resident.discard(s)
        self.gathering = {}  # ZeRO-3: action index -> its all_gather, started (the current one, or prefetched)
        if self.zero == 3:
            for sh in self.shards.values():
                sh.free()

    # ZeRO-2/3 around the pipeline's actions (pipeline.PipelineRank calls these) ----------------------------------

    def before_action(self, step, col, s, op):
        """ZeRO-3: before an F, B or I the stage's weights are gathered onto this process (and, with prefetch, the
        next gather this process needs is started)."""
        if self.zero != 3 or op not in READS_WEIGHTS or not self.stages[s].params:
            return
        k = self.at[col]
        started = self.gathering.pop(k, None)
        if started is None and k in self.gathers_at:
            started = self.shards[s].start_weights()
        if self.prefetch:
            nxt = next((j for j in self.gathers_at if j > k), None)
            if nxt is not None and nxt not in self.gathering and self.stages[self.acts[nxt][0]].params:
                self.gathering[nxt] = self.shards[self.acts[nxt][0]].start_weights()
        if started is not None:
            flat = self.shards[s].finish_gather(started, self.timeout, f"rank {self.rank}: step {step} column {col + 1}: the ZeRO-3 all_gather "
                                                f"of stage {s}'s weights did not finish within {self.timeout.total_seconds()} s")
            self.shards[s].place(flat)

    def after_action(self, step, col, s, op):
        """ZeRO-2/3: after a B or W the stage's gradients are reduce-scattered into the owned chunk's accumulator;
        ZeRO-3: the weights are freed after the action that reshard names."""
        if self.zero < 2 or not self.stages[s].params:
            return
        if op in MAKES_GRADS:
            self.reduce_scatter(step, s)
        if self.zero == 3 and self.at[col] in self.frees_after:
            self.shards[s].free()

    def reduce_scatter(self, step, s):
        """The stage's gradient vector summed over the group, this replica's chunk kept: gloo (torch 1.13) has no
        reduce_scatter, so it is an all_reduce of which the chunk is read (the same sum)."""
        sh = self.shards[s]
        flat = flat_grads(sh.params)
        for p in sh.params:
            p.grad = None  # the device's full gradient is dropped: the next backward starts from none
        work = dist.all_reduce(flat, group=self.group, async_op=True)
        message = f"rank {self.rank}: step {step}: the reduce-scatter (all_reduce) of stage {s}'s gradients did not finish within {self.timeout.total_seconds()} s"
        self.reducing.append((s, flat, work, message))
        if not self.overlap:
            self.collect(everything=True)
        else:
            self.collect(everything=False)

    def collect(self, everything):
        """Adds the finished reduce-scatters' chunks to their accumulators, in issue order (the page's order of the
        micro-batches' sums); with `everything`, waits for all of them."""
        while self.reducing and (everything or self.reducing[0][2].is_completed()):
            s, flat, work, message = self.reducing.pop(0)
            wait(work, self.timeout, message)
            self.shards[s].add_grad(flat)

    # ZeRO-0/1: the flush's all-reduce, overlapped with the pipeline's last backward -------------------------------

    def start_all_reduce(self, s):
        """Stage s's gradient all_reduces, started: [(params, their flat gradient, work)], the dense ones over the
        group, the experts' over theirs (ep > 1 with replicas)."""
        out = []
        for group, which in ((self.group, self.dense), (self.expert_group, lambda n: not self.dense(n))):
            params = [p for n, p in self.stages[s].params.items() if which(n)]
            if group is not None and params:
                flat = flat_grads(params)
                out.append((params, flat, dist.all_reduce(flat, group=group, async_op=True)))
        return out

    def stage_done(self, s):
        """Stage s has every weight gradient of the step (the pipeline calls this)."""
        if self.zero < 2 and self.overlap and self.dp > 1 and self.stages[s].params:
            self.pending[s] = self.start_all_reduce(s)

    def flush(self, step, lr, before_update=None):
        """The step's end: the gradients summed over the replicas, then `before_update` (DualPipe's sum over its model
        copies, copies.py, which must see the replicas' sum and not race their overlapped all_reduce: called with each
        stage's owned chunk with ZeRO-2/3, else with None for the parameters' .grad), then the update."""
        if self.zero >= 2:
            self.collect(everything=True)
            if before_update:
                before_update({s: sh.grad_chunk() for s, sh in self.shards.items() if sh.params})
            for s in sorted(self.shards):
                self.shards[s].step(lr, self.timeout, f"rank {self.rank}: step {step} stage {s}", gather=self.zero == 2)
            return
        if self.dp > 1:
            for s in sorted(self.stages):
                if s not in self.pending and self.stages[s].params:
                    self.pending[s] = self.start_all_reduce(s)
            for s, reduces in self.pending.items():
                for params, flat, work in reduces:
                    wait(work, self.timeout, f"rank {self.rank}: step {step}: the all_reduce of stage {s}'s gradients did not finish within {self.timeout.total_seconds()} s")
                    set_grads(params, flat)
            self.pending = {}
        if before_update:
            before_update(None)
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

    def owned_masters(self, s):
        """ZeRO-3: stage s's owned chunk of the weights (the master pieces), its parameters being freed between steps."""
        return self.shards[s].masters()

    def full_weights(self):
        """The whole weights of this process's stages ({name: tensor}); with ZeRO-3 gathered from the owners' chunks
        (a collective of each stage's group: every process calls it at the same step)."""
        if self.zero != 3:
            return {n: p for st in self.stages.values() for n, p in st.params.items()}
        out = {}
        for s in sorted(self.shards):
            sh = self.shards[s]
            if sh.params:
                out.update(sh.whole(sh.gather(sh.masters(), self.timeout, f"rank {self.rank}: the ZeRO-3 all_gather of stage {s}'s weights "
                                              f"for a checkpoint did not finish within {self.timeout.total_seconds()} s")))
        return out

    def optimizer_slots(self):
        """Every slot of this process's stages' parameters, whole ({name: {slot: tensor}}); with ZeRO a collective
        of each stage's group (every process calls it at the same step)."""
        out = {}
        for s in sorted(self.shards):
            out.update(self.shards[s].slots(self.timeout, f"rank {self.rank}: checkpoint of stage {s}"))
        if self.optimizer is not None:
            params = {n: p for st in self.stages.values() for n, p in st.params.items()}
            out.update(optimizer_slots(self.optimizer, params)[1])
        return out

    def load_optimizer(self, state):
        """The checkpoint's optimizer state for this process's stages (their weights already loaded whole into the
        parameters; ZeRO-3 keeps its chunk of them and frees the rest)."""
        for s in sorted(self.shards):
            self.shards[s].load(state)
            if self.zero == 3:
                self.shards[s].free()
        if self.optimizer is not None:
            slots_of = {p: state.slots[n] for st in self.stages.values() for n, p in st.params.items()}
            self.optimizer.load_state_dict(optimizer_state_dict(self.optimizer, state.optimizer, state.optimizer_steps, slots_of))
