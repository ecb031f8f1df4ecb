"""The exported run as every process reads it: config.json, schedule.csv and the mesh of processes.

The mesh is numbered as PipeLab's src/schedule/mesh.ts numbers its workers: of world = dp x tp x ranks processes,
global rank g = (replica * ranks + rank) * tp + j: tp innermost, then the pipeline rank, the replica outermost (with
tp = 1, replica g // ranks and pipeline rank g % ranks). Every replica runs the whole schedule (one row of
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
    """dp replicas of a pipeline of `ranks` ranks, each rank's stages split over tp processes;
    process g = (replica * ranks + rank) * tp + j. With experts sharded over ep processes (ep a multiple of tp whose
    g = ep / tp divides dp; src/schedule/mesh.ts expertWorkerOf) the g replicas of an ep group sit side by side:
    process ((replica // g * ranks + rank) * g + replica % g) * tp + j."""

    def __init__(self, dp, ranks, tp=1, ep=1):
        self.dp, self.ranks, self.tp, self.ep, self.world = dp, ranks, tp, ep, dp * tp * ranks
        self.g = max(1, ep // tp)

    def place(self, g):
        """(replica, pipeline rank, tp rank) of global rank g."""
        pipe, j = divmod(g, self.tp)
        block, d = divmod(pipe, self.g)
        outer, rank = divmod(block, self.ranks)
        return outer * self.g + d, rank, j

    def process(self, replica, rank, j):
        return ((replica // self.g * self.ranks + rank) * self.g + replica % self.g) * self.tp + j

    def ep_group(self, replica, rank):
        """The processes sharing replica `replica`'s pipeline rank's experts (tp = 1), in ep order."""
        first = replica // self.g * self.g
        return [self.process(first + i, rank, 0) for i in range(self.g)]

    def group(self, rank, j):
        """The processes holding tp rank j's piece of pipeline rank `rank`'s stages, one per replica, in replica order."""
        return [self.process(d, rank, j) for d in range(self.dp)]

    def tp_group(self, replica, rank):
        """The processes holding replica `replica`'s pipeline rank `rank`, in tp order."""
        return [self.process(replica, rank, j) for j in range(self.tp)]

    def describe(self):
        if self.tp == 1:
            ep = f" (ep = {self.ep} of the replicas share each stage's experts)" if self.ep > 1 else ""
            return f"dp x ranks = {self.dp} x {self.ranks} = {self.world} processes{ep}"
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
    """What this train.py runs with ep > 1 (moe.py's all_to_all_single over each ep group): a mixture-of-experts GPT
    whose experts divide by ep, ep = dp (each replica holds its own share of every stage's experts), tp = 1, ZeRO 0,
    one model copy and a flush; anything else stops every process naming the field, its value and the rule."""
    experts = {s.get("experts") for b in cfg["model"]["blocks"] for s in b["layers"] if s["kind"] == "gpt-moe-block"}
    run = cfg.get("run", {})
    rules = [
        (not experts, "ep", mesh.ep, "needs a mixture-of-experts model (experts > 0)"),
        (any(e % mesh.ep for e in experts), "ep", mesh.ep, f"must divide the experts ({sorted(experts)})"),
        (mesh.ep != mesh.dp, "ep", mesh.ep, f"must equal dp = {mesh.dp} in this train.py (each replica holds its own share of the experts)"),
        (mesh.tp != 1, "tp", mesh.tp, "must be 1 with ep > 1"),
        (run.get("zero", 0) != 0, "zero", run.get("zero", 0), "must be 0 with ep > 1"),
        (copies.n != 1, "schedule", cfg["schedule"], "must run one model copy with ep > 1"),
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
        """The launch must start exactly dp x tp x ranks processes."""
        m = self.mesh
        if world != m.world:
            raise SystemExit(f"rank {rank}: world size = {world}, but this run was exported for {m.describe()}: "
                             f"start it with torchrun --nproc_per_node={m.world} (or nodes x procs = {m.world})")
