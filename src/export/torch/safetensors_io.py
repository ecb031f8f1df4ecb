"""safetensors without the safetensors package: 8 bytes little-endian header length, a JSON header, then the
raw little-endian tensors. Reads F32, F64, I32 and I64; writes F32 or F64.

parse_safetensors checks what the format requires before it copies a tensor (the header length in range, the
header a UTF-8 JSON object, every entry's dtype, shape and offsets consistent, the tensors packing the data bytes
exactly) and raises SafetensorsError naming what is wrong; checkpoint.py adds the run-state file's rules on top.
"""
import json
import math
import struct

import torch

DTYPES = {"F32": (torch.float32, 4), "F64": (torch.float64, 8), "I32": (torch.int32, 4), "I64": (torch.int64, 8)}
PACK = {torch.float32: ("F32", "f"), torch.float64: ("F64", "d")}
MAX_HEADER_BYTES = 100_000_000  # the safetensors library's own limit (src/util/safetensors.ts too)


class SafetensorsError(ValueError):
    """A file that is not well-formed safetensors; `truncated` when its bytes end before its header says they do."""

    def __init__(self, message, truncated=False):
        super().__init__(message)
        self.truncated = truncated


def header_length(first8, file_bytes):
    """The header length the first 8 bytes give, checked against the file's whole size and MAX_HEADER_BYTES."""
    if len(first8) < 8 or file_bytes < 8:
        raise SafetensorsError(f"{file_bytes} bytes, fewer than the 8 of the header length", truncated=True)
    (n,) = struct.unpack("<Q", first8[:8])
    if n < 2 or n > MAX_HEADER_BYTES:
        raise SafetensorsError(f"header length {n} is out of range (2 to {MAX_HEADER_BYTES} bytes)")
    if 8 + n > file_bytes:
        raise SafetensorsError(f"header length {n} runs past the end of the {file_bytes}-byte file (expected at least {8 + n} bytes)", truncated=True)
    return n


def _entry(name, e, dtypes):
    at = f"tensor {name[:80]!r}"
    if not isinstance(e, dict):
        raise SafetensorsError(f"{at}: its header entry is not an object")
    dtype, shape, offsets = e.get("dtype"), e.get("shape"), e.get("data_offsets")
    if dtype not in dtypes:
        raise SafetensorsError(f"{at}: dtype {str(dtype)[:40]!r} is not one of {', '.join(dtypes)}")
    if not isinstance(shape, list) or len(shape) > 64 or not all(type(d) is int and d >= 0 for d in shape):
        raise SafetensorsError(f"{at}: shape must be a list of at most 64 whole numbers")
    if not isinstance(offsets, list) or len(offsets) != 2 or not all(type(d) is int and d >= 0 for d in offsets) or offsets[0] > offsets[1]:
        raise SafetensorsError(f"{at}: data_offsets must be [begin, end] with 0 <= begin <= end")
    if offsets[1] - offsets[0] != math.prod(shape) * DTYPES[dtype][1]:
        raise SafetensorsError(f"{at}: offsets {offsets} do not hold shape {shape} of {dtype}")
    return dtype, shape, offsets


def parse_safetensors(raw, dtypes=tuple(DTYPES)):
    """(metadata, {name: tensor}, header length) of the bytes `raw`, checked whole; dtypes: those accepted."""
    n = header_length(raw[:8], len(raw))
    try:
        header = json.loads(bytes(raw[8:8 + n]).decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise SafetensorsError(f"the {n}-byte header is not UTF-8 JSON ({str(e)[:80]})") from None
    if not isinstance(header, dict):
        raise SafetensorsError("the header is not a JSON object")
    metadata = header.pop("__metadata__", {})
    if not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values()):
        raise SafetensorsError("__metadata__ is not an object of strings")
    entries = {name: _entry(name, e, dtypes) for name, e in header.items()}
    base, covered = 8 + n, 0
    for name, (_, _, (begin, end)) in sorted(entries.items(), key=lambda kv: tuple(kv[1][2])):
        if begin != covered:
            raise SafetensorsError(f"tensor {name[:80]!r}: begins at {begin}, not at {covered} where the tensor before it ends "
                                   "(the data must be packed without holes or overlaps)")
        covered = end
    if base + covered > len(raw):
        raise SafetensorsError(f"truncated: the header's tensors need {base + covered} bytes, the file has {len(raw)}", truncated=True)
    if base + covered < len(raw):
        raise SafetensorsError(f"{len(raw) - base - covered} bytes follow the last tensor (the file has {len(raw)} bytes; its header accounts for {base + covered})")
    out = {}
    for name, (dtype, shape, (begin, end)) in entries.items():
        t = torch.frombuffer(bytearray(raw[base + begin:base + end]), dtype=DTYPES[dtype][0]) if end > begin else torch.empty(0, dtype=DTYPES[dtype][0])
        out[name] = t.reshape(shape).clone()
    return metadata, out, n


def read_safetensors(path):
    with open(path, "rb") as f:
        raw = f.read()
    try:
        return parse_safetensors(raw)[1]
    except SafetensorsError as e:
        raise SafetensorsError(f"{path}: {e}", e.truncated) from None


def safetensors_bytes(tensors, metadata=None):
    """The file of `tensors` ((name, tensor) pairs, in that order; float32 or float64, kept) and string metadata."""
    header, blobs, offset = {}, [], 0
    if metadata:
        header["__metadata__"] = {k: str(v) for k, v in metadata.items()}
    for name, t in tensors:
        t = t.detach().to("cpu").contiguous()
        if t.dtype not in PACK:
            raise SafetensorsError(f"tensor {name}: dtype {t.dtype} is not float32 or float64")
        dtype, code = PACK[t.dtype]
        blob = struct.pack(f"<{t.numel()}{code}", *t.flatten().tolist())  # no numpy: torch >= 2 does not require it
        header[name] = {"dtype": dtype, "shape": list(t.shape), "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)
    return b"".join([struct.pack("<Q", len(text)), text, *blobs])


def write_safetensors(path, tensors, metadata=None):
    """`tensors` ({name: tensor}) as float32, sorted by name (the page's trained weights)."""
    data = safetensors_bytes([(n, tensors[n].detach().to("cpu", torch.float32)) for n in sorted(tensors)], metadata)
    with open(path, "wb") as f:
        f.write(data)
