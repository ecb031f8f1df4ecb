"""The model of an exported run, built from config.json's "model" (blocks of layers): one class per layer kind,
a Stage (a contiguous run of blocks) and the held-out loss of the whole model."""
import math

import torch
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

from moe import MoeMlp
from safetensors_io import read_safetensors
from split_backward import recorded
from tensor_parallel import WHOLE


# Layers: one class per layer kind of the exported model spec (config.json "model"). Parameters carry
# the page's global names, f"{block}.{layer}.{param}", and layouts (a Linear's W is [in, out]).
# A new kind is one more class in LAYERS. Each takes `tp` (tensor_parallel.TensorParallel): a layer whose weights
# it splits holds this process's piece of them and sums or gathers over the tp group; WHOLE holds every layer whole.

def weight(shape, device, fill=0.0):
    return torch.full(shape, fill, device=device).requires_grad_(True)


class Linear:
    """y = x @ W + b, W [in, out] as the page stores it. Split by tp (an MLP's hidden linear): column-parallel,
    this process's output columns of W and b, the input's gradient summed over the group (f) and the output's
    columns gathered (its gradient's own columns taken back)."""

    def __init__(self, name, s, device, tp=WHOLE):
        self.tp = tp if tp.splits(f"{name}.W") else WHOLE
        self.W = weight(self.tp.shape(f"{name}.W", (s["in"], s["out"])), device)
        self.b = weight(self.tp.shape(f"{name}.b", (s["out"],)), device)
        self.params = {f"{name}.W": self.W, f"{name}.b": self.b}
        self.decay = {f"{name}.W": True, f"{name}.b": False}
        self.out_shape = (s["out"],)

    def __call__(self, x):
        return self.tp.gather(recorded(self.tp.copy(x) @ self.W + self.b, [self.W, self.b]))


class Embedding:
    """k context indices per row -> the k embeddings side by side, [n, k * dim]."""

    def __init__(self, name, s, device, tp=WHOLE):
        self.table = weight((s["vocab"], s["dim"]), device)
        self.params = {f"{name}.table": self.table}
        self.decay = {f"{name}.table": True}
        self.out_shape = (s["context"] * s["dim"],)

    def __call__(self, idx):
        return recorded(self.table[idx.long()].reshape(idx.shape[0], -1), [self.table])


class LayerNorm:
    def __init__(self, name, s, device, tp=WHOLE):
        self.gamma, self.beta = weight((s["dim"],), device, 1.0), weight((s["dim"],), device)
        self.params = {f"{name}.gamma": self.gamma, f"{name}.beta": self.beta}
        self.decay = {f"{name}.gamma": False, f"{name}.beta": False}
        self.dim, self.eps, self.out_shape = s["dim"], s["eps"], (s["dim"],)

    def __call__(self, x):
        return recorded(F.layer_norm(x, (self.dim,), self.gamma, self.beta, self.eps), [self.gamma, self.beta])


ACTIVATIONS = {
    "relu": F.relu,
    "tanh": torch.tanh,
    "gelu": lambda x: F.gelu(x, approximate="tanh"),  # the page's GELU is the tanh form
    "identity": lambda x: x,
}


class Activation:
    def __init__(self, name, s, device, tp=WHOLE):
        self.params, self.decay = {}, {}
        self.fn, self.out_shape = ACTIVATIONS[s["fn"]], (s["dim"],)

    def __call__(self, x):
        return self.fn(x)


# The GPT (makemore's Transformer): its parameters carry makemore's state-dict names and PyTorch's layouts
# (a Linear's weight is [out, in]), so trained.safetensors loads into makemore as it is. Activations
# between its layers and stages are [sequences, blockSize, width].

class TorchLinear:
    """y = x @ W^T (+ b), W [out, in]: torch.nn.Linear's parameters, named {name}.weight / {name}.bias.

    Split by tp as tpParams says: rows of W (column-parallel: this process's output features and their bias; its
    input's gradient summed over the group, f) or columns of W (row-parallel: its input features; the partial
    products summed over the group, g, then the whole bias added once)."""

    def __init__(self, name, n_in, n_out, device, bias=True, tp=WHOLE):
        rule = tp.rule(f"{name}.weight")
        self.tp, self.split = tp, None if rule is None else ("column" if rule["kind"] == "rows" else "row")
        self.weight = weight(tp.shape(f"{name}.weight", (n_out, n_in)), device)
        self.bias = weight(tp.shape(f"{name}.bias", (n_out,)), device) if bias else None
        self.params = {f"{name}.weight": self.weight}
        self.decay = {f"{name}.weight": True}
        if bias:
            self.params[f"{name}.bias"] = self.bias
            self.decay[f"{name}.bias"] = False

    def __call__(self, x):
        # With sequence parallelism x and the row-parallel output are this process's token rows (tensor_parallel.py).
        if self.split == "row":
            y = self.tp.reduce_scatter_rows(recorded(F.linear(x, self.weight), [self.weight]))
            # The whole bias added to this process's rows: its gradient over them is summed over the group.
            return y if self.bias is None else recorded(y + self.tp.summed_grad(self.bias), [self.bias])
        if self.split == "column":
            x = self.tp.gather_rows(x) if self.tp.sequence_parallel else self.tp.copy(x)
        return recorded(F.linear(x, self.weight, self.bias), [self.weight, self.bias])


class TorchLayerNorm:
    """torch.nn.LayerNorm's parameters, named {name}.weight (1) / {name}.bias (0); eps 1e-5. Given a tp with
    sequence parallelism (a GPT block's), its input is this process's token rows and its weights' gradients are
    summed over the group."""

    def __init__(self, name, dim, device, tp=WHOLE):
        self.weight, self.bias, self.dim, self.tp = weight((dim,), device, 1.0), weight((dim,), device), dim, tp
        self.params = {f"{name}.weight": self.weight, f"{name}.bias": self.bias}
        self.decay = {f"{name}.weight": False, f"{name}.bias": False}

    def __call__(self, x):
        w, b = self.tp.summed_grad(self.weight), self.tp.summed_grad(self.bias)
        return recorded(F.layer_norm(x, (self.dim,), w, b, 1e-5), [self.weight, self.bias])


def gathered(parts):
    """The parameters and weight-decay flags of several sub-layers, as one layer holds them."""
    return ({k: v for p in parts for k, v in p.params.items()}, {k: v for p in parts for k, v in p.decay.items()})


class GptEmbedding:
    """Token indices [n, T] -> wte[idx] + wpe[0 .. T-1], [n, T, C] (transformer.wte / transformer.wpe)."""

    def __init__(self, name, s, device, tp=WHOLE):
        self.wte = weight((s["vocab"], s["dim"]), device)
        self.wpe = weight((s["blockSize"], s["dim"]), device)
        self.params = {"transformer.wte.weight": self.wte, "transformer.wpe.weight": self.wpe}
        self.decay = {"transformer.wte.weight": True, "transformer.wpe.weight": True}
        self.out_shape = (s["blockSize"], s["dim"])
        self.tp = tp

    def __call__(self, idx):
        pos = torch.arange(idx.shape[1], device=idx.device)
        y = recorded(self.wte[idx.long()] + self.wpe[pos].unsqueeze(0), [self.wte, self.wpe])
        # Sequence parallelism: this process's block of the token rows goes on.
        return self.tp.own_rows(y.reshape(-1, y.shape[-1])) if self.tp.sequence_parallel else y


class GptBlock:
    """A pre-LayerNorm block: x + c_proj(causal attention(c_attn(ln_1(x)))), then x + mlp.c_proj(gelu_tanh(mlp.c_fc(ln_2(x)))).
    Split by tp (Megatron): this process's heads of c_attn (their q, k and v rows) and of c_proj's input columns, its
    share of mlp.c_fc's rows and of mlp.c_proj's columns; one sum over the group after each c_proj.
    With s["recomputeAttention"] (the run's selective recomputation) the attention's core (scores, softmax, the
    attention over the values) keeps nothing for the backward, which runs it again from q, k and v
    (torch.utils.checkpoint); it holds no weights and no collective, so the split backward and tp are unchanged."""

    def __init__(self, name, s, device, tp=WHOLE):
        p, C = s["prefix"], s["dim"]
        t = tp.size if tp.splits(f"{p}.attn.c_attn.weight") else 1
        self.heads, self.C, self.T = s["heads"] // t, C // t, s["blockSize"]  # this process's heads and their width
        sp = tp if tp.sequence_parallel else WHOLE
        self.ln_1 = TorchLayerNorm(f"{p}.ln_1", C, device, sp)
        self.c_attn = TorchLinear(f"{p}.attn.c_attn", C, 3 * C, device, tp=tp)
        self.c_proj = TorchLinear(f"{p}.attn.c_proj", C, C, device, tp=tp)
        self.ln_2 = TorchLayerNorm(f"{p}.ln_2", C, device, sp)
        self.params, self.decay = gathered([self.ln_1, self.c_attn, self.c_proj, self.ln_2, *self.build_mlp(s, device, tp)])
        self.mask = torch.tril(torch.ones(self.T, self.T, dtype=torch.bool, device=device))
        self.out_shape = (self.T, C)
        self.recompute_core = bool(s.get("recomputeAttention", False))

    def build_mlp(self, s, device, tp):
        """The MLP's sub-layers (mlp.c_fc, mlp.c_proj), held by the block."""
        p, C = s["prefix"], s["dim"]
        self.c_fc = TorchLinear(f"{p}.mlp.c_fc", C, 4 * C, device, tp=tp)
        self.mlp_proj = TorchLinear(f"{p}.mlp.c_proj", 4 * C, C, device, tp=tp)
        return [self.c_fc, self.mlp_proj]

    def mlp(self, u):
        return self.mlp_proj(F.gelu(self.c_fc(u), approximate="tanh"))

    def core(self, q, k, v):
        """The attention's core: [n, H, T, D] q, k, v -> softmax(causal(q k^T / sqrt(D))) v."""
        T = q.shape[2]
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(q.shape[-1]))
        att = F.softmax(att.masked_fill(~self.mask[:T, :T], float("-inf")), dim=-1)
        return att @ v

    def attention(self, x):
        C, H, T = self.C, self.heads, self.T
        qkv = self.c_attn(x)  # [n, T, 3C/t]; with sequence parallelism [n*T, 3C/t], its rows gathered
        n = qkv.shape[0] // T if qkv.dim() == 2 else qkv.shape[0]
        q, k, v = qkv.view(n, T, 3 * C).split(C, dim=2)
        q, k, v = (t.view(n, T, H, C // H).transpose(1, 2) for t in (q, k, v))  # [n, H, T, D]
        y = checkpoint(self.core, q, k, v, use_reentrant=False) if self.recompute_core else self.core(q, k, v)
        y = y.transpose(1, 2).contiguous()
        return self.c_proj(y.view(n * T, C) if qkv.dim() == 2 else y.view(n, T, C))

    def __call__(self, x):
        x = x + self.attention(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GptMoeBlock(GptBlock):
    """A GPT block whose MLP is a mixture of experts (moe.py: router, top-k routing within each expert's capacity,
    the experts, the combine, the aux loss), the group its micro-batch's tokens: x + attn(ln_1(x)), then
    x + moe(ln_2(x)), a token dropped by an expert passing on through the residual alone. One process holds every
    expert (tp = 1: the page splits no MoE block)."""

    def build_mlp(self, s, device, tp):
        self.moe = MoeMlp(s, device, weight, s.get("expertParallel"))
        return [self.moe]

    def mlp(self, u):
        return self.moe(u)


class GptHead:
    """transformer.ln_f, then lm_head (no bias): [n, T, C] -> logits [n, T, vocab]. With sequence parallelism its
    input is this process's token rows [n*T/t, C], gathered first: every process computes the whole logits."""

    def __init__(self, name, s, device, tp=WHOLE):
        self.ln_f = TorchLayerNorm("transformer.ln_f", s["dim"], device)
        self.lm_head = TorchLinear("lm_head", s["dim"], s["vocab"], device, bias=False)
        self.params, self.decay = gathered([self.ln_f, self.lm_head])
        self.out_shape = (s["blockSize"], s["vocab"])
        self.tp = tp

    def __call__(self, x):
        if self.tp.sequence_parallel:
            x = self.tp.gather_rows(x, whole=True)
        return self.lm_head(self.ln_f(x))


LAYERS = {
    "linear": Linear, "embedding": Embedding, "layernorm": LayerNorm, "activation": Activation,
    "gpt-embedding": GptEmbedding, "gpt-block": GptBlock, "gpt-moe-block": GptMoeBlock, "gpt-head": GptHead,
}


def param_slots(layer):
    """Where a layer keeps each of its parameters: name -> (object, attribute), its sub-layers' included."""
    names = {id(t): n for n, t in layer.params.items()}
    out = {}

    def walk(obj):
        for attr, v in vars(obj).items():
            if isinstance(v, torch.Tensor):
                if id(v) in names:
                    out[names[id(v)]] = (obj, attr)
            elif isinstance(getattr(v, "params", None), dict):
                walk(v)

    walk(layer)
    return out


class Stage:
    """A contiguous run of blocks [start, end) of the model; the last stage ends with the loss. `recompute` (the run's,
    recompute_mode): "full", the stage's forward runs under torch.utils.checkpoint, keeping its input alone, and its
    backward runs it again (with the weights bound then: pipeline.py binds a stream's micro-batch's version again
    before its backward); "selective", every GPT block recomputes its attention's core (GptBlock); None, neither."""

    def __init__(self, index, model, block_range, device, tp=WHOLE, recompute=None, ep=None):
        start, end = block_range
        self.index, self.layers, self.is_last, self.recompute = index, [], False, recompute
        for block in model["blocks"][start:end]:
            for s in block["layers"]:
                if s["kind"] == "softmax-cross-entropy":
                    self.is_last = True  # the loss itself is applied by the schedule loop
                    continue
                if s["kind"] not in LAYERS:
                    raise SystemExit(f"model layer kind {s['kind']!r} in block {block['name']!r}: this train.py knows {sorted(LAYERS)}")
                if recompute == "selective" and s["kind"] == "gpt-block":
                    s = dict(s, recomputeAttention=True)
                if ep is not None and s["kind"] == "gpt-moe-block":
                    s = dict(s, expertParallel=ep)  # this process's share of the experts (moe.ExpertParallel)
                self.layers.append(LAYERS[s["kind"]](f"{block['name']}.{s['name']}", s, device, tp))
        self.params = {k: v for layer in self.layers for k, v in layer.params.items()}
        self.decay = {k: v for layer in self.layers for k, v in layer.decay.items()}
        self.out_shape = self.layers[-1].out_shape
        self.slots = {name: slot for layer in self.layers for name, slot in param_slots(layer).items()}
        if set(self.slots) != set(self.params):
            raise SystemExit(f"stage {index}: parameters {sorted(set(self.params) - set(self.slots))} are not held by any layer attribute")

    def bind(self, tensors):
        """Makes the layers compute with `tensors` (name -> tensor, every parameter of the stage) instead of the
        parameters they hold (stream.py's weight versions); `params` keeps the live parameters."""
        for name, (owner, attr) in self.slots.items():
            setattr(owner, attr, tensors[name])

    def forward(self, x):
        if self.recompute == "full" and torch.is_grad_enabled():
            return checkpoint(self.run_layers, x, use_reentrant=False)
        return self.run_layers(x)

    def run_layers(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


def microbatch_loss(logits, target, scale):
    """The cross-entropy summed over the micro-batch's targets that take a loss, times `scale` (1 / the targets of
    the WHOLE step's batch): a step's micro-batch losses add up to the batch mean, and so do their gradients."""
    return F.cross_entropy(logits.reshape(target.shape[0], -1), target, ignore_index=-1, reduction="sum") * scale

def build_stages(cfg, rank, device, tp=WHOLE, ep=None):
    """The stages the schedule puts on pipeline rank `rank`, by stage index (with tp: this process's pieces; with ep,
    a moe.ExpertParallel: its share of the experts)."""
    mode = recompute_mode(cfg)
    return {s: Stage(s, cfg["model"], cfg["stageBlocks"][s], device, tp, mode, ep) for s in range(cfg["stages"]) if cfg["stageToRank"][s] == rank}


def recompute_mode(cfg):
    """The run's recomputation: "full" (run.recompute), "selective" (run.recomputeAttention, absent in bundles from
    before it; full recomputation covers it), or None."""
    run = cfg["run"]
    return "full" if run.get("recompute") else "selective" if run.get("recomputeAttention") else None


def load_weights(stages, init, who):
    """Copies every parameter of `stages` from `init` (name -> tensor); a missing or misshapen one stops the run."""
    for st in stages.values():
        for name, p in st.params.items():
            if name not in init or tuple(init[name].shape) != tuple(p.shape):
                got = "missing" if name not in init else f"shape {list(init[name].shape)}"
                raise SystemExit(f"{who}: stage {st.index} weight {name} ({list(p.shape)}) did not load from init.safetensors: {got}")
            with torch.no_grad():
                p.copy_(init[name].to(p.device, torch.float32))


def heldout_loss(model, weights, path):
    """Mean cross-entropy of the trained model on the held-out split at `path` (one stage, on CPU)."""
    whole = Stage(0, model, [0, len(model["blocks"])], torch.device("cpu"))
    with torch.no_grad():
        for n, p in whole.params.items():
            p.copy_(weights[n])
        data = read_safetensors(path)
        x = data["inputs"] if model["input"]["dtype"] == "i32" else data["inputs"].float()
        target = data["labels"].long().reshape(-1)
        logits = whole.forward(x).reshape(target.shape[0], -1)
        return F.cross_entropy(logits, target, ignore_index=-1).item()  # the mean over targets that take a loss
