"""makemore's Transformer (karpathy/makemore, MIT), its module names and layouts
as there, to check that PipeLab's GPT export loads into it.

usage: python3 makemore_gpt.py weights.safetensors tokens.json
tokens.json: {"vocab": V, "block": T, "layers": L, "heads": H, "width": C,
              "idx": [[...T ints], ...], "logits": [flat float64 logits of PipeLab's CPU reference]}
Prints one JSON line: missing and unexpected keys of load_state_dict(strict=False)
and the largest |logits - PipeLab's|. Reads safetensors without the package
(Debian has none): an 8-byte header length, a JSON header, raw little-endian data.
"""
import json
import math
import struct
import sys

import torch
import torch.nn as nn
from torch.nn import functional as F


class NewGELU(nn.Module):
    def forward(self, x):
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


class CausalSelfAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c_attn = nn.Linear(c["width"], 3 * c["width"])
        self.c_proj = nn.Linear(c["width"], c["width"])
        self.register_buffer("bias", torch.tril(torch.ones(c["block"], c["block"])).view(1, 1, c["block"], c["block"]))
        self.n_head = c["heads"]
        self.n_embd = c["width"]

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.ln_1 = nn.LayerNorm(c["width"])
        self.attn = CausalSelfAttention(c)
        self.ln_2 = nn.LayerNorm(c["width"])
        self.mlp = nn.ModuleDict(dict(c_fc=nn.Linear(c["width"], 4 * c["width"]), c_proj=nn.Linear(4 * c["width"], c["width"]), act=NewGELU()))
        m = self.mlp
        self.mlpf = lambda x: m.c_proj(m.act(m.c_fc(x)))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlpf(self.ln_2(x))


class Transformer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(c["vocab"], c["width"]),
            wpe=nn.Embedding(c["block"], c["width"]),
            h=nn.ModuleList([Block(c) for _ in range(c["layers"])]),
            ln_f=nn.LayerNorm(c["width"]),
        ))
        self.lm_head = nn.Linear(c["width"], c["vocab"], bias=False)

    def forward(self, idx):
        b, t = idx.size()
        pos = torch.arange(0, t, dtype=torch.long).unsqueeze(0)
        x = self.transformer.wte(idx) + self.transformer.wpe(pos)
        for block in self.transformer.h:
            x = block(x)
        return self.lm_head(self.transformer.ln_f(x))


def read_safetensors(path):
    raw = open(path, "rb").read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    base = 8 + n
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        assert e["dtype"] == "F32", e["dtype"]
        a, b = e["data_offsets"]
        t = torch.tensor(list(struct.unpack("<%df" % ((b - a) // 4), raw[base + a:base + b])), dtype=torch.float32)
        out[name] = t.view(*e["shape"])
    return out


def main():
    sd = read_safetensors(sys.argv[1])
    c = json.load(open(sys.argv[2]))
    torch.manual_seed(0)
    model = Transformer(c)
    res = model.load_state_dict(sd, strict=False)
    with torch.no_grad():
        logits = model(torch.tensor(c["idx"], dtype=torch.long)).double().flatten()
    ref = torch.tensor(c["logits"], dtype=torch.float64)
    print(json.dumps({
        "missing": sorted(res.missing_keys),
        "unexpected": sorted(res.unexpected_keys),
        "maxAbsDiff": float((logits - ref).abs().max()),
        "maxAbsRef": float(ref.abs().max()),
    }))


if __name__ == "__main__":
    main()
