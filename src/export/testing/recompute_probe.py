"""Probe for src/export/recompute.test.ts (run with PYTHONPATH=src/export/torch, Debian's python3-torch):
recomputation in the exported program, selective (model.GptBlock with recomputeAttention) and full (model.Stage
under torch.utils.checkpoint), on a stage of two GPT blocks in float64 on fresh random weights and inputs, against
the same stage keeping everything:

- the same input and weight gradients, from one full backward and from the split one (I, then W);
- what autograd saves in the forward (every tensor its hooks pack, by shape): no [n, H, T, T] tensor, the
  attention probabilities or scores, with selective recomputation, and some without; nothing at all with full
  recomputation (the checkpoint keeps the stage input itself);
- how often each block's attention core runs: once in the forward either way, and once more in the backward
  with either recomputation (counted by wrapping GptBlock.core; this Torch's dispatch modes cannot look inside a
  recomputation).
Prints one JSON line."""
import json
import sys

import torch

import model
from split_backward import Tape, backward_input, backward_weight
from split_backward_probe import relative


class CoreCalls:
    """Counts the calls of GptBlock.core (the attention's core), wrapped once for the whole probe."""

    def __init__(self):
        self.n, inner = 0, model.GptBlock.core

        def counted(block, q, k, v):
            self.n += 1
            return inner(block, q, k, v)

        model.GptBlock.core = counted


class SavedShapes:
    """The shapes of the tensors autograd saves inside `with` (outside any checkpoint's own hooks)."""

    def __init__(self):
        self.shapes = []
        self.hooks = torch.autograd.graph.saved_tensors_hooks(self.pack, lambda x: x)

    def pack(self, x):
        self.shapes.append(tuple(x.shape))
        return x

    def __enter__(self):
        self.hooks.__enter__()
        return self

    def __exit__(self, *exc):
        self.hooks.__exit__(*exc)


def run(stage, x, dy, split, calls):
    x = x.detach().requires_grad_(True)
    params = list(stage.params.values())
    with SavedShapes() as saved:  # a forward of its own, never differentiated
        stage.forward(x)
    calls.n = 0
    with Tape() as tape:
        y = stage.forward(x)
    forward_calls, calls.n = calls.n, 0
    if split:
        dx, grads = backward_input(x, y, dy, tape)
        by_id = {}
        for ws, gs in backward_weight(tape, grads):
            for w, g in zip(ws, gs):
                by_id[id(w)] = g if id(w) not in by_id else by_id[id(w)] + g
        gs = [dx] + [by_id[id(p)] for p in params]
    else:
        gs = list(torch.autograd.grad(y, [x] + params, grad_outputs=dy))
    return gs, saved.shapes, forward_calls, calls.n


def main():
    torch.set_default_dtype(torch.float64)
    torch.manual_seed(7)
    n, C, H, T, blocks = 3, 8, 2, 6, 2
    spec = {"blocks": [{"name": f"b{i}", "layers": [{"kind": "gpt-block", "name": "block", "prefix": f"transformer.h.{i}", "dim": C, "heads": H, "blockSize": T}]} for i in range(blocks)]}
    plain = model.Stage(0, spec, [0, blocks], torch.device("cpu"))
    with torch.no_grad():
        for p in plain.params.values():
            p.copy_(torch.randn_like(p) * 0.5)
    x, dy = torch.randn(n, T, C), torch.randn(n, T, C)
    probs = (n, H, T, T)
    out, calls = {"blocks": blocks}, CoreCalls()
    for mode in ("selective", "full"):
        stage = model.Stage(0, spec, [0, blocks], torch.device("cpu"), recompute=mode)
        with torch.no_grad():
            for name, p in plain.params.items():
                stage.params[name].copy_(p)
        for split in (False, True):
            want, saved_plain, fwd_plain, bwd_plain = run(plain, x, dy, split, calls)
            got, saved_mode, fwd_mode, bwd_mode = run(stage, x, dy, split, calls)
            out[f"{mode} {'split' if split else 'full'} backward"] = {
                "diff": max(relative(g, w) for g, w in zip(got, want)),
                "probsSavedPlain": saved_plain.count(probs), "probsSaved": saved_mode.count(probs),
                "savedPlain": len(saved_plain), "saved": len(saved_mode),
                "coreCalls": {"plain": [fwd_plain, bwd_plain], "recomputing": [fwd_mode, bwd_mode]}}
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
    sys.exit(0)
