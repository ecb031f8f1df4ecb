"""train.py --profile: no training. Measures, on this cluster's own devices, what PipeLab's planner needs and
writes it as PipeLab's Profile (src/plan/profile.ts), which `pipelab plan --profile` and the page's Plan panel
read unchanged:

  blocks[b].F, I, W, B   each block of the model alone, for one micro-batch of the run's size (config.json
                         "rowsPerMicrobatch"), timed on the device of the process whose stage holds it (replica
                         0's), one process at a time (solo times); CUDA events on GPUs, wall time on CPU (where
                         torch runs synchronously). I is the gradient for the block's input and its weighted
                         operations' outputs, W the weight gradients after it (split_backward.py, as pipeline.py
                         runs them), B the full backward; block 0 takes no input gradient (its I holds only the
                         inner gradients W starts from). Mean of --profile-repeats rounds after 2 warm-up rounds, each round
                         timing every block once (a burst of load elsewhere spreads over all blocks).
  paramBytes             the bytes of the block's weights (= its gradients': what a data-parallel plan all-reduces).
  heldBytes              the bytes the block's forward keeps for its backward (autograd's saved tensors, its
                         parameters left out, and its input); heldBytesRecompute: its input only.
  comm[b]                one way across boundary b: half the round trip of an activation of that boundary's shape
                         between processes 0 and 1 (the gradient going back has the same shape).
  lanes                  the effective lanes of the devices when every process computes at once (processes sharing
                         a machine's cores or one GPU run slower together): every process repeats the F and B of
                         its own blocks for the same wall time, first alone (in turns), then all at once; with n
                         processes each at a fraction f of its solo rate, lanes = n * mean(f) (the simulator's
                         shared-device mode runs n ranks at min(1, lanes / n) each). Each f is the median of
                         three rounds; on CPU, lanes is at most the cores the processes can run on.
  allReduce              with dp >= 2: the all-reduce of each stage's gradients over its replicas (one stage at a
                         time) and two probe sizes, with the ring's alpha-beta fit
                         time = 2(n-1) * latency + 2(n-1)/n * bytes / bandwidth.
  tpAllReduce            with tp >= 2: the all-reduce of one micro-batch's activation at each block input (what a tp
                         group sums twice per GPT block forward and twice backward) over one tp group, and two probe
                         sizes, with the same fit ("replicas": the tp group's processes). The blocks' F, I and W are
                         whole blocks timed on one process (what one device computes).
  tp                     with tp >= 2: {"t": tp, "blocks": [...]}, each block as one tp worker computes it (tp rank
                         0's pieces of its split layers, the collectives played locally: the sum returns its input, the
                         gather repeats the columns), timed as above, with the collectives that worker waits for:
                         "forward" and "backward", each a list of {"coll": "tp-all-reduce" | "tp-all-gather" |
                         "tp-reduce-scatter", "bytes": the whole tensor's bytes}, counted in one forward and one
                         backward. With sequence parallelism, "sequenceParallel": true and "comm": each boundary's
                         time for one tp worker's block of the token rows. `pipelab plan --tp` plans from these.
  model                  config.json's "profileModel": the planner refuses the profile for another model.
"""
import json
import math
import os
import platform
import statistics
import time

import torch
import torch.distributed as dist

from model import Stage, load_weights, microbatch_loss, recompute_mode
from waits import wait
from split_backward import Tape, backward_input, backward_weight
from tensor_parallel import WHOLE, TensorParallel

WARMUP = 2


class Clock:
    def __init__(self, device):
        self.cuda = device.type == "cuda"

    def ms(self, fn):
        if self.cuda:
            torch.cuda.synchronize()
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            fn()
            b.record()
            b.synchronize()
            return a.elapsed_time(b)
        t0 = time.perf_counter()
        fn()
        return (time.perf_counter() - t0) * 1000

    def median(self, repeats, prepare, run):
        """run(prepare()) timed `repeats` times after WARMUP untimed ones (prepare itself untimed); the median, ms."""
        times = []
        for i in range(WARMUP + repeats):
            state = prepare()
            t = self.ms(lambda: run(state))
            if i >= WARMUP:
                times.append(t)
        return statistics.median(times)


class LocalTp(TensorParallel):
    """One tp worker's pieces of the layers (tp rank 0's of the group `tp`), its collectives played on this process
    alone and written down while `log` is a list: the sum returns its input, the gather repeats the member's
    columns (or, with sequence parallelism, token rows) t times (the shapes and copies of the real ones, without the
    exchange). What --profile times as the compute of one worker of a tp group, and counts as the collectives that
    worker waits for. A reduce-scatter of rows runs here as an all-reduce and this member's rows (gloo has no
    reduce_scatter, tensor_parallel.py), and is written down as the reduce-scatter it stands for."""

    def __init__(self, tp):
        super().__init__(tp.size, 0, None, tp.rules, tp.timeout, tp.who, tp.sequence_parallel, tp.defer_partial_grads)
        self.log = None

    def note(self, coll, t):
        if self.log is not None:
            self.log.append({"coll": coll, "bytes": t.numel() * t.element_size()})

    def all_reduce(self, x, what):
        self.note("tp-reduce-scatter" if "reduce-scatter" in what else "tp-all-reduce", x)
        return x

    def all_gather(self, y):
        out = torch.cat([y] * self.size, dim=-1)
        self.note("tp-all-gather", out)
        return out

    def all_gather_rows(self, x):
        out = torch.cat([x] * self.size, dim=0)
        self.note("tp-all-gather", out)
        return out


def block_input_shape(proc, b, tp):
    """The shape of one micro-batch's input to block b > 0: [rows, *blockInShape]; with sequence parallelism one tp
    worker's block of its token rows, [rows * T / t, C] (pipeline.py boundary_shape)."""
    shape = proc.bundle.cfg["blockInShape"][b]
    if not tp.sequence_parallel:
        return (proc.data.rows, *shape)
    return (proc.data.rows * math.prod(shape[:-1]) // tp.size, shape[-1])


class BlockProbe:
    """Block b of the model as a stage of its own, with one micro-batch of input: real data for block 0, random
    activations of the block's input shape otherwise (the timings do not depend on the values). With a LocalTp,
    one tp worker's piece of the block."""

    def __init__(self, proc, b, tp=WHOLE):
        cfg, data = proc.bundle.cfg, proc.data
        self.b, self.first, self.tp = b, b == 0, tp
        self.stage = Stage(b, cfg["model"], [b, b + 1], proc.device, tp, recompute_mode(cfg))
        load_weights({b: self.stage}, tp.pieces(proc.init), f"rank {proc.rank}")
        self.params = list(self.stage.params.values())
        self.x = data.input(0, 0) if self.first else torch.randn(*block_input_shape(proc, b, tp), device=proc.device)
        self.target = data.target(0, 0) if self.stage.is_last else None
        self.scale = data.loss_scale[0]

    def input(self):
        return self.x if self.first else self.x.detach().requires_grad_(True)

    def forward(self, x):
        y = self.stage.forward(x)
        return microbatch_loss(y, self.target, self.scale) if self.stage.is_last else y

    def graph(self):
        x = self.input()
        with Tape() as tape:
            y = self.forward(x)
        return x, y, None if self.stage.is_last else torch.ones_like(y), tape

    def input_grad(self, g):
        x, y, dy, tape = g
        return tape, backward_input(None if self.first else x, y, dy, tape)[1]

    def full_backward(self, g):
        x, y, dy, _ = g
        torch.autograd.grad(y, ([] if self.first else [x]) + self.params, grad_outputs=dy)

    def weight_grad(self, state):
        backward_weight(*state)

    def held_bytes(self):
        """Bytes of what the forward keeps for the backward: saved tensors (not parameters) and the input."""
        params = {p.data_ptr() for p in self.params}
        seen = {}

        def pack(t):
            if t.data_ptr() not in params:
                seen[t.data_ptr()] = max(seen.get(t.data_ptr(), 0), t.numel() * t.element_size())
            return t

        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            x = self.graph()[0]
        seen[x.data_ptr()] = max(seen.get(x.data_ptr(), 0), x.numel() * x.element_size())
        return sum(seen.values()), x.numel() * x.element_size()

    def timings(self):
        """What one round times: name -> (prepare, run); prepare is not timed."""
        return {"F": (self.input, self.forward), "B": (self.graph, self.full_backward),
                "I": (self.graph, self.input_grad), "W": (lambda: self.input_grad(self.graph()), self.weight_grad)}

    def collectives(self):
        """The tp collectives of one forward and of one backward (with the backward split, all in I: W runs none)."""
        self.tp.log = []
        g = self.graph()
        forward, self.tp.log = self.tp.log, []
        self.full_backward(g)
        backward, self.tp.log = self.tp.log, None
        return {"forward": forward, "backward": backward}

    def result(self, mean_ms):
        held, held_input = self.held_bytes()
        out = {"F": mean_ms["F"], "I": mean_ms["I"], "W": mean_ms["W"], "B": mean_ms["B"],
               "heldBytes": held, "heldBytesRecompute": min(held, held_input),
               "paramBytes": sum(p.numel() * p.element_size() for p in self.params)}
        return {**out, **self.collectives()} if isinstance(self.tp, LocalTp) else out


def merged(values):
    out = {}
    for v in dist_all_gather(values):
        out.update(v)
    return out


def dist_all_gather(value):
    gathered = [None] * dist.get_world_size()
    dist.all_gather_object(gathered, value)
    return gathered


def measure_blocks(probes, clock, repeats):
    """Each probe's F, B, I and W, in rounds: every round times each of them once, so a burst of load from
    elsewhere on the machine spreads over all blocks instead of inflating a few; the mean of the rounds after
    WARMUP (a run feels the mean slowdown, not the median one)."""
    times = {p.b: {k: [] for k in p.timings()} for p in probes}
    for i in range(WARMUP + repeats):
        for p in probes:
            for k, (prepare, run) in p.timings().items():
                state = prepare()
                t = clock.ms(lambda: run(state))
                if i >= WARMUP:
                    times[p.b][k].append(t)
    return {p.b: p.result({k: statistics.fmean(v) for k, v in times[p.b].items()}) for p in probes}


def block_times(proc, probes, clock, repeats):
    """Each block's solo times, measured by replica 0's process of the rank holding it (tp rank 0's), one rank at a
    time: whole blocks (what one device computes), or with LocalTp probes one tp worker's pieces."""
    mine = {}
    for turn in range(proc.bundle.mesh.ranks):
        dist.barrier()
        if proc.replica == 0 and proc.prank == turn and proc.tp_rank == 0:
            mine = measure_blocks(probes, clock, repeats)
    return merged(mine)


def exchange(buf, peer, send_first, timeout, who):
    for sending in ((True, False) if send_first else (False, True)):
        op = dist.isend if sending else dist.irecv
        wait(op(buf, peer), timeout, f"{who}: the profile's round trip with rank {peer} did not finish within {timeout.total_seconds()} s")


def boundary_times(proc, clock, repeats, tp=WHOLE):
    """One-way time across each block boundary: half a round trip of that boundary's activation (with a sequence-
    parallel tp, one tp worker's block of its rows), between process 0 and the next pipeline rank's (process 1 when
    there is one rank, or tp = 1)."""
    cfg, mesh = proc.bundle.cfg, proc.bundle.mesh
    n = len(cfg["model"]["blocks"])
    peer = mesh.process(0, 1, 0) if mesh.ranks > 1 else 1
    out = []
    for b in range(n - 1):
        buf = torch.zeros(*block_input_shape(proc, b + 1, tp), device=proc.device)
        who = f"rank {proc.rank}: boundary {b}"
        if proc.rank == 0:
            out.append(clock.median(repeats, lambda: None, lambda _: exchange(buf, peer, True, proc.timeout, who)) / 2)
        elif proc.rank == peer:
            for _ in range(WARMUP + repeats):
                exchange(buf, 0, False, proc.timeout, who)
    return out


def timed_all_reduces(proc, clock, repeats, jobs, mine):
    """Each job (its numel) timed as an all_reduce over this process's `group`, one job at a time, where
    mine(job) says this process takes part; the samples of the first member of each group, from every process."""
    samples = []
    for job in jobs:
        dist.barrier()
        group, first = mine(job)
        if group is not None:
            buf = torch.zeros(job[1], device=proc.device)
            reduce = lambda _: wait(dist.all_reduce(buf, group=group, async_op=True), proc.timeout,
                                    f"rank {proc.rank}: the profile's all_reduce did not finish within {proc.timeout.total_seconds()} s")
            t = clock.median(repeats, lambda: None, reduce)
            if first:
                samples.append({"bytes": job[1] * 4, "time": t})
    return [s for part in dist_all_gather(samples) for s in part]


def ring_fit(samples, n):
    """Least squares of time = a + b * bytes, with a = 2(n-1) * latency and b = 2(n-1) / (n * bandwidth)."""
    xs, ts = [s["bytes"] for s in samples], [s["time"] for s in samples]
    mx, mt = sum(xs) / len(xs), sum(ts) / len(ts)
    sxx = sum((x - mx) ** 2 for x in xs)
    b = sum((x - mx) * (t - mt) for x, t in zip(xs, ts)) / sxx if sxx > 0 else 0.0
    b = max(b, 1e-12)
    a = max(0.0, mt - b * mx)
    return {"replicas": n, "latency": a / (2 * (n - 1)), "bandwidth": 2 * (n - 1) / (n * b), "samples": samples}


def all_reduce_times(proc, clock, repeats):
    """Per stage, the all-reduce of its gradients over its replicas (one at a time; tp rank 0's group, the whole
    stage's bytes); then two probe sizes."""
    cfg, mesh = proc.bundle.cfg, proc.bundle.mesh
    jobs = [(cfg["stageToRank"][s], sum(math.prod(shape) for _, shape in cfg["stageParams"][s])) for s in range(cfg["stages"])]
    jobs += [(0, 1 << 8), (0, 1 << 18)]
    mine = lambda job: (proc.group, proc.replica == 0) if proc.prank == job[0] and proc.tp_rank == 0 else (None, False)
    return ring_fit(timed_all_reduces(proc, clock, repeats, jobs, mine), mesh.dp)


def tp_all_reduce_times(proc, clock, repeats):
    """With tp >= 2: the all-reduce of one micro-batch's activation at each block's input (what Megatron's f and g
    sum: [rows, blockSize, width] in a GPT block) over replica 0's tp group of pipeline rank 0, then two probe sizes."""
    cfg, mesh = proc.bundle.cfg, proc.bundle.mesh
    sizes = sorted({proc.data.rows * math.prod(shape) for shape in cfg["blockInShape"][1:]} | {1 << 8, 1 << 18})
    mine = lambda job: (proc.tp.group, proc.tp_rank == 0) if proc.replica == 0 and proc.prank == 0 else (None, False)
    return ring_fit(timed_all_reduces(proc, clock, repeats, [(0, n) for n in sizes], mine), mesh.tp)


LANE_ROUNDS = 3


def cpu_lanes_cap(threads):
    """The most lanes CPU processes can have: on each machine, its cores (this process's affinity, as taskset or a
    container's cpuset sets it) or its processes x threads when fewer, summed over the machines of the run."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:
        cores = os.cpu_count() or 1
    hosts = {}
    for host, n in dist_all_gather((platform.node(), cores)):
        procs, c = hosts.get(host, (0, n))
        hosts[host] = (procs + 1, min(c, n))
    return sum(min(c, procs * threads) for procs, c in hosts.values())


def lanes_of(proc, probes, clock, threads):
    """Effective lanes: each process's rate of F + B over its own blocks when all compute at once, against alone.

    LANE_ROUNDS rounds of (alone in turns, then together), the median of each process's ratios: a burst of load
    from elsewhere during one measurement moves one round, not the answer. On CPU the answer is capped at what the
    machines can give (cpu_lanes_cap): a solo rate slowed by outside load would otherwise claim more lanes than
    there are cores. Returns (lanes, the cap when it applied, else None).
    """
    world = proc.bundle.mesh.world

    def work():
        for p in probes:
            p.full_backward(p.graph())
        if clock.cuda:
            torch.cuda.synchronize()

    def rate(seconds):
        t0, done = time.perf_counter(), 0
        while done == 0 or time.perf_counter() - t0 < seconds:
            work()
            done += 1
        return done / (time.perf_counter() - t0)

    work()
    seconds = min(5.0, max(0.3, 20 * max(dist_all_gather(clock.ms(work) / 1000))))
    ratios = []
    for _ in range(LANE_ROUNDS):
        alone = 0.0
        for turn in range(world):
            dist.barrier()
            if proc.rank == turn:
                alone = rate(seconds)
        dist.barrier()
        ratios.append(rate(seconds) / alone)
    fractions = dist_all_gather(statistics.median(ratios))
    lanes = world * sum(fractions) / len(fractions)
    cap = None if clock.cuda else cpu_lanes_cap(threads)
    if cap is not None and lanes > cap:
        return float(cap), cap
    return round(lanes, 2), None


def device_name(proc):
    if proc.device.type == "cuda":
        return torch.cuda.get_device_name(proc.device)
    return f"CPU {platform.processor() or platform.machine()}"


def profile_cluster(proc, args):
    cfg, mesh = proc.bundle.cfg, proc.bundle.mesh
    clock, repeats = Clock(proc.device), max(1, args.profile_repeats)
    # Copy 0's stages: with model copies (DualPipe) the other copy holds the same blocks, each timed once.
    probes = [BlockProbe(proc, b) for s in sorted(proc.stages) if proc.bundle.copies.copy_of(s) == 0 for b in range(*cfg["stageBlocks"][s])]
    times = block_times(proc, probes, clock, repeats)
    dist.barrier()
    # With tp: the same blocks as one tp worker computes them, and the collectives it waits for (profile "tp").
    tp_times = block_times(proc, [BlockProbe(proc, p.b, LocalTp(proc.tp)) for p in probes], clock, repeats) if mesh.tp >= 2 else None
    dist.barrier()
    comm = boundary_times(proc, clock, repeats) if mesh.world >= 2 else [0.0] * (len(cfg["model"]["blocks"]) - 1)
    dist.barrier()
    # With sequence parallelism a tp worker sends its block of the token rows across each boundary.
    sp_comm = boundary_times(proc, clock, repeats, proc.tp) if proc.tp.sequence_parallel else None
    dist.barrier()
    reduce = all_reduce_times(proc, clock, repeats) if mesh.dp >= 2 else None
    tp_reduce = tp_all_reduce_times(proc, clock, repeats) if mesh.tp >= 2 else None
    lanes, lane_cap = lanes_of(proc, probes, clock, args.threads) if mesh.world >= 2 else (None, None)
    if proc.rank != 0:
        return
    blocks = [{"name": blk["name"], **times[b]} for b, blk in enumerate(cfg["model"]["blocks"])]
    source = (f"train.py --profile on {device_name(proc)} ({'CUDA events' if clock.cuda else 'wall time'}), torch {torch.__version__}, "
              f"{mesh.world} processes ({mesh.describe()}), {args.threads} thread(s) each, {proc.data.rows} rows per micro-batch, "
              f"mean of {repeats} rounds after {WARMUP} warm-up")
    profile = {"version": 1, "unit": "ms", "source": source, "blocks": blocks, "comm": comm}
    if lanes is not None:
        profile["lanes"] = lanes
        profile["source"] += (f"; {lanes} effective lanes with {mesh.world} processes at once"
                              + (f" (capped at the {lane_cap} cores they can run on)" if lane_cap is not None else ""))
    profile["model"] = cfg["profileModel"]
    if reduce is not None:
        profile["allReduce"] = reduce
    if tp_reduce is not None:
        profile["tpAllReduce"] = tp_reduce
    if tp_times is not None:
        profile["tp"] = {"t": mesh.tp, "blocks": [tp_times[b] for b in range(len(blocks))]}
        if sp_comm is not None:
            profile["tp"].update({"sequenceParallel": True, "comm": sp_comm})
    os.makedirs(os.path.dirname(os.path.abspath(args.profile_out)), exist_ok=True)
    tmp = args.profile_out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(profile, f, indent=1)
        f.write("\n")
    os.replace(tmp, args.profile_out)
    print(f"profile {args.profile_out}: {len(blocks)} blocks, comm {['%.3f' % c for c in comm]} ms"
          + (f", lanes {lanes}" if lanes is not None else ""), flush=True)
