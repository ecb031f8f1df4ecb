"""safetensors without the safetensors package: 8 bytes little-endian header length, a JSON header, then the
raw little-endian tensors. Reads F32, F64, I32 and I64; writes F32 (the page's weights)."""
import json
import math
import struct

import torch

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
