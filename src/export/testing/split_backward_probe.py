"""Probe for src/export/split-backward.test.ts (run with PYTHONPATH=src/export/torch, Debian's python3-torch):
for stages of the char-MLP and of the GPT, in float64 on fresh random weights and inputs, the split backward of
split_backward.py (I, then W) against one full backward (autograd.grad of everything at once):

- the same input gradient and weight gradients (largest relative difference printed);
- the matrix products each one runs (aten mm / bmm / addmm, counted in multiply-adds from their shapes by a
  TorchDispatchMode): I + W run exactly those of the full backward (nothing computed twice), and W runs only
  products that make weight gradients (one per weight matrix).
Prints one JSON line per case."""
import json
import math
import sys

import torch
from torch.utils._python_dispatch import TorchDispatchMode

import model
from split_backward import Tape, backward_input, backward_weight

MATMULS = {"aten.mm": lambda a, b: a.shape[0] * a.shape[1] * b.shape[1],
           "aten.bmm": lambda a, b: a.shape[0] * a.shape[1] * a.shape[2] * b.shape[2],
           "aten.addmm": lambda c, a, b: a.shape[0] * a.shape[1] * b.shape[1]}


class MatmulCount(TorchDispatchMode):
    """The multiply-adds and the number of the matrix products run inside `with`."""

    def __init__(self):
        super().__init__()
        self.macs, self.calls = 0, 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = str(func.overloadpacket)
        if name in MATMULS:
            self.macs += MATMULS[name](*args[:3 if name == "aten.addmm" else 2])
            self.calls += 1
        return func(*args, **(kwargs or {}))


def relative(a, b):
    return (a - b).abs().max().item() / max(b.abs().max().item(), 1e-300)


def check(name, spec, x, takes_grad, is_last, target=None):
    torch.manual_seed(hash(name) % 1000)
    stage = model.Stage(0, spec, [0, len(spec["blocks"])], torch.device("cpu"))
    with torch.no_grad():
        for p in stage.params.values():
            p.copy_(torch.randn_like(p) * 0.5)
    params = list(stage.params.values())
    if takes_grad:
        x = x.detach().requires_grad_(True)
    with Tape() as tape:
        y = stage.forward(x)
    if is_last:
        y = torch.nn.functional.cross_entropy(y.reshape(target.shape[0], -1), target, reduction="sum")
        dy = None
    else:
        dy = torch.randn_like(y)
    with MatmulCount() as full_count:
        full = torch.autograd.grad(y, ([x] if takes_grad else []) + params, grad_outputs=dy, retain_graph=True)
    with MatmulCount() as i_count:
        dx, grads = backward_input(x if takes_grad else None, y, dy, tape)
    with MatmulCount() as w_count:
        split = {}
        for ws, gs in backward_weight(tape, grads):
            for w, g in zip(ws, gs):
                split[id(w)] = g if id(w) not in split else split[id(w)] + g
    want_dx, want_w = (full[0], full[1:]) if takes_grad else (None, full)
    diff = max([relative(split[id(p)], g) for p, g in zip(params, want_w)] + ([relative(dx, want_dx)] if takes_grad else []))
    tables = (".table", "wte.weight", "wpe.weight")  # embedding tables: their gradient is a scatter, not a product
    weight_matrices = sum(1 for nm, p in stage.params.items() if p.dim() == 2 and not nm.endswith(tables))
    print(json.dumps({"case": name, "diff": diff, "fullMacs": full_count.macs, "iMacs": i_count.macs, "wMacs": w_count.macs,
                      "wCalls": w_count.calls, "weightMatrices": weight_matrices}), flush=True)


def main():
    torch.set_default_dtype(torch.float64)
    n, k, vocab = 6, 3, 11
    mlp = lambda layers: {"blocks": [{"name": f"b{i}", "layers": l} for i, l in enumerate(layers)]}
    lin = lambda nm, i, o: {"kind": "linear", "name": nm, "in": i, "out": o}
    act = lambda nm, d: {"kind": "activation", "name": nm, "fn": "tanh", "dim": d}
    ln = lambda nm, d: {"kind": "layernorm", "name": nm, "dim": d, "eps": 1e-5}
    idx = torch.randint(0, vocab, (n, k))
    check("char-MLP first stage (embedding, two hidden blocks)",
          mlp([[{"kind": "embedding", "name": "emb", "vocab": vocab, "dim": 4, "context": k}],
               [lin("l", 12, 16), ln("n", 16), act("a", 16)], [lin("l", 16, 16), ln("n", 16), act("a", 16)]]),
          idx, False, False)
    check("char-MLP last stage (two hidden blocks, head)",
          mlp([[lin("l", 16, 16), ln("n", 16), act("a", 16)], [lin("l", 16, 16), ln("n", 16), act("a", 16)], [lin("out", 16, vocab)]]),
          torch.randn(n, 16), True, True, torch.randint(0, vocab, (n,)))
    C, H, T = 8, 2, 5
    blk = lambda i: [{"kind": "gpt-block", "name": "block", "prefix": f"transformer.h.{i}", "dim": C, "heads": H, "blockSize": T}]
    check("GPT middle stage (two blocks)", mlp([blk(0), blk(1)]), torch.randn(n, T, C), True, False)
    check("GPT last stage (a block, the head)",
          mlp([blk(2), [{"kind": "gpt-head", "name": "head", "dim": C, "vocab": vocab, "blockSize": T}]]),
          torch.randn(n, T, C), True, True, torch.randint(0, vocab, (n * T,)))
    check("GPT first stage (embedding, a block)",
          mlp([[{"kind": "gpt-embedding", "name": "emb", "vocab": vocab, "dim": C, "blockSize": T}], blk(0)]),
          torch.randint(0, vocab, (n, T)), False, False)


if __name__ == "__main__":
    main()
    sys.exit(0)
