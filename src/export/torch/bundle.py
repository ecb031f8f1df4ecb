"""The exported run as every process reads it: config.json, schedule.csv and the mesh of processes.

The mesh is numbered as PipeLab's src/schedule/mesh.ts numbers its workers: of world = dp x ranks x ep x tp
processes, global rank g = ((replica * ranks + rank) * ep + e) * tp + j: tp innermost, then ep, then the pipeline
rank, the replica outermost (with ep = tp = 1, replica g // ranks and pipeline rank g % ranks). With expert
parallelism (ep > 1) the ep processes of one (replica, pipeline rank) each take their slice of every micro-batch's
sequences (data.py) and share its experts (moe.py); below, a "replica" of the program is one of the dp x ep copies
of the pipeline (Mesh). Every replica runs the whole schedule (one row of
schedule.csv per pipeline rank) on its own rows of each step's batch; the tp processes of one (replica, pipeline
rank) hold its stages split (tensor_parallel.py) and form its tp group; the dp processes that hold one (pipeline
rank, tp rank) (every replica's copy of that piece of its stages) form their data-parallel group.

A schedule with model copies (DualPipe: config.json "copies" = 2; src/schedule/copies.ts) numbers copy c's stage k
of the model as stage c * (stages / copies) + k; each copy is a whole model (its first stage reads the data, its last
computes the loss) and its copies of a stage hold the same blocks and weight names (Copies below).

Everything here is checked before any process group starts: a bad launch or a bad bundle stops every process
with the same message, instead of leaving some of them waiting for the others.
"""
import csv
import json
import os


class Mesh:
    """dp replicas of a pipeline of `ranks` ranks, each rank's stages held by ep expert-parallel processes of tp
    tensor-parallel processes each: world = dp x ranks x ep x tp, process g = ((d * ranks + rank) * ep + e) * tp + j
    (src/schedule/mesh.ts workerOf: tp innermost, then ep, then pp, dp outermost).

    The program numbers the dp x ep copies of the pipeline that the mesh holds ("pipes", what train.py calls a
    replica): pipe p is replica d = p // ep, ep rank e = p % ep. Every pipe runs the whole schedule; with ep = 1 a
    pipe is a replica. `dp` below is the number of pipes (the processes a dense gradient is summed over), `replicas`
    the run's dp."""

    def __init__(self, dp, ranks, tp=1, ep=1):
        self.replicas, self.ranks, self.tp, self.ep = dp, ranks, tp, ep
        self.dp = dp * ep
        self.world = self.dp * tp * ranks

    def place(self, g):
        """(pipe, pipeline rank, tp rank) of global rank g."""
        pipe, j = divmod(g, self.tp)
        block, e = divmod(pipe, self.ep)
        d, rank = divmod(block, self.ranks)
        return d * self.ep + e, rank, j

    def process(self, pipe, rank, j):
        return ((pipe // self.ep * self.ranks + rank) * self.ep + pipe % self.ep) * self.tp + j

    def ep_group(self, pipe, rank):
        """The processes sharing pipe `pipe`'s pipeline rank's experts (tp = 1), in ep order."""
        first = pipe // self.ep * self.ep
        return [self.process(first + i, rank, 0) for i in range(self.ep)]

    def expert_group(self, e, rank):
        """The processes holding ep rank e's experts of pipeline rank `rank` (tp = 1), one per replica."""
        return [self.process(d * self.ep + e, rank, 0) for d in range(self.replicas)]

    def group(self, rank, j):
        """The processes holding tp rank j's piece of pipeline rank `rank`'s stages, one per pipe, in pipe order (with
        ep > 1 the dense weights' gradients are summed over it: the ep group's and the replicas' at once)."""
        return [self.process(d, rank, j) for d in range(self.dp)]

    def tp_group(self, pipe, rank):
        """The processes holding pipe `pipe`'s pipeline rank `rank`, in tp order."""
        return [self.process(pipe, rank, j) for j in range(self.tp)]

    def describe(self):
        if self.ep > 1:
            return f"dp x ranks x ep x tp = {self.replicas} x {self.ranks} x {self.ep} x {self.tp} = {self.world} processes"
        if self.tp == 1:
            return f"dp x ranks = {self.dp} x {self.ranks} = {self.world} processes"
        return f"dp x tp x ranks = {self.dp} x {self.tp} x {self.ranks} = {self.world} processes"


class Copies:
    """The model copies of the schedule (config.json "copies", 1 for every schedule but DualPipe's 2), as
    src/schedule/copies.ts numbers them: copy c's stage k is stage c * per + k (per = stages / copies)."""

    def __init__(self, cfg):
        self.n = cfg.get("copies", 1)
        self.per = cfg["stages"] // self.n
        self.stage_to_rank = cfg["stageToRank"]

    def copy_of(self, s):
        return s // self.per

    def model_stage(self, s):
        return s % self.per

    def first(self, s):
        """Stage s reads the data (the first stage of its copy)."""
        return s % self.per == 0

    def last(self, s):
        """Stage s computes the loss (the last stage of its copy)."""
        return (s + 1) % self.per == 0

    def holders(self, k):
        """The pipeline ranks holding model stage k, one per copy, in copy order."""
        return [self.stage_to_rank[c * self.per + k] for c in range(self.n)]


def read_schedule(path):
    """Per pipeline rank, its actions as (column, stage, op, micro-batch). Each cell is {stage}{F|B|I|W}{mb};
    column t is time step t on every rank and an empty cell is an idle step (PyTorch's time-aligned layout)."""
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    order = []
    for r, row in enumerate(rows):
        actions = []
        for c, cell in enumerate(row):
            cell = cell.strip()
            if not cell:
                continue
            i = next((i for i, ch in enumerate(cell) if ch in "FBIW"), -1)
            if i <= 0 or not cell[:i].isdigit() or not cell[i + 1:].isdigit():
                raise SystemExit(f"schedule.csv row {r + 1} column {c + 1}: {cell!r} is not an action such as 2F0")
            actions.append((c, int(cell[:i]), cell[i], int(cell[i + 1:])))
        order.append(actions)
    return order


def check_expert_parallel(cfg, mesh, copies):
    """What this train.py runs with ep > 1 (moe.py: the router's probabilities all-gathered over each ep group, the
    experts' rows exchanged by all_to_all_single): a mixture-of-experts GPT whose experts divide by ep, each
    micro-batch's sequences dividing by ep, tp = 1, ZeRO 0, one model copy and a flush; anything else stops every
    process naming the field, its value and the rule."""
    experts = {s.get("experts") for b in cfg["model"]["blocks"] for s in b["layers"] if s["kind"] == "gpt-moe-block"}
    run = cfg.get("run", {})
    rows = cfg["batchSize"] // (mesh.replicas * cfg["microbatches"])
    rules = [
        (not experts, "ep", mesh.ep, "needs a mixture-of-experts model (experts > 0)"),
        (any(e % mesh.ep for e in experts), "ep", mesh.ep, f"must divide the experts ({sorted(experts)})"),
        (rows % mesh.ep != 0, "ep", mesh.ep, f"must divide each micro-batch's {rows} sequences (each ep process takes its slice of them)"),
        (mesh.tp != 1, "tp", mesh.tp, "must be 1 with ep > 1 in this train.py"),
        (run.get("zero", 0) != 0, "zero", run.get("zero", 0), "must be 0 with ep > 1 in this train.py"),
        (copies.n != 1, "schedule", cfg["schedule"], "must run one model copy with ep > 1 in this train.py"),
        (cfg.get("update", "flush") != "flush", "schedule", cfg["schedule"], "must flush every step with ep > 1"),
    ]
    for bad, field, value, rule in rules:
        if bad:
            raise SystemExit(f"config.json: {field} = {value}: {rule}")


class Bundle:
    """config.json and schedule.csv of the folder `here`, checked against each other."""

    def __init__(self, here):
        self.here = here
        with open(self.path("config.json")) as f:
            self.cfg = json.load(f)
        self.order = read_schedule(self.path("schedule.csv"))
        self.mesh = Mesh(self.cfg.get("dp", 1), self.cfg["ranks"], self.cfg.get("tp", 1), self.cfg.get("ep", 1))
        self.copies = Copies(self.cfg)
        self.check()

    def path(self, name):
        return os.path.join(self.here, name)

    def check(self):
        cfg, mesh = self.cfg, self.mesh
        if cfg.get("world", mesh.world) != mesh.world:
            raise SystemExit(f"config.json: world = {cfg['world']}, but its {mesh.describe()}")
        if mesh.ep > 1:
            check_expert_parallel(cfg, mesh, self.copies)
        if len(self.order) != mesh.ranks:
            rows = len(self.order)
            its = f"dp x rows = {mesh.dp} x {rows}" if mesh.tp == 1 else f"dp x tp x rows = {mesh.dp} x {mesh.tp} x {rows}"
            if mesh.ep > 1:
                its = f"dp x rows x ep x tp = {mesh.replicas} x {rows} x {mesh.ep} x {mesh.tp}"
            raise SystemExit(f"schedule.csv holds {rows} rows (one per pipeline rank), so {its} = "
                             f"{mesh.dp * mesh.tp * rows} processes, but config.json is for {mesh.describe()}")
        stage_to_rank, copies = cfg["stageToRank"], self.copies
        if copies.n > 1:
            if cfg["stages"] % copies.n != 0:
                raise SystemExit(f"config.json: {cfg['stages']} stages cannot be cut into copies = {copies.n} model copies")
            for k in range(copies.per):
                if len(set(copies.holders(k))) != copies.n:
                    raise SystemExit(f"config.json: model stage {k}'s {copies.n} copies sit on ranks {copies.holders(k)}: "
                                     "each copy of a stage must be on its own rank (their gradients are summed between ranks)")
        for r, row in enumerate(self.order):
            for (c, s, op, mb) in row:
                window = cfg.get("windowMicrobatches", cfg["microbatches"])  # a stream's one window holds every step's
                if s >= cfg["stages"] or stage_to_rank[s] != r or mb >= window:
                    where = f"stage {s} is not on rank {r}" if s < cfg["stages"] else f"the run has {cfg['stages']} stages"
                    if s < cfg["stages"] and stage_to_rank[s] == r:
                        where = f"the run's schedule holds {window} micro-batches"
                    raise SystemExit(f"schedule.csv row {r + 1} column {c + 1}: {s}{op}{mb}: {where} (config.json)")

    def check_world(self, world, rank):
        """The launch must start exactly dp x ranks x ep x tp processes."""
        m = self.mesh
        if world != m.world:
            raise SystemExit(f"rank {rank}: world size = {world}, but this run was exported for {m.describe()}: "
                             f"start it with torchrun --nproc_per_node={m.world} (or nodes x procs = {m.world})")
