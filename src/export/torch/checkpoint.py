"""PipeLab's run-state file, format version 1, read and written as the page's src/run-state/codec.ts does.

One safetensors file holding every parameter under its PyTorch name, the optimizer's state per parameter as
`optimizer.<param>.<slot>` (AdamW: exp_avg, exp_avg_sq; SGD: momentum_buffer), F32 or F64, and in __metadata__:
format "pipelab-run-state", version "1", producer, config (the page's RunConfig), stepsDone, optimizer
{name, steps}, lrNext, data {seed, nextBatch}, losses, evals (each JSON text; non-finite numbers as the strings
"NaN", "Infinity", "-Infinity") and crc32: the CRC-32 of the whole file with its own 8 hex digits read as
"00000000". The page loads what this module writes and this module loads what the page writes.

read_run_state refuses, with a CheckpointError naming what is wrong, a file over 1 GiB (before reading it), a
truncated or damaged one, one that is not a checkpoint, a newer version, and (given the model's parameters) a
checkpoint of another model. load_run_state puts a state into parameters and a torch.optim AdamW or SGD;
run_state_of takes one out of them.

Standard library and torch only.
"""
import json
import math
import os
import re
import zlib

import torch

from safetensors_io import SafetensorsError, header_length, parse_safetensors, safetensors_bytes

FORMAT = "pipelab-run-state"
VERSION = 1
MAX_BYTES = 2 ** 30
SLOTS = {"adamw": ("exp_avg", "exp_avg_sq"), "sgd": ("momentum_buffer",)}
CHECKSUM_KEY = b'"crc32":"'
PLACEHOLDER = b"00000000"
EVAL_KEYS = ("step", "trainLoss", "trainAccuracy", "valLoss", "valAccuracy")
# Configuration fields a checkpoint does not keep (stateConfig in src/run-state/run-state.ts): a test's fault, how
# often the page saves and how a failed run recovers.
NOT_KEPT = ("fault", "checkpointEvery", "recovery")


def state_config(config):
    """The configuration as a checkpoint keeps it."""
    return {k: v for k, v in config.items() if k not in NOT_KEPT}


class CheckpointError(ValueError):
    """A file that is not a sound PipeLab checkpoint (or not the one expected); the message says what is wrong."""


class RunState:
    """A run's state at a step: config (the page's RunConfig, a dict), steps_done, params {name: tensor},
    optimizer name and step count, slots {name: {slot: tensor}}, lr_next, seed, losses, evals and producer; and
    previous {name: tensor}: PipeDream-2BW's weight version before the latest (a checkpoint inside its stream; {}
    otherwise)."""

    def __init__(self, config, steps_done, params, optimizer, optimizer_steps, slots, lr_next, losses, evals=(), producer="PipeLab train.py", previous=None):
        self.config, self.steps_done, self.params = config, steps_done, params
        self.optimizer, self.optimizer_steps, self.slots = optimizer, optimizer_steps, slots
        self.lr_next, self.losses, self.evals, self.producer = lr_next, list(losses), list(evals), producer
        self.previous = previous or {}

    @property
    def seed(self):
        return self.config["seed"]


def slot_name(param, slot):
    return f"optimizer.{param}.{slot}"


def _number_out(x):
    x = float(x)
    return x if math.isfinite(x) else ("NaN" if math.isnan(x) else ("Infinity" if x > 0 else "-Infinity"))


def _number_in(field, v):
    if type(v) in (int, float):
        return float(v)
    if v in ("NaN", "Infinity", "-Infinity"):
        return float(v.replace("Infinity", "inf"))
    raise CheckpointError(f"corrupted checkpoint: {field} = {v!r}: must be a number (or \"NaN\", \"Infinity\", \"-Infinity\")")


def _json(value):
    return json.dumps(value, separators=(",", ":"), allow_nan=False)


def _crc(data, at):
    """The CRC-32 of `data` with its checksum digits (at `at`) read as 00000000, as 8 lowercase hex digits."""
    c = zlib.crc32(data[:at])
    c = zlib.crc32(PLACEHOLDER, c)
    c = zlib.crc32(data[at + 8:], c)
    return f"{c:08x}"


def _checksum_at(data, n):
    first = data.find(CHECKSUM_KEY, 8, 8 + n)
    if first < 0 or first + len(CHECKSUM_KEY) + 8 > 8 + n:
        raise CheckpointError("corrupted checkpoint: its header has no crc32 checksum")
    if data.find(CHECKSUM_KEY, first + 1, 8 + n) >= 0:
        raise CheckpointError("corrupted checkpoint: its header names crc32 more than once")
    return first + len(CHECKSUM_KEY)


def encode_run_state(state):
    """The bytes of `state`'s file: parameters in the order of state.params, then their optimizer slots."""
    slots = SLOTS[state.optimizer]
    if state.optimizer != state.config["optimizer"]:
        raise CheckpointError(f"the optimizer state is {state.optimizer}'s; the configuration's optimizer is {state.config['optimizer']}")
    tensors = list(state.params.items())
    for name, p in state.params.items():
        for s in slots:
            t = state.slots.get(name, {}).get(s)
            if t is None or tuple(t.shape) != tuple(p.shape):
                raise CheckpointError(f"the state's {slot_name(name, s)} is {'missing' if t is None else list(t.shape)}; parameter {name} is {list(p.shape)}")
            tensors.append((slot_name(name, s), t))
    meta = {
        "format": FORMAT, "version": str(VERSION), "producer": state.producer, "config": _json(state_config(state.config)),
        "stepsDone": str(state.steps_done), "optimizer": _json({"name": state.optimizer, "steps": state.optimizer_steps}),
        "lrNext": _json(_number_out(state.lr_next)), "data": _json({"seed": state.seed, "nextBatch": state.steps_done}),
        "losses": _json([_number_out(x) for x in state.losses]),
        "evals": _json([{k: (e[k] if k == "step" else _number_out(e[k])) for k in EVAL_KEYS} for e in state.evals]),
        "crc32": PLACEHOLDER.decode(),
    }
    data = bytearray(safetensors_bytes(tensors, meta))
    at = _checksum_at(data, header_length(data[:8], len(data)))
    data[at:at + 8] = _crc(data, at).encode()
    return bytes(data)


def write_run_state(path, state):
    """Writes `state` to `path` whole or not at all (a temporary file renamed over it)."""
    data = encode_run_state(state)
    tmp = f"{path}.tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def _meta(meta, key):
    if key not in meta:
        raise CheckpointError(f"corrupted checkpoint: __metadata__.{key} is missing")
    try:
        return json.loads(meta[key])
    except ValueError:
        raise CheckpointError(f"corrupted checkpoint: __metadata__.{key} = {meta[key][:40]!r} is not JSON") from None


def _whole(field, v, lo, hi):
    if type(v) is not int or not lo <= v <= hi:
        raise CheckpointError(f"corrupted checkpoint: {field} = {v!r}: must be a whole number from {lo} to {hi}")
    return v


def _envelope(data, meta, n):
    fmt = meta.get("format")
    if fmt != FORMAT:
        what = "without a format in its __metadata__" if fmt is None else f"of format {fmt[:40]!r}"
        raise CheckpointError(f"not a PipeLab checkpoint: a safetensors file {what}; a checkpoint's format is {FORMAT!r} "
                              "(a weights export is not a checkpoint)")
    version = meta.get("version", "missing")
    if not re.fullmatch(r"[0-9]{1,9}", version) or int(version) < 1:
        raise CheckpointError(f"corrupted checkpoint: version = {version[:40]!r}: must be a whole number >= 1")
    if int(version) > VERSION:
        raise CheckpointError(f"checkpoint format version {int(version)} is newer than this train.py reads (version {VERSION}): "
                              "export the run again from a newer PipeLab")
    want = meta.get("crc32", "missing")
    if not re.fullmatch(r"[0-9a-f]{8}", want):
        raise CheckpointError(f"corrupted checkpoint: crc32 = {want[:40]!r}: must be 8 lowercase hex digits")
    got = _crc(data, _checksum_at(data, n))
    if got != want:
        raise CheckpointError(f"corrupted checkpoint: its checksum is {want} but its bytes give {got} (damaged or changed after it was written)")


def _fields(meta):
    config = _meta(meta, "config")
    if not isinstance(config, dict) or not all(k in config for k in ("optimizer", "seed", "steps")):
        raise CheckpointError("corrupted checkpoint: config must be the run's configuration (an object with optimizer, seed and steps)")
    steps_done = _whole("stepsDone", _meta(meta, "stepsDone"), 0, _whole("config.steps", config["steps"], 1, 2 ** 31))
    o = _meta(meta, "optimizer")
    if not isinstance(o, dict) or o.get("name") != config["optimizer"]:
        raise CheckpointError(f"corrupted checkpoint: optimizer = {o!r}: must be {{name, steps}} with the configuration's optimizer, {config['optimizer']!r}")
    d = _meta(meta, "data")
    if d != {"seed": config["seed"], "nextBatch": steps_done}:
        raise CheckpointError(f"corrupted checkpoint: data = {d!r}: must be {{seed: {config['seed']}, nextBatch: {steps_done}}}")
    losses = _meta(meta, "losses")
    if not isinstance(losses, list) or len(losses) != steps_done:
        raise CheckpointError(f"corrupted checkpoint: losses must be a list of {steps_done} losses, one per step done")
    evals = _meta(meta, "evals")
    if not isinstance(evals, list) or len(evals) > steps_done + 1 or not all(isinstance(e, dict) and set(e) == set(EVAL_KEYS) for e in evals):
        raise CheckpointError(f"corrupted checkpoint: evals must be a list of at most {steps_done + 1} evaluations {{{', '.join(EVAL_KEYS)}}}")
    return dict(config=config, steps_done=steps_done, optimizer=o["name"], optimizer_steps=_whole("optimizer.steps", o.get("steps"), 0, 2 ** 53),
                lr_next=_number_in("lrNext", _meta(meta, "lrNext")), losses=[_number_in(f"losses[{i}]", x) for i, x in enumerate(losses)],
                evals=[{k: (e[k] if k == "step" else _number_in(f"evals[{i}].{k}", e[k])) for k in EVAL_KEYS} for i, e in enumerate(evals)],
                producer=meta.get("producer", ""))


def decode_run_state(data):
    """The RunState in the bytes `data`, checked whole; CheckpointError naming what is wrong otherwise."""
    if len(data) > MAX_BYTES:
        raise CheckpointError(f"the file is {len(data)} bytes; a checkpoint may be at most 1 GiB ({MAX_BYTES} bytes): it was not read")
    try:
        meta, tensors, n = parse_safetensors(data, dtypes=("F32", "F64"))
    except SafetensorsError as e:
        raise CheckpointError(f"truncated checkpoint: {e}" if e.truncated else f"not a checkpoint, or a damaged one: {e}") from None
    _envelope(data, meta, n)
    f = _fields(meta)
    slots = SLOTS[f["optimizer"]]
    # PipeDream-2BW's weight version before the latest (a checkpoint inside its stream): train.py runs streams whole,
    # and a synchronous run resumes from the latest weights, so it is checked and kept aside.
    previous = {k[len("previous."):]: t for k, t in tensors.items() if k.startswith("previous.")}
    params = {k: t for k, t in tensors.items() if not k.startswith(("optimizer.", "previous."))}
    for name, t in previous.items():
        if name not in params or t.shape != params[name].shape:
            raise CheckpointError(f"corrupted checkpoint: tensor previous.{name[:80]} is {list(t.shape)}; "
                                  + (f"its parameter is {list(params[name].shape)}" if name in params else "no parameter has that name"))
    state_slots = {}
    for name, p in params.items():
        state_slots[name] = {}
        for s in slots:
            t = tensors.get(slot_name(name, s))
            if t is None or t.shape != p.shape:
                got = "missing" if t is None else list(t.shape)
                raise CheckpointError(f"corrupted checkpoint: tensor {slot_name(name, s)} is {got}; its parameter {name} is {list(p.shape)}")
            state_slots[name][s] = t
    extra = sorted(set(tensors) - set(params) - {slot_name(n, s) for n in params for s in slots} - {f"previous.{n}" for n in previous})
    if extra:
        raise CheckpointError(f"corrupted checkpoint: tensor {extra[0][:80]} is neither a parameter nor {f['optimizer']}'s state of one")
    return RunState(params=params, slots=state_slots, previous=previous, **f)


def read_run_state(path):
    """The RunState of the file `path`: refused by its size alone past 1 GiB, then by its first 8 bytes, before it is read whole."""
    size = os.path.getsize(path)
    if size > MAX_BYTES:
        raise CheckpointError(f"{path}: the file is {size} bytes; a checkpoint may be at most 1 GiB ({MAX_BYTES} bytes): it was not read")
    try:
        with open(path, "rb") as f:
            header_length(f.read(8), size)
            f.seek(0)
            data = f.read()
        return decode_run_state(data)
    except SafetensorsError as e:
        raise CheckpointError(f"{path}: {'truncated checkpoint' if e.truncated else 'not a checkpoint'}: {e}") from None
    except CheckpointError as e:
        raise CheckpointError(f"{path}: {e}") from None


def check_run(state, config, shapes, ignore=()):
    """That `state` is a checkpoint of the run `config` (the page's RunConfig) whose model has `shapes`
    ({name: shape}): the first mismatching parameter, else configuration field (other than those in `ignore`),
    is named with both values."""
    for name in [*shapes, *sorted(set(state.params) - set(shapes))]:
        have = list(state.params[name].shape) if name in state.params else None
        want = list(shapes[name]) if name in shapes else None
        if have != want:
            what = (f"({want} in this run's model) is not in the checkpoint" if have is None else
                    f"({have} in the checkpoint) is not a parameter of this run's model" if want is None else
                    f"is {have} in the checkpoint, {want} in this run's model")
            raise CheckpointError(f"a checkpoint of another model: parameter {name} {what}")
    for key in sorted(set(config) | set(state.config)):
        if key in ignore or key in NOT_KEPT or _json(config.get(key)) == _json(state.config.get(key)):
            continue
        raise CheckpointError(f"a checkpoint of another configuration: config.{key} = {_json(state.config.get(key))} in the checkpoint, "
                              f"{_json(config.get(key))} in this run")


def _kind(optimizer):
    if isinstance(optimizer, torch.optim.AdamW):
        return "adamw"
    if isinstance(optimizer, torch.optim.SGD):
        return "sgd"
    raise CheckpointError(f"{type(optimizer).__name__} is neither torch.optim.AdamW nor torch.optim.SGD")


def optimizer_state_dict(optimizer, kind, steps, slots_of):
    """A state_dict for `optimizer` (torch.optim.AdamW or SGD) that optimizer.load_state_dict takes: `slots_of`
    maps each of its tensors to its slots ({slot: values}), `steps` is the step count (AdamW's bias correction)."""
    if _kind(optimizer) != kind:
        raise CheckpointError(f"the checkpoint holds {kind}'s state; this optimizer is {_kind(optimizer)}")
    sd = optimizer.state_dict()
    out = {}
    if steps > 0:  # before the first step torch creates the state itself
        for i, p in enumerate(p for g in optimizer.param_groups for p in g["params"]):
            out[i] = {s: slots_of[p][s].reshape(p.shape).clone() for s in SLOTS[kind]}
            if kind == "adamw":
                out[i]["step"] = torch.tensor(float(steps))
    return {"state": out, "param_groups": sd["param_groups"]}


def load_run_state(state, params, optimizer=None):
    """Copies the checkpoint's weights into `params` ({name: tensor}, each name in the file) and, given one, its
    optimizer state into `optimizer` (a torch.optim AdamW or SGD over tensors of `params`)."""
    for name, p in params.items():
        if name not in state.params:
            raise CheckpointError(f"the checkpoint has no parameter {name}")
        if state.params[name].shape != p.shape:
            raise CheckpointError(f"the checkpoint's {name} is {list(state.params[name].shape)}; the model's is {list(p.shape)}")
    with torch.no_grad():
        for name, p in params.items():
            p.copy_(state.params[name])
    if optimizer is not None:
        slots_of = {p: state.slots[n] for n, p in params.items()}
        optimizer.load_state_dict(optimizer_state_dict(optimizer, state.optimizer, state.optimizer_steps, slots_of))


def optimizer_slots(optimizer, params):
    """(step count, {name: {slot: tensor}}) of `optimizer` over `params` ({name: tensor}); zeros before its first step."""
    kind = _kind(optimizer)
    steps, out = 0, {}
    for name, p in params.items():
        st = optimizer.state.get(p, {})
        out[name] = {s: (st[s].detach().clone() if st.get(s) is not None else torch.zeros_like(p)) for s in SLOTS[kind]}
        if "step" in st:
            steps = int(float(st["step"]))
    return steps, out


def run_state_of(config, params, optimizer, steps_done, losses, lr_next, evals=(), producer="PipeLab train.py", optimizer_steps=None):
    """The RunState of a run of `config` (the page's RunConfig) after `steps_done` steps: `params` ({name: tensor},
    the model's weights in the page's order) and `optimizer`'s state over them."""
    steps, slots = optimizer_slots(optimizer, params)
    if optimizer_steps is None:
        optimizer_steps = steps if _kind(optimizer) == "adamw" else steps_done
    return RunState(config, steps_done, {n: p.detach().clone() for n, p in params.items()}, _kind(optimizer), optimizer_steps,
                    slots, lr_next, losses, evals, producer)
