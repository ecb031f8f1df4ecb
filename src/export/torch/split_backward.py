"""The backward split in two, as the zero-bubble schedules need it (I: the gradient for a stage's input; W: the
gradients for its weights, later), without computing anything twice.

A stage's forward records, on a Tape, the output of every operation that holds weights (a Linear, a LayerNorm, an
Embedding; a GPT block's six sub-layers one by one) with those weights. I asks autograd for the gradient of the
stage input AND of every recorded output in one pass; W then takes each recorded operation alone, from its output's
gradient to its own weights (autograd walks only that operation's nodes). So I + W costs what one full backward
costs, as the zero-bubble paper counts it (its W is the weight gradient of each linear layer).

The naive split (W = autograd.grad(stage output, weights) after I) walks the whole stage's chain of activation
gradients again: for a stage of k layers, W redoes the input gradients of k - 1 of them, ~1.7x the planned time.

The same functions time a block's I and W in `train.py --profile` (profiling.py), so the plan and the run agree.
"""
import torch

_tape = None  # the Tape a forward is recording on, or None


class Tape:
    """The (output, weights) of each weighted operation a forward ran, in order; `with tape:` records."""

    def __init__(self):
        self.ops = []

    def __enter__(self):
        global _tape
        self.outer, _tape = _tape, self
        return self

    def __exit__(self, *exc):
        global _tape
        _tape = self.outer


def recorded(out, weights):
    """Called by every weighted operation on its output: noted on the tape being recorded, returned unchanged."""
    if _tape is not None:
        _tape.ops.append((out, [w for w in weights if w is not None]))
    return out


def backward_input(x, y, dy, tape):
    """I: the gradient for the stage input x (None: x takes no gradient, e.g. token indices) and the gradients of
    every recorded output, from y (the stage output with its gradient dy, or the last stage's loss with dy None).
    Returns (dx or None, the recorded outputs' gradients in tape order)."""
    wanted = ([x] if x is not None else []) + [out for out, _ in tape.ops]
    if not wanted:
        return None, []
    gs = torch.autograd.grad(y, wanted, grad_outputs=dy, retain_graph=True, allow_unused=True)
    return (gs[0] if x is not None else None), list(gs[1:] if x is not None else gs)


def backward_weight(tape, grads):
    """W: each recorded operation's weight gradients from its output's gradient (from backward_input), as
    [(weights, their gradients)]; an output that took no gradient gives zeros (its weights did not reach the loss)."""
    out = []
    for (o, ws), g in zip(tape.ops, grads):
        if g is None:
            out.append((ws, [torch.zeros_like(w) for w in ws]))
        else:
            out.append((ws, list(torch.autograd.grad(o, ws, grad_outputs=g, retain_graph=True))))
    return out
