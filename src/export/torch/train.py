#!/usr/bin/env python3
"""A PipeLab run, exported: the same model, stages, schedule, weights and batches, on torch.distributed.

    torchrun --redirects 1 --tee 1 --nproc_per_node=W train.py                  # W = dp x ranks x ep x tp (config.json "world")
    torchrun --redirects 1 --tee 1 --nproc_per_node=W train.py --backend nccl   # one GPU per process
    torchrun --redirects 1 --tee 1 --nproc_per_node=W train.py --profile        # no training: writes profile.json for `pipelab plan`
    torchrun --redirects 1 --tee 1 --nproc_per_node=W train.py --resume FILE --save-every N   # continue a checkpoint

(`--redirects 1 --tee 1`: PyTorch 1.13's torchrun fails on Python 3.11 without them; newer torch takes them too.)

The processes form a mesh of dp replicas of a pipeline of `ranks` ranks, each rank's stages held by tp processes:
process g = (replica * ranks + rank) * tp + j (bundle.py; with tp = 1, replica g // ranks, pipeline rank g % ranks).
Each builds the stages the schedule puts on its pipeline rank (with tp > 1 its piece of their split weights,
tensor_parallel.py), loads their initial weights from init.safetensors (sliced), and walks its row of schedule.csv
step after step on its replica's rows of the batch (pipeline.py, data.py), summing or gathering activations over
its tp group inside the split layers. With DualPipe's two model copies (config.json "copies") each rank holds a
stage of each copy, both loaded from the same weights by name. At the end of the step (the flush) each stage's
gradients are summed over its replicas, then over its model copies (copies.py), and every process steps its
optimizer (collectives.py; ZeRO-1, 2 or 3 when the run used it: ZeRO-2 reduce-scatters each backward's gradients
into the replicas' chunks, ZeRO-3 also keeps the weights as chunks, gathered before each F, B and I of a stage and
freed after, as run.reshard says; the replicas of one tp piece form each group). The last stage's process of
replica 0 (tp rank 0) prints the loss of every step: the whole batch's, every replica's (and every copy's) share.
At the end rank 0 gathers the weights (joining the tp pieces; copy 0's), writes trained.safetensors (the page's
names and layouts) and prints the held-out loss. A mixture-of-experts GPT (moe.py) adds each step's aux loss and
dropped choices to the loss line. With expert parallelism (config.json "ep" > 1, as the tab runs it) each pipeline
rank of each replica is ep processes, process ((replica * ranks + rank) * ep + e) * tp + j (bundle.py), each on its
slice of every micro-batch's sequences and holding E / ep of the experts; the router's probabilities are all-gathered
over the ep group, so every process routes the whole micro-batch as one device does, and the experts' rows travel by
all_to_all_single (moe.py); the dense gradients are summed over the ep group and the replicas, each expert's over the
replicas holding it (each process prints its experts and its collectives at the end).

PipeDream and PipeDream-2BW (config.json "update" other than 'flush') have no flush: the whole run is one stream,
schedule.csv's one window of steps x microbatches micro-batches, walked once while each stage updates its own weights
(after every backward on stashed versions, or every m micro-batches one version stale, on replicas after an all_reduce
of the block's gradients: stream.py); each step's loss is printed when the stream ends, and no checkpoint is written.
The page saves a 2BW stream inside it (its older weight version as previous.*): --resume continues such a checkpoint
of step B as a 2BW stream walked from micro-batch B x m (a synchronous run resumes it from its latest weights).

Checkpoints (checkpoint.py) are PipeLab's run-state files, the same the page downloads and loads: at the end of
the run and every --save-every N steps rank 0 writes out/checkpoint-stepK.safetensors (weights, the optimizer's
state with ZeRO's shards gathered, and ZeRO-3's weights, the step, the losses so far); --resume FILE checks a
checkpoint against this run (its model and configuration; the mesh, tp included, the ZeRO settings and the schedule
may differ: a checkpoint holds whole tensors)
before any process group starts and continues from its step with its weights and optimizer state.

Needs PyTorch >= 1.13 and the Python standard library only (safetensors is read with struct and json).
"""
import argparse
import datetime
import os
import sys
import time

import torch
import torch.distributed as dist

from bundle import Bundle
from checkpoint import CheckpointError, RunState, check_run, load_run_state, read_run_state, slot_name, write_run_state, SLOTS
from collectives import DataParallel, replica_groups
from copies import CopySum
from data import ReplicaBatches
from model import build_stages, heldout_loss, load_weights
from moe import ExpertParallel, has_moe, is_expert_weight, take_aux
from pipeline import PipelineRank
from safetensors_io import read_safetensors, write_safetensors
from stream import StreamUpdates, stream_step_losses
from tensor_parallel import TensorParallel, param_of, piece_shape, tp_groups, tp_join
from waits import RunFailed, wait

HERE = os.path.dirname(os.path.abspath(__file__))


def parse_args(argv=None, here=HERE):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--backend", choices=["gloo", "nccl"], default="gloo", help="gloo (CPU) or nccl (one CUDA GPU per process)")
    ap.add_argument("--steps", type=int, default=None, help="steps to run (default: the exported run's, config.json 'steps')")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds a receive or a collective may wait before the run fails")
    ap.add_argument("--out", default=os.path.join(here, "out"), help="folder for trained.safetensors")
    ap.add_argument("--resume", default=None, metavar="FILE", help="continue from a PipeLab checkpoint (the page's "
                    "'Download checkpoint' or a checkpoint-stepK.safetensors of an earlier train.py run): its step, weights, "
                    "optimizer state and losses")
    ap.add_argument("--save-every", type=int, default=0, metavar="N", help="also write out/checkpoint-stepK.safetensors every "
                    "N steps (one is always written at the end); the page's 'Load checkpoint' reads it")
    ap.add_argument("--threads", type=int, default=1, help="CPU threads per process (torch.set_num_threads)")
    ap.add_argument("--profile", action="store_true", help="no training: time every block's F, I and W, the sends and the "
                    "all-reduces on this cluster and write PipeLab's Profile (profile.json) for `pipelab plan --profile`")
    ap.add_argument("--profile-out", default=os.path.join(here, "profile.json"), help="where --profile writes the profile")
    ap.add_argument("--profile-repeats", type=int, default=5, help="timed repeats of each measurement after 2 warm-up ones")
    ap.add_argument("--test-stall-rank", type=int, default=-1, help=argparse.SUPPRESS)  # tests: a process that stops answering
    return ap.parse_args(argv)


class Process:
    """This process in the mesh: its replica, pipeline rank and tp rank, its device, its stages (its tp pieces of
    them) with their initial weights, and its replica's batches."""

    def __init__(self, bundle, args):
        self.bundle, cfg = bundle, bundle.cfg
        self.rank = int(os.environ.get("RANK", "0"))
        world = int(os.environ.get("WORLD_SIZE", "1"))
        bundle.check_world(world, self.rank)
        self.replica, self.prank, self.tp_rank = bundle.mesh.place(self.rank)
        if args.backend == "nccl":
            if not torch.cuda.is_available():
                raise SystemExit(f"rank {self.rank}: --backend nccl needs CUDA, and torch.cuda.is_available() is False; use --backend gloo")
            self.device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
            torch.cuda.set_device(self.device)
        else:
            self.device = torch.device("cpu")
        self.timeout = datetime.timedelta(seconds=args.timeout)
        sp = bool(cfg["run"].get("sequenceParallel", False))  # absent in bundles from before it
        # Under a flush the parts of the gradients sequence parallelism splits are summed where the update reads them.
        flush = cfg.get("update", "flush") == "flush"
        self.tp = TensorParallel(bundle.mesh.tp, self.tp_rank, None, cfg.get("tpParams"), self.timeout, f"rank {self.rank}", sp, flush)
        mesh = bundle.mesh  # with ep > 1 (tp = 1): this pipe's place in its ep group holds its share of the experts
        self.ep = ExpertParallel(mesh.ep, self.replica % mesh.ep, self.timeout, f"rank {self.rank}") if mesh.ep > 1 else None
        self.stages = build_stages(cfg, self.prank, self.device, self.tp, self.ep)
        self.init = read_safetensors(bundle.path("init.safetensors"))  # whole (--profile times whole blocks)
        pieces = self.tp.pieces(self.init)
        load_weights(self.stages, self.ep.pieces(pieces) if self.ep else pieces, f"rank {self.rank}")
        self.data = ReplicaBatches(bundle.path("batches.safetensors"), cfg, self.replica, self.device)

    def start(self, backend):
        """Joins the process group (starts it, unless the caller did: then the caller's it stays); True if it started it."""
        started = not dist.is_initialized()
        if started:
            dist.init_process_group(backend, rank=self.rank, world_size=self.bundle.mesh.world, timeout=self.timeout)
        dist.barrier()  # every process is up (and NCCL's communicator exists before the first point-to-point batch)
        self.groups = replica_groups(self.bundle.mesh, self.timeout)
        self.group = self.groups[(self.prank, self.tp_rank)]  # this piece's replicas; None when dp = 1
        self.tp.group = tp_groups(self.bundle.mesh, self.timeout).get((self.replica, self.prank))  # None when tp = 1
        self.expert_group = None  # with ep > 1 and dp > 1: the replicas holding this process's experts
        if self.ep:  # every process creates every ep group and every experts' replica group, in the same order
            mesh = self.bundle.mesh
            groups = {(d, r): dist.new_group(mesh.ep_group(d * mesh.ep, r), timeout=self.timeout) for r in range(mesh.ranks) for d in range(mesh.replicas)}
            self.ep.group = groups[(self.replica // mesh.ep, self.prank)]
            if mesh.replicas > 1:
                experts = {(e, r): dist.new_group(mesh.expert_group(e, r), timeout=self.timeout) for r in range(mesh.ranks) for e in range(mesh.ep)}
                self.expert_group = experts[(self.ep.index, self.prank)]
        self.copy_sum = CopySum(self.bundle, self.rank, self.stages, self.timeout)  # model copies (DualPipe); else nothing
        return started

    def synchronize(self):
        if self.device.type == "cuda":
            torch.cuda.synchronize()


# Configuration fields a checkpoint may differ in from the run that resumes it: the mesh and schedule change how a
# step is computed, not what it computes.
MESH_FIELDS = ("ranks", "dp", "tp", "zero", "reshard", "prefetch", "overlap", "virtual", "schedule", "partition", "cut", "memCap")


def read_resume(bundle, path, steps):
    """The checkpoint `path`, checked against this run before any process group starts (every process reads it, so
    a bad file stops them all with the same message): sound, of this model and configuration, before step `steps`."""
    cfg = bundle.cfg
    try:
        state = read_run_state(path)
        check_run(state, cfg["run"], {n: s for stage in cfg["stageParams"] for n, s in stage}, ignore=MESH_FIELDS)
    except (CheckpointError, OSError) as e:
        raise SystemExit(f"--resume {path}: {e}") from None
    if state.steps_done >= steps:
        raise SystemExit(f"--resume {path}: the checkpoint is at step {state.steps_done}; this run ends at step {steps}: nothing to do")
    return state


def train(proc, args, steps, resumed):
    """Steps [resumed.steps_done, steps) (resumed: a checked checkpoint, or None to start at step 0)."""
    cfg, mesh = proc.bundle.cfg, proc.bundle.mesh
    run = cfg.get("run", {})
    flush = DataParallel(mesh, proc.replica, proc.rank, proc.group, proc.stages, cfg["optimizer"], run.get("zero", 0), run.get("overlap", True),
                         proc.timeout, proc.bundle.order[proc.prank], run.get("reshard", "step"), run.get("prefetch", True), proc.expert_group)
    pipe = PipelineRank(proc.bundle, proc.replica, proc.prank, proc.tp_rank, proc.stages, proc.data, proc.device, proc.timeout, flush.stage_done, flush, tp=proc.tp)
    start = resumed or RunState(run, 0, {}, cfg["optimizer"]["name"], 0, {}, 0.0, [])
    if resumed:  # the whole weights (this tp piece of them) into the parameters; the flush's shards take their chunks (ZeRO-3 then frees them)
        mine = proc.tp.sliced(resumed)
        load_run_state(mine, {n: p for st in proc.stages.values() for n, p in st.params.items()})
        flush.load_optimizer(mine)
        if proc.rank == 0:
            print(f"resumed from {args.resume} at step {resumed.steps_done}", flush=True)
    last = cfg["stages"] - 1  # with model copies (DualPipe) the last copy's last stage holds the step's loss
    prints = last in proc.stages and proc.replica == 0 and proc.tp_rank == 0
    step_ms, losses = [], list(start.losses)
    for step in range(start.steps_done, steps):
        t0 = time.perf_counter()
        stall = 10 * args.timeout if args.test_stall_rank == proc.rank and step == 0 else 0.0
        loss = pipe.run_step(step, stall)
        # Each stage's gradients summed over its replicas, then over its model copies (DualPipe), then the update.
        flush.flush(step, cfg["lrPerStep"][step], lambda chunks: proc.copy_sum.sum_grads(step, chunks))
        if proc.copy_sum.holds_loss():
            loss = flush.step_loss(proc.copy_sum.step_loss(loss, proc.device), proc.device)
        if last in proc.stages:
            losses.append(loss)
        proc.synchronize()
        step_ms.append((time.perf_counter() - t0) * 1000)
        moe = step_aux(cfg, proc.device)
        if prints:
            print(f"step {step} loss {loss:.9g} ms {step_ms[-1]:.2f}{'' if moe is None else f' aux {moe[0]:.9g} dropped {moe[1]:.0f}'}", flush=True)
        if step + 1 < steps and args.save_every > 0 and (step + 1) % args.save_every == 0:
            save_checkpoint(proc, flush, args, start, step + 1, losses)
    if proc.bundle.copies.n > 1:  # the copies took the same updates: they hold the same weights
        diff = proc.copy_sum.difference(proc.device, flush.owned_masters if flush.zero == 3 else None)
        if proc.rank == 0:
            print(f"model copies differ by {diff:.9g}", flush=True)
    final = save_checkpoint(proc, flush, args, start, steps, losses)
    if proc.rank == 0:
        write_trained(proc, args, final.params, steps)
    if proc.ep:
        held = [layer.moe.local for st in proc.stages.values() for layer in st.layers if hasattr(layer, "moe")]
        first = proc.ep.index * held[0] if held else 0
        print(f"rank {proc.rank}: ep rank {proc.ep.index} of {proc.ep.size}: experts {first}..{first + held[0] - 1 if held else -1} "
              f"of {len(held)} MoE blocks, {proc.ep.gathers} all_gather and {proc.ep.calls} all_to_all_single calls", flush=True)
    if prints and step_ms:
        rest = step_ms[1:] or step_ms
        print(f"mean step ms {sum(rest) / len(rest):.3f} (steps after the first)", flush=True)


def step_aux(cfg, device):
    """An MoE model's aux loss of the step (alpha-weighted, every MoE block's groups: moe.py) and the token choices its
    experts dropped for capacity, summed over every process (each counted its own blocks' micro-batches); None for a
    dense model (no collective)."""
    if not has_moe(cfg["model"]):
        return None
    t = torch.tensor(take_aux(), dtype=torch.float64, device=device)
    dist.all_reduce(t)
    return t.tolist()


def train_stream(proc, args, steps, resumed=None):
    """PipeDream's or PipeDream-2BW's one stream of every step's micro-batches (stream.py), then the weights out;
    resumed (PipeDream-2BW): a checked checkpoint of step B, the stream walked from micro-batch B * m."""
    cfg = proc.bundle.cfg
    who = f"rank {proc.rank}"
    updates = StreamUpdates(cfg, proc.stages, proc.group, proc.timeout, who)
    first = resumed.steps_done if resumed else 0
    if resumed:
        updates.resume(proc.tp.sliced(resumed), load_run_state)
        if proc.rank == 0:
            print(f"resumed from {args.resume} at step {first}", flush=True)
    pipe = PipelineRank(proc.bundle, proc.replica, proc.prank, proc.tp_rank, proc.stages, proc.data, proc.device, proc.timeout, versions=updates, tp=proc.tp,
                        first_mb=first * cfg["microbatches"])
    t0 = time.perf_counter()
    pipe.run_step(0, 10 * args.timeout if args.test_stall_rank == proc.rank else 0.0)
    proc.synchronize()
    ms = (time.perf_counter() - t0) * 1000 / (steps - first)  # a stream has no step boundary: its mean time per step
    if cfg["stages"] - 1 in proc.stages:  # the whole batch's loss: every replica's share (its last stage's group)
        losses = stream_step_losses(pipe.mb_losses, cfg["microbatches"], cfg["lossOver"], proc.group, proc.timeout, who)
        if proc.replica == 0 and proc.tp_rank == 0:
            for step, loss in enumerate(losses, start=first):
                print(f"step {step} loss {loss:.9g} ms {ms:.2f}", flush=True)
    peak = ", ".join(f"stage {s} {n}" for s, n in sorted(updates.peak_versions().items()))
    print(f"rank {proc.rank}: weight versions held at most: {peak}", flush=True)
    tensors = gather(proc, args, {n: p for st in proc.stages.values() for n, p in st.params.items()}, slots=())
    if proc.rank == 0:
        write_trained(proc, args, {n: tensors[n] for stage in cfg["stageParams"] for n, _ in stage}, steps)


def gather(proc, args, mine, slots=None):
    """Replica 0's processes send their stages' weights and optimizer slots (`mine`, by name; with tp their pieces, the
    whole ones from tp rank 0 alone) to rank 0, which gets them all whole (the pieces joined), {name: tensor}; the
    other processes get None. `slots`: the optimizer slots sent beside each weight (default: the optimizer's; none: ())."""
    cfg, mesh, timeout, tp = proc.bundle.cfg, proc.bundle.mesh, proc.timeout, proc.tp
    slots = SLOTS[cfg["optimizer"]["name"]] if slots is None else slots

    def names(s, j, e=0):
        """What tp rank j of stage s sends: (name, shape of its piece), weights and their slots; with ep > 1 (tp = 1)
        the expert weights are ep rows of pieces, and ep rank e > 0 of replica 0 sends its expert pieces only."""
        out = []
        for n, shape in cfg["stageParams"][s]:
            expert = mesh.ep > 1 and is_expert_weight(n)
            if (j == 0 or tp.splits(n)) and (e == 0 or expert):
                piece = [shape[0] // mesh.ep, *shape[1:]] if expert else piece_shape(shape, tp.rule(n), mesh.tp)
                out += [(n, piece)] + [(slot_name(n, k), piece) for k in slots]
        return out

    def joined(name, ps):
        return torch.cat(ps) if mesh.ep > 1 and is_expert_weight(param_of(name)) else tp_join(ps, tp.rule(param_of(name)))

    tag = 1_000_000
    if proc.rank == 0:
        pieces = {}
        for s in range(proc.bundle.copies.per):  # copy 0's stages: with model copies (DualPipe) the others are equal
            for j, e in [(j, 0) for j in range(mesh.tp)] + [(0, e) for e in range(1, mesh.ep)]:
                src = mesh.process(e, cfg["stageToRank"][s], j)
                for name, shape in names(s, j, e):
                    if src == 0:
                        pieces.setdefault(name, []).append(mine[name].detach().cpu())
                        continue
                    buf = torch.empty(shape, device=proc.device)
                    wait(dist.irecv(buf, src, tag=tag + s), timeout, f"rank 0: {name} from rank {src} not received within {args.timeout} s")
                    pieces.setdefault(name, []).append(buf.cpu())
        return {name: joined(name, ps) for name, ps in pieces.items()}
    if proc.replica < mesh.ep:  # replica 0's pipes (with ep = 1, replica 0)
        for s in sorted(s for s in proc.stages if proc.bundle.copies.copy_of(s) == 0):
            for name, _shape in names(s, proc.tp_rank, proc.replica):
                wait(dist.isend(mine[name].detach().contiguous(), 0, tag=tag + s), timeout,
                     f"rank {proc.rank}: {name} not taken by rank 0 within {args.timeout} s")
    return None


def save_checkpoint(proc, flush, args, start, steps_done, losses):
    """Every process takes part (ZeRO gathers the optimizer's shards, ZeRO-3 also the weights; replica 0 sends to
    rank 0); rank 0 writes out/checkpoint-step{steps_done}.safetensors, the page's run-state file (checkpoint.py),
    and gets its RunState (the other processes get None)."""
    cfg, mesh = proc.bundle.cfg, proc.bundle.mesh
    t0 = time.perf_counter()
    slots = flush.optimizer_slots()
    mine = flush.full_weights()  # ZeRO-3: gathered from the owners' chunks (the parameters hold zeros between steps)
    mine.update({slot_name(n, k): v for n, own in slots.items() for k, v in own.items()})
    tensors = gather(proc, args, mine)
    holder = mesh.process(0, cfg["stageToRank"][cfg["stages"] - 1], 0)  # the losses are the last stage's
    if holder != 0 and proc.rank in (0, holder):
        t = torch.tensor(losses, dtype=torch.float64, device=proc.device) if proc.rank == holder else torch.empty(steps_done, dtype=torch.float64, device=proc.device)
        op = dist.isend(t, 0, tag=2_000_000) if proc.rank == holder else dist.irecv(t, holder, tag=2_000_000)
        wait(op, proc.timeout, f"rank {proc.rank}: the losses for the checkpoint were not exchanged within {args.timeout} s")
        losses = t.cpu().tolist()
    if proc.rank != 0:
        return None
    params = {n: tensors[n] for stage in cfg["stageParams"] for n, _ in stage}
    state = RunState(cfg["run"], steps_done, params, cfg["optimizer"]["name"], start.optimizer_steps + steps_done - start.steps_done,
                     {n: {k: tensors[slot_name(n, k)] for k in SLOTS[cfg["optimizer"]["name"]]} for n in params},
                     cfg["lrPerStep"][min(steps_done, len(cfg["lrPerStep"]) - 1)], losses, start.evals)
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, f"checkpoint-step{steps_done}.safetensors")
    write_run_state(path, state)
    print(f"checkpoint {path} ms {(time.perf_counter() - t0) * 1000:.2f}", flush=True)
    return state


def write_trained(proc, args, weights, steps):
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "trained.safetensors")
    write_safetensors(path, weights, {"format": "pt", "producer": "PipeLab train.py", "steps": steps})
    heldout = heldout_loss(proc.bundle.cfg["model"], weights, proc.bundle.path("heldout.safetensors"))
    print(f"trained weights {path}", flush=True)
    print(f"heldout loss {heldout:.9g}", flush=True)


def main(argv=None, here=HERE):
    """The run of the bundle in folder `here` with flags `argv` (default: this file's folder and the command line)."""
    args = parse_args(argv, here)
    bundle = Bundle(here)
    cfg = bundle.cfg
    if args.save_every < 0:
        raise SystemExit(f"--save-every = {args.save_every}: must be 0 (only at the end) or a number of steps >= 1")
    if args.steps is not None and not 1 <= args.steps <= cfg["steps"]:
        raise SystemExit(f"--steps = {args.steps}: must be between 1 and the exported run's {cfg['steps']} steps (its batches are in the bundle)")
    steps = args.steps if args.steps is not None else cfg["steps"]
    stream = cfg.get("update", "flush") != "flush"
    if stream:  # PipeDream, PipeDream-2BW: schedule.csv is the whole run's one stream
        # A PipeDream-2BW stream resumes (the page's checkpoint inside it: stream.py); PipeDream's does not.
        resumable = cfg["update"] == "double-buffered"
        for flag, given in (("--resume", args.resume and not resumable), ("--save-every", args.save_every), ("--steps", args.steps not in (None, cfg["steps"]))):
            if given:
                why = ("its weight stash holds a version per micro-batch in flight, so it resumes nowhere but its start (a "
                       "PipeDream-2BW stream resumes from the page's checkpoint inside it)") if flag == "--resume" else \
                      "so train.py has no step to stop or save it at (the page saves a PipeDream-2BW stream inside it)"
                raise SystemExit(f"{flag}: schedule {cfg['schedule']} runs its {cfg['steps']} steps as one stream of "
                                 f"{cfg['windowMicrobatches']} micro-batches with no flush, {why}; run it without " + flag)
    if bundle.mesh.ep > 1 and (args.resume or args.profile):
        raise SystemExit(f"{'--resume' if args.resume else '--profile'}: this train.py runs ep = {bundle.mesh.ep} without it (each process holds a share of the experts); run it with ep = 1")
    torch.set_num_threads(args.threads)
    proc = Process(bundle, args)
    resumed = read_resume(bundle, args.resume, steps) if args.resume and not args.profile else None
    started = proc.start(args.backend)
    if args.profile:
        from profiling import profile_cluster
        profile_cluster(proc, args)
    elif stream:
        train_stream(proc, args, steps, resumed)
    else:
        train(proc, args, steps, resumed)
    dist.barrier()
    if started:  # a process group the caller started is the caller's to end
        dist.destroy_process_group()


def run(argv=None, here=HERE):
    """main(argv, here) and its exit status: a failed run or a refusal prints `train.py: why` and gives non-zero."""
    try:
        main(argv, here)
    except RunFailed as e:
        print(f"train.py: {e}", file=sys.stderr, flush=True)
        return 1
    except SystemExit as e:
        if e.code not in (None, 0):
            print(f"train.py: {e.code}", file=sys.stderr, flush=True)
        return e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    return 0


if __name__ == "__main__":
    sys.exit(run())
