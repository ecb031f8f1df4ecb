#!/usr/bin/env python3
"""A PipeLab run, exported: the same model, stages, schedule, weights and batches, on torch.distributed.

    torchrun --nproc_per_node=P train.py            # P = the exported ranks (config.json "ranks")
    torchrun --nproc_per_node=P train.py --backend nccl   # one GPU per rank

Each rank builds the stages the schedule puts on it, loads their initial weights from init.safetensors,
and walks its row of schedule.csv step after step: F (forward), B (full backward), I (backward for the
stage input only) and W (backward for the weights only). Column t of the file is time step t on every
rank: after it, the activations and gradients it produced go to the ranks that need them with
point-to-point send/recv, both ends posting them in the same order. Gradients accumulate over the step's micro-batches; at the
end of the step (the flush) each rank steps its own optimizer. The rank holding the last stage prints
the loss of every step. At the end rank 0 gathers the weights, writes trained.safetensors (the page's
names and layouts) and prints the held-out loss.

Needs PyTorch >= 1.13 and the Python standard library only (safetensors is read with struct and json).
"""
import argparse
import datetime
import json
import math
import os
import struct
import sys
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))


# --------------------------------------------------------------------------------------------------
# safetensors: 8 bytes little-endian header length, a JSON header, then the raw little-endian tensors.

DTYPES = {"F32": (torch.float32, 4), "F64": (torch.float64, 8), "I32": (torch.int32, 4), "I64": (torch.int64, 8)}


def read_safetensors(path):
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n].decode("utf-8"))
    base = 8 + n
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        dtype, width = DTYPES[e["dtype"]]
        begin, end = e["data_offsets"]
        count = math.prod(e["shape"])
        if end - begin != count * width:
            raise ValueError(f"{path}: tensor {name}: offsets {begin}..{end} do not hold shape {e['shape']} of {e['dtype']}")
        t = torch.frombuffer(bytearray(raw[base + begin:base + end]), dtype=dtype) if count else torch.empty(0, dtype=dtype)
        out[name] = t.reshape(e["shape"]).clone()
    return out


def write_safetensors(path, tensors, metadata=None):
    names = sorted(tensors)
    header, blobs, offset = {}, [], 0
    if metadata:
        header["__metadata__"] = {k: str(v) for k, v in metadata.items()}
    for name in names:
        t = tensors[name].detach().to("cpu", torch.float32).contiguous()
        blob = struct.pack(f"<{t.numel()}f", *t.flatten().tolist())  # no numpy: torch >= 2 does not require it
        header[name] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(header).encode("utf-8")
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for blob in blobs:
            f.write(blob)


# --------------------------------------------------------------------------------------------------
# Layers: one class per layer kind of the exported model spec (config.json "model"). Parameters carry
# the page's global names, f"{block}.{layer}.{param}", and layouts (a Linear's W is [in, out]).
# A new kind (e.g. the GPT's attention) is one more class in LAYERS.

def weight(shape, device, fill=0.0):
    return torch.full(shape, fill, device=device).requires_grad_(True)


class Linear:
    """y = x @ W + b, W [in, out] as the page stores it."""

    def __init__(self, name, s, device):
        self.W, self.b = weight((s["in"], s["out"]), device), weight((s["out"],), device)
        self.params = {f"{name}.W": self.W, f"{name}.b": self.b}
        self.decay = {f"{name}.W": True, f"{name}.b": False}
        self.out_shape = (s["out"],)

    def __call__(self, x):
        return x @ self.W + self.b


class Embedding:
    """k context indices per row -> the k embeddings side by side, [n, k * dim]."""

    def __init__(self, name, s, device):
        self.table = weight((s["vocab"], s["dim"]), device)
        self.params = {f"{name}.table": self.table}
        self.decay = {f"{name}.table": True}
        self.out_shape = (s["context"] * s["dim"],)

    def __call__(self, idx):
        return self.table[idx.long()].reshape(idx.shape[0], -1)


class LayerNorm:
    def __init__(self, name, s, device):
        self.gamma, self.beta = weight((s["dim"],), device, 1.0), weight((s["dim"],), device)
        self.params = {f"{name}.gamma": self.gamma, f"{name}.beta": self.beta}
        self.decay = {f"{name}.gamma": False, f"{name}.beta": False}
        self.dim, self.eps, self.out_shape = s["dim"], s["eps"], (s["dim"],)

    def __call__(self, x):
        return F.layer_norm(x, (self.dim,), self.gamma, self.beta, self.eps)


ACTIVATIONS = {
    "relu": F.relu,
    "tanh": torch.tanh,
    "gelu": lambda x: F.gelu(x, approximate="tanh"),  # the page's GELU is the tanh form
    "identity": lambda x: x,
}


class Activation:
    def __init__(self, name, s, device):
        self.params, self.decay = {}, {}
        self.fn, self.out_shape = ACTIVATIONS[s["fn"]], (s["dim"],)

    def __call__(self, x):
        return self.fn(x)


# The GPT (makemore's Transformer): its parameters carry makemore's state-dict names and PyTorch's layouts
# (a Linear's weight is [out, in]), so trained.safetensors loads into makemore as it is. Activations
# between its layers and stages are [sequences, blockSize, width].

class TorchLinear:
    """y = x @ W^T (+ b), W [out, in]: torch.nn.Linear's parameters, named {name}.weight / {name}.bias."""

    def __init__(self, name, n_in, n_out, device, bias=True):
        self.weight = weight((n_out, n_in), device)
        self.bias = weight((n_out,), device) if bias else None
        self.params = {f"{name}.weight": self.weight}
        self.decay = {f"{name}.weight": True}
        if bias:
            self.params[f"{name}.bias"] = self.bias
            self.decay[f"{name}.bias"] = False

    def __call__(self, x):
        return F.linear(x, self.weight, self.bias)


class TorchLayerNorm:
    """torch.nn.LayerNorm's parameters, named {name}.weight (1) / {name}.bias (0); eps 1e-5."""

    def __init__(self, name, dim, device):
        self.weight, self.bias, self.dim = weight((dim,), device, 1.0), weight((dim,), device), dim
        self.params = {f"{name}.weight": self.weight, f"{name}.bias": self.bias}
        self.decay = {f"{name}.weight": False, f"{name}.bias": False}

    def __call__(self, x):
        return F.layer_norm(x, (self.dim,), self.weight, self.bias, 1e-5)


def gathered(parts):
    """The parameters and weight-decay flags of several sub-layers, as one layer holds them."""
    return ({k: v for p in parts for k, v in p.params.items()}, {k: v for p in parts for k, v in p.decay.items()})


class GptEmbedding:
    """Token indices [n, T] -> wte[idx] + wpe[0 .. T-1], [n, T, C] (transformer.wte / transformer.wpe)."""

    def __init__(self, name, s, device):
        self.wte = weight((s["vocab"], s["dim"]), device)
        self.wpe = weight((s["blockSize"], s["dim"]), device)
        self.params = {"transformer.wte.weight": self.wte, "transformer.wpe.weight": self.wpe}
        self.decay = {"transformer.wte.weight": True, "transformer.wpe.weight": True}
        self.out_shape = (s["blockSize"], s["dim"])

    def __call__(self, idx):
        pos = torch.arange(idx.shape[1], device=idx.device)
        return self.wte[idx.long()] + self.wpe[pos].unsqueeze(0)


class GptBlock:
    """A pre-LayerNorm block: x + c_proj(causal attention(c_attn(ln_1(x)))), then x + mlp.c_proj(gelu_tanh(mlp.c_fc(ln_2(x))))."""

    def __init__(self, name, s, device):
        p, C = s["prefix"], s["dim"]
        self.heads, self.C, self.T = s["heads"], C, s["blockSize"]
        self.ln_1 = TorchLayerNorm(f"{p}.ln_1", C, device)
        self.c_attn = TorchLinear(f"{p}.attn.c_attn", C, 3 * C, device)
        self.c_proj = TorchLinear(f"{p}.attn.c_proj", C, C, device)
        self.ln_2 = TorchLayerNorm(f"{p}.ln_2", C, device)
        self.c_fc = TorchLinear(f"{p}.mlp.c_fc", C, 4 * C, device)
        self.mlp_proj = TorchLinear(f"{p}.mlp.c_proj", 4 * C, C, device)
        self.params, self.decay = gathered([self.ln_1, self.c_attn, self.c_proj, self.ln_2, self.c_fc, self.mlp_proj])
        self.mask = torch.tril(torch.ones(self.T, self.T, dtype=torch.bool, device=device))
        self.out_shape = (self.T, C)

    def attention(self, x):
        n, T, C = x.shape
        H = self.heads
        q, k, v = self.c_attn(x).split(C, dim=2)
        q, k, v = (t.view(n, T, H, C // H).transpose(1, 2) for t in (q, k, v))  # [n, H, T, D]
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(C // H))
        att = F.softmax(att.masked_fill(~self.mask[:T, :T], float("-inf")), dim=-1)
        return self.c_proj((att @ v).transpose(1, 2).contiguous().view(n, T, C))

    def __call__(self, x):
        x = x + self.attention(self.ln_1(x))
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


class GptHead:
    """transformer.ln_f, then lm_head (no bias): [n, T, C] -> logits [n, T, vocab]."""

    def __init__(self, name, s, device):
        self.ln_f = TorchLayerNorm("transformer.ln_f", s["dim"], device)
        self.lm_head = TorchLinear("lm_head", s["dim"], s["vocab"], device, bias=False)
        self.params, self.decay = gathered([self.ln_f, self.lm_head])
        self.out_shape = (s["blockSize"], s["vocab"])

    def __call__(self, x):
        return self.lm_head(self.ln_f(x))


LAYERS = {
    "linear": Linear, "embedding": Embedding, "layernorm": LayerNorm, "activation": Activation,
    "gpt-embedding": GptEmbedding, "gpt-block": GptBlock, "gpt-head": GptHead,
}


class Stage:
    """A contiguous run of blocks [start, end) of the model; the last stage ends with the loss."""

    def __init__(self, index, model, block_range, device):
        start, end = block_range
        self.index, self.layers, self.is_last = index, [], False
        for block in model["blocks"][start:end]:
            for s in block["layers"]:
                if s["kind"] == "softmax-cross-entropy":
                    self.is_last = True  # the loss itself is applied by the schedule loop
                    continue
                if s["kind"] not in LAYERS:
                    raise SystemExit(f"model layer kind {s['kind']!r} in block {block['name']!r}: this train.py knows {sorted(LAYERS)}")
                self.layers.append(LAYERS[s["kind"]](f"{block['name']}.{s['name']}", s, device))
        self.params = {k: v for layer in self.layers for k, v in layer.params.items()}
        self.decay = {k: v for layer in self.layers for k, v in layer.decay.items()}
        self.out_shape = self.layers[-1].out_shape

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


# --------------------------------------------------------------------------------------------------
# The schedule: schedule.csv, one row per rank, each cell {stage}{F|B|I|W}{mb}; column t is time step t
# on every rank and an empty cell is an idle step (PyTorch's time-aligned layout, as _dump_csv writes it).

def read_schedule(path):
    """Per rank, its actions as (column, stage, op, micro-batch)."""
    import csv

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


# --------------------------------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--backend", choices=["gloo", "nccl"], default="gloo", help="gloo (CPU) or nccl (one CUDA GPU per rank)")
    ap.add_argument("--steps", type=int, default=None, help="steps to run (default: the exported run's, config.json 'steps')")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds a receive may wait before the run fails")
    ap.add_argument("--out", default=os.path.join(HERE, "out"), help="folder for trained.safetensors")
    ap.add_argument("--threads", type=int, default=1, help="CPU threads per rank (torch.set_num_threads)")
    ap.add_argument("--test-stall-rank", type=int, default=-1, help=argparse.SUPPRESS)  # tests: a rank that stops answering
    args = ap.parse_args()
    stall_rank = args.test_stall_rank

    cfg = json.load(open(os.path.join(HERE, "config.json")))
    P, S, M = cfg["ranks"], cfg["stages"], cfg["microbatches"]
    B, steps = cfg["batchSize"], args.steps if args.steps is not None else cfg["steps"]
    if not 1 <= steps <= cfg["steps"]:
        raise SystemExit(f"--steps = {steps}: must be between 1 and the exported run's {cfg['steps']} steps (its batches are in the bundle)")
    torch.set_num_threads(args.threads)

    rank = int(os.environ.get("RANK", "0"))
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world != P:
        raise SystemExit(f"rank {rank}: world size = {world}, but this run was exported for ranks = {P}: "
                         f"start it with torchrun --nproc_per_node={P} (or nodes x procs = {P})")
    if args.backend == "nccl":
        if not torch.cuda.is_available():
            raise SystemExit(f"rank {rank}: --backend nccl needs CUDA, and torch.cuda.is_available() is False; use --backend gloo")
        device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
        torch.cuda.set_device(device)
    else:
        device = torch.device("cpu")
    timeout = datetime.timedelta(seconds=args.timeout)
    dist.init_process_group(args.backend, rank=rank, world_size=world, timeout=timeout)
    dist.barrier()  # every rank is up (and NCCL's communicator exists before the first point-to-point batch)

    model = cfg["model"]
    stage_to_rank = cfg["stageToRank"]
    order = read_schedule(os.path.join(HERE, "schedule.csv"))
    if len(order) != P:
        raise SystemExit(f"rank {rank}: schedule.csv holds {len(order)} rows, but config.json says ranks = {P} (one row per rank)")
    stages = {s: Stage(s, model, cfg["stageBlocks"][s], device) for s in range(S) if stage_to_rank[s] == rank}

    # Initial weights: every parameter of this rank's stages must be in init.safetensors with its shape.
    init = read_safetensors(os.path.join(HERE, "init.safetensors"))
    for st in stages.values():
        for name, p in st.params.items():
            if name not in init or tuple(init[name].shape) != tuple(p.shape):
                got = "missing" if name not in init else f"shape {list(init[name].shape)}"
                raise SystemExit(f"rank {rank}: stage {st.index} weight {name} ({list(p.shape)}) did not load from init.safetensors: {got}")
            with torch.no_grad():
                p.copy_(init[name].to(device, torch.float32))

    data = read_safetensors(os.path.join(HERE, "batches.safetensors"))
    inputs, labels = data["inputs"], data["labels"].long()
    rows = B // M
    in_dtype = torch.float32 if model["input"]["dtype"] == "f32" else torch.int32
    labels_ignored = -1  # a padded target (the GPT's positions past a name's end) takes no loss

    opt = cfg["optimizer"]
    groups = []
    for st in stages.values():
        for decay in (True, False):
            ps = [p for n, p in st.params.items() if st.decay[n] == decay]
            if ps:
                groups.append({"params": ps, "weight_decay": opt["weightDecay"] if decay else 0.0})
    optimizer = None
    if groups:
        if opt["name"] == "adamw":
            optimizer = torch.optim.AdamW(groups, lr=opt["lr"], betas=(opt["beta1"], opt["beta2"]), eps=opt["eps"])
        else:
            optimizer = torch.optim.SGD(groups, lr=opt["lr"], momentum=opt["momentum"])

    # The messages of a step, from the whole schedule (every rank reads every row): what column t sends.
    # An F of stage s sends its output to stage s + 1; a B or I of stage s > 0 sends the input gradient
    # to stage s - 1. Messages between two stages on one rank (e.g. ZB-V) stay in this process.
    last_stage = S - 1
    columns = 1 + max((a[0] for row in order for a in row), default=0)
    sent_at = [[] for _ in range(columns)]
    for r, row in enumerate(order):
        for (c, s, op, mb) in row:
            if op == "F" and s < last_stage:
                sent_at[c].append((r, stage_to_rank[s + 1], "act", s + 1, mb))
            elif op in ("B", "I") and s > 0:
                sent_at[c].append((r, stage_to_rank[s - 1], "grad", s - 1, mb))
    my_action = {c: (s, op, mb) for (c, s, op, mb) in order[rank]}

    def exchange(step, col, outbox, inbox):
        """After column `col`, every message it produced goes from its sender to its receiver. The two ends
        post their point-to-point operations in the same order (sorted), column by column, as NCCL needs."""
        ops, waits = [], []
        for (src, dst, kind, to_stage, mb) in sorted(sent_at[col]):
            key = (kind, to_stage, mb)
            tag = (to_stage * M + mb) * 2 + (kind == "grad")
            if src == dst == rank:
                inbox[key] = outbox.pop(key)
            elif src == rank:
                ops.append(dist.P2POp(dist.isend, outbox.pop(key).contiguous(), dst, tag=tag))
                waits.append(f"rank {rank}: step {step} column {col + 1}: {kind} of micro-batch {mb} for stage {to_stage} not taken by rank {dst} within {args.timeout} s")
            elif dst == rank:
                shape = cfg["stageInShape"][to_stage] if kind == "act" else stages[to_stage].out_shape
                inbox[key] = torch.empty(rows, *shape, device=device)
                ops.append(dist.P2POp(dist.irecv, inbox[key], src, tag=tag))
                waits.append(f"rank {rank}: step {step} column {col + 1}: no {kind} of micro-batch {mb} for stage {to_stage} from rank {src} within {args.timeout} s")
        if ops:
            for work, message in zip(dist.batch_isend_irecv(ops), waits):
                wait(work, timeout, message)

    def take(inbox, key, step, col, action):
        if key not in inbox:
            raise SystemExit(f"rank {rank}: step {step} column {col + 1}: {action} needs the {key[0]} of micro-batch {key[2]} for stage {key[1]}, "
                             "which no earlier column of schedule.csv sends: the file is not time-aligned (every input from another rank "
                             "must sit in an earlier column than its use; pipelab writes it so) or misses an action")
        return inbox.pop(key)

    step_ms = []
    for step in range(steps):
        t0 = time.perf_counter()
        for st in stages.values():
            for p in st.params.values():
                p.grad = None
        held, outbox, inbox, step_loss = {}, {}, {}, 0.0
        for col in range(columns):
            if col in my_action:
                s, op, mb = my_action[col]
                st, action = stages[s], f"{s}{op}{mb}"
                if op == "F":
                    if s == 0:
                        x = inputs[step, mb * rows:(mb + 1) * rows].to(device, in_dtype)
                    else:
                        x = take(inbox, ("act", s, mb), step, col, action).requires_grad_(True)
                    y = st.forward(x)
                    if st.is_last:
                        # Summed over the micro-batch's targets, scaled by 1 / the targets of the WHOLE batch:
                        # the step's micro-batch losses add up to the batch mean, and so do their gradients.
                        target = labels[step, mb * rows:(mb + 1) * rows].to(device).reshape(-1)
                        y = F.cross_entropy(y.reshape(target.shape[0], -1), target, ignore_index=labels_ignored,
                                            reduction="sum") * cfg["lossScalePerStep"][step]
                        step_loss += y.item()
                    else:
                        outbox[("act", s + 1, mb)] = y.detach()
                    held[(s, mb)] = (x, y, None)
                else:
                    x, y, dy = held[(s, mb)]
                    if dy is None and s != last_stage:
                        dy = take(inbox, ("grad", s, mb), step, col, action)
                    needs_input = s > 0  # stage 0 takes data, which has no gradient
                    ps = list(st.params.values())
                    if op == "B":
                        gs = torch.autograd.grad(y, ([x] if needs_input else []) + ps, grad_outputs=dy)
                        if needs_input:
                            outbox[("grad", s - 1, mb)] = gs[0]
                            gs = gs[1:]
                        accumulate(ps, gs)
                    elif op == "I" and needs_input:
                        # I: the gradient for the stage input only, keeping the graph for W
                        # (torch.distributed.pipelining's stage_backward_input).
                        (dx,) = torch.autograd.grad(y, [x], grad_outputs=dy, retain_graph=True)
                        outbox[("grad", s - 1, mb)] = dx
                    elif op == "W":
                        # W: the gradient for the weights, later (stage_backward_weight).
                        accumulate(ps, torch.autograd.grad(y, ps, grad_outputs=dy))
                    if op == "I":
                        held[(s, mb)] = (x, y, dy)
                    else:
                        del held[(s, mb)]
            if stall_rank == rank and step == 0 and col == 0:
                time.sleep(10 * args.timeout)  # tests only: this rank stops answering
            exchange(step, col, outbox, inbox)
        if optimizer is not None:
            for g in optimizer.param_groups:
                g["lr"] = cfg["lrPerStep"][step]
            optimizer.step()
        if device.type == "cuda":
            torch.cuda.synchronize()
        step_ms.append((time.perf_counter() - t0) * 1000)
        if last_stage in stages:
            print(f"step {step} loss {step_loss:.9g} ms {step_ms[-1]:.2f}", flush=True)

    # Gather the trained weights on rank 0 (same names and layouts as the page's weight export).
    mine = {n: p for st in stages.values() for n, p in st.params.items()}
    if rank == 0:
        weights = {n: p.detach().cpu() for n, p in mine.items()}
        for s in range(S):
            r = stage_to_rank[s]
            if r == 0:
                continue
            for name, shape in cfg["stageParams"][s]:
                buf = torch.empty(shape, device=device)
                wait(dist.irecv(buf, r, tag=1_000_000 + s), timeout, f"rank 0: weight {name} from rank {r} not received within {args.timeout} s")
                weights[name] = buf.cpu()
        os.makedirs(args.out, exist_ok=True)
        path = os.path.join(args.out, "trained.safetensors")
        write_safetensors(path, weights, {"format": "pt", "producer": "PipeLab train.py", "steps": steps})
        heldout = heldout_loss(model, cfg, weights)
        print(f"trained weights {path}", flush=True)
        print(f"heldout loss {heldout:.9g}", flush=True)
    else:
        for s in range(S):
            if stage_to_rank[s] != rank:
                continue
            for name, _shape in cfg["stageParams"][s]:
                wait(dist.isend(mine[name].detach().contiguous(), 0, tag=1_000_000 + s), timeout,
                     f"rank {rank}: weight {name} not taken by rank 0 within {args.timeout} s")
    if last_stage in stages and step_ms:
        rest = step_ms[1:] or step_ms
        print(f"mean step ms {sum(rest) / len(rest):.3f} (steps after the first)", flush=True)
    dist.barrier()
    dist.destroy_process_group()


class RunFailed(Exception):
    """A rank cannot go on (a message did not come in time); the text names the rank and the action."""


def wait(work, timeout, message):
    """Waits for a send or receive; past the timeout the run fails with `message` (never a hang)."""
    try:
        done = work.wait(timeout)
    except RuntimeError as e:  # gloo raises on a timeout
        raise RunFailed(f"{message} ({e})") from None
    if done is False:
        raise RunFailed(message)


def accumulate(params, grads):
    """Gradients add up over the step's micro-batches; the optimizer steps once at the flush."""
    for p, g in zip(params, grads):
        p.grad = g if p.grad is None else p.grad + g


def heldout_loss(model, cfg, weights):
    """Mean cross-entropy of the trained model on heldout.safetensors (one stage, on CPU)."""
    whole = Stage(0, model, [0, len(model["blocks"])], torch.device("cpu"))
    with torch.no_grad():
        for n, p in whole.params.items():
            p.copy_(weights[n])
        data = read_safetensors(os.path.join(HERE, "heldout.safetensors"))
        x = data["inputs"] if model["input"]["dtype"] == "i32" else data["inputs"].float()
        target = data["labels"].long().reshape(-1)
        logits = whole.forward(x).reshape(target.shape[0], -1)
        return F.cross_entropy(logits, target, ignore_index=-1).item()  # the mean over targets that take a loss


if __name__ == "__main__":
    try:
        main()
    except RunFailed as e:
        print(f"train.py: {e}", file=sys.stderr, flush=True)
        sys.exit(1)
    except SystemExit as e:
        if e.code not in (None, 0):
            print(f"train.py: {e.code}", file=sys.stderr, flush=True)
        raise
