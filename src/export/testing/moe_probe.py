"""Probe for src/export/moe-export.test.ts (run with PYTHONPATH=src/export/torch, Debian's python3-torch): the
exported program's mixture-of-experts MLP (moe.py) in float64 on the cases the test wrote (JSON, the file named by
the one argument), for comparison with the page's float64 reference (src/nn/moe/moe-reference.ts, layers/moe-mlp.ts).

- {"route": probs [S][E], "k", "cap"}: moe.route's choices, slots and dropped choices per expert.
- {"mlp": ..., "u", "router", "fc", "proj", "dOut", "k", "capacityFactor", "auxScale"}: the MLP's output, and the
  gradients of sum(out * dOut) + auxScale * aux (the aux term joined by moe.with_aux, as training joins it) with
  respect to u and the three weights; the weighted aux and the dropped choices it counted (moe.take_aux).
Prints one JSON line per case, in order."""
import json
import sys

import torch

from moe import MoeMlp, route, take_aux


def tensor(rows, grad=False):
    return torch.tensor(rows, dtype=torch.float64).requires_grad_(grad)


def mlp_case(c):
    u, dout = tensor(c["u"], True), tensor(c["dOut"])
    S, C = u.shape
    E = len(c["router"])
    spec = {"prefix": "h", "dim": C, "experts": E, "topK": c["k"], "capacityFactor": c["capacityFactor"],
            "auxLossWeight": c["auxScale"], "stepTokens": S}  # the aux weight alpha * S / stepTokens = auxScale
    moe = MoeMlp(spec, torch.device("cpu"), lambda shape, device: torch.zeros(shape, dtype=torch.float64).requires_grad_(True))
    with torch.no_grad():
        for p, name in ((moe.router, "router"), (moe.fc, "fc"), (moe.proj, "proj")):
            p.copy_(tensor(c[name]))
    out = moe(u)
    grads = torch.autograd.grad((out * dout).sum(), [u, moe.router, moe.fc, moe.proj])
    aux, dropped = take_aux()
    flat = lambda t: t.detach().reshape(-1).tolist()  # noqa: E731
    return {"out": flat(out), "du": flat(grads[0]), "router": flat(grads[1]), "fc": flat(grads[2]), "proj": flat(grads[3]),
            "aux": aux, "dropped": dropped}


def main():
    with open(sys.argv[1]) as f:
        cases = json.load(f)
    for c in cases:
        if "route" in c:
            sel, slot, _, dropped = route(tensor(c["route"]), c["k"], c["cap"])
            r = {"sel": sel.reshape(-1).tolist(), "slot": slot.reshape(-1).tolist(), "dropped": dropped.tolist()}
        else:
            r = mlp_case(c)
        print(json.dumps({"case": c["case"], **r}), flush=True)


if __name__ == "__main__":
    main()
