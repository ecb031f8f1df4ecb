"""Test support: runs checkpoint.py (src/export/torch/) on the jobs of a JSON file and writes what it found.

    python3 checkpoint_probe.py JOBS.json RESULTS.json     (PYTHONPATH holds src/export/torch)

Jobs: {"op": "dump", "path"}: the file read, its weights and optimizer state loaded into fresh torch tensors and a
torch.optim AdamW or SGD (load_state_dict), then read back out of them; {"op": "rewrite", "path", "out", "dtype"}:
the same, then written again from the tensors and the optimizer by write_run_state (producer "PipeLab train.py"),
its configuration first given the fields of "configExtra" (if any);
{"op": "read", "path"}: whether read_run_state takes the file, or the CheckpointError's message.
"""
import json
import math
import sys

import torch

from checkpoint import CheckpointError, load_run_state, read_run_state, run_state_of, slot_name

DTYPE = {"F32": torch.float32, "F64": torch.float64}


def loaded(path, dtype):
    state = read_run_state(path)
    params = {n: torch.zeros(t.shape, dtype=dtype or t.dtype, requires_grad=True) for n, t in state.params.items()}
    c = state.config
    if state.optimizer == "adamw":
        opt = torch.optim.AdamW(list(params.values()), lr=c["lr"], weight_decay=c["weightDecay"])
    else:
        opt = torch.optim.SGD(list(params.values()), lr=c["lr"], momentum=c["momentum"])
    load_run_state(state, params, opt)
    return state, params, opt


def number(x):
    return x if math.isfinite(x) else str(x)


def dump(path):
    state, params, opt = loaded(path, None)
    sd = opt.state_dict()
    index = {i: n for i, n in enumerate(params)}
    out = {"params": {n: p.detach().flatten().tolist() for n, p in params.items()}, "slots": {}, "steps": None,
           "stepsDone": state.steps_done, "losses": [number(x) for x in state.losses], "lrNext": state.lr_next,
           "producer": state.producer, "dtype": {n: str(p.dtype) for n, p in params.items()}}
    for i, st in sd["state"].items():
        for k, v in st.items():
            if k == "step":
                out["steps"] = float(v)
            else:
                out["slots"][slot_name(index[i], k)] = v.flatten().tolist()
    return out


def rewrite(path, out, dtype, extra):
    state, params, opt = loaded(path, DTYPE[dtype])
    again = run_state_of({**state.config, **extra}, params, opt, state.steps_done, state.losses, state.lr_next, state.evals)
    from checkpoint import write_run_state
    write_run_state(out, again)
    return {"written": out}


def main():
    with open(sys.argv[1]) as f:
        jobs = json.load(f)
    results = []
    for job in jobs:
        try:
            if job["op"] == "dump":
                results.append(dump(job["path"]))
            elif job["op"] == "rewrite":
                results.append(rewrite(job["path"], job["out"], job["dtype"], job.get("configExtra", {})))
            else:
                read_run_state(job["path"])
                results.append({"ok": True})
        except CheckpointError as e:
            results.append({"refused": str(e)})
    with open(sys.argv[2], "w") as f:
        json.dump(results, f)


if __name__ == "__main__":
    main()
