"""The exported batches as one replica trains them.

batches.safetensors holds the exact batch of every step: inputs [steps, B, cols] and labels [steps, B] (the GPT's:
[steps, B, blockSize], -1 where a position is padding). Replica d of dp trains rows [d*B/dp, (d+1)*B/dp) of
each step's batch (replicaRows in src/schedule/mesh.ts), cut into `microbatches` micro-batches of
b = B / (dp * microbatches) rows. With expert parallelism (config.json "ep" > 1) ep process e of the replica takes
rows [e*b/ep, (e+1)*b/ep) of each of its micro-batches (the tab's SampledMicrobatches): the program's pipe
p = d * ep + e (bundle.py Mesh). The loss scale stays 1 / (the targets of the WHOLE step's batch, every replica's),
so the replicas' summed gradients are exactly the one-device gradient of the batch; PipeDream, whose every
micro-batch is its own update (config.json lossOver 'microbatch'), scales each by 1 / its own targets.

A stream (PipeDream, PipeDream-2BW: one window for the whole run, stream.py) numbers its micro-batches across
steps: micro-batch k is step k // microbatches's micro-batch k % microbatches.
"""
import torch

from safetensors_io import read_safetensors

LABEL_IGNORED = -1  # a padded target (the GPT's positions past a name's end) takes no loss


class ReplicaBatches:
    def __init__(self, path, cfg, pipe, device):
        data = read_safetensors(path)
        self.inputs, self.labels = data["inputs"], data["labels"].long()
        dp, ep, B, M = cfg.get("dp", 1), cfg.get("ep", 1), cfg["batchSize"], cfg["microbatches"]
        replica, e = divmod(pipe, ep)
        self.stride = B // (dp * M)  # rows of the replica's micro-batch
        self.rows = self.stride // ep  # this process's rows of it
        self.first = replica * (B // dp) + e * self.rows
        self.device = device
        self.in_dtype = torch.float32 if cfg["model"]["input"]["dtype"] == "f32" else torch.int32
        self.loss_scale = cfg["lossScalePerStep"]
        self.per_microbatch = cfg.get("lossScalePerMicrobatch") if cfg.get("lossOver", "step") == "microbatch" else None
        self.M, self.stream = M, cfg.get("update", "flush") != "flush"

    def locate(self, step, mb):
        """(step, micro-batch within it) of micro-batch `mb` of window `step` (a stream's one window holds every step)."""
        return divmod(mb, self.M) if self.stream else (step, mb)

    def scale(self, step, mb):
        """What micro-batch mb's summed loss is multiplied by."""
        s, i = self.locate(step, mb)
        return self.loss_scale[s] if self.per_microbatch is None else self.per_microbatch[s][i]

    def span(self, mb):
        lo = self.first + mb * self.stride
        return lo, lo + self.rows

    def input(self, step, mb):
        step, mb = self.locate(step, mb)
        lo, hi = self.span(mb)
        return self.inputs[step, lo:hi].to(self.device, self.in_dtype)

    def target(self, step, mb):
        step, mb = self.locate(step, mb)
        lo, hi = self.span(mb)
        return self.labels[step, lo:hi].to(self.device).reshape(-1)
