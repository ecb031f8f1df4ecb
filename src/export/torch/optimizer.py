"""The run's optimizer (config.json "optimizer": AdamW or SGD with momentum) over a list of tensors, each with or
without weight decay (the page decays weights and embeddings, never biases or norms)."""
import torch


def make_optimizer(opt, tensors):
    """A torch optimizer over `tensors`, a list of (tensor, decays); None when the list is empty."""
    groups = []
    for decay in (True, False):
        ps = [t for t, d in tensors if d == decay]
        if ps:
            groups.append({"params": ps, "weight_decay": opt["weightDecay"] if decay else 0.0})
    if not groups:
        return None
    if opt["name"] == "adamw":
        return torch.optim.AdamW(groups, lr=opt["lr"], betas=(opt["beta1"], opt["beta2"]), eps=opt["eps"])
    return torch.optim.SGD(groups, lr=opt["lr"], momentum=opt["momentum"])


def step_with_lr(optimizer, lr):
    if optimizer is None:
        return
    for g in optimizer.param_groups:
        g["lr"] = lr
    optimizer.step()
