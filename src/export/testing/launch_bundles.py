"""Test support: several exported bundles run one after another in the processes of one torchrun launch, so that
each process imports torch once for all of them (./torchrun.ts runTorchrunMany, which writes JOBS.json).

    torchrun --redirects 1 --tee 1 --nproc_per_node=W launch_bundles.py JOBS.json
    # JOBS.json: [{"dir": BUNDLE, "args": [train.py's flags]}, ...]

Every bundle is of world size W and holds the same program (torchrun.ts checks both); the program is imported from
the first bundle. This process starts the process group (gloo, train.py's default timeout) and each job is train.py's
run(args, BUNDLE) in it: train.py keeps a process group it did not start. What a job prints (file descriptors 1 and 2,
so torch's own messages too) goes to BUNDLE/launch/rank{g}.log, then its exit code to BUNDLE/launch/rank{g}.code.
After a job that did not end with 0 this process stops at once (another process may still wait for it): torchrun
then ends the launch, and the later jobs have no code file.
"""
import datetime
import json
import os
import sys
import traceback


def redirected(path):
    """Points file descriptors 1 and 2 at `path`; returns what restores them."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = (os.dup(1), os.dup(2))
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)

    def restore():
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        os.close(saved[0])
        os.close(saved[1])
    return restore


def main():
    with open(sys.argv[1]) as f:
        jobs = json.load(f)
    sys.path.insert(0, jobs[0]["dir"])
    import torch.distributed as dist
    import train

    rank = int(os.environ["RANK"])
    dist.init_process_group("gloo", rank=rank, world_size=int(os.environ["WORLD_SIZE"]),
                            timeout=datetime.timedelta(seconds=120))  # train.py's --timeout default
    for job in jobs:
        folder = os.path.join(job["dir"], "launch")
        os.makedirs(folder, exist_ok=True)
        restore = redirected(os.path.join(folder, f"rank{rank}.log"))
        try:
            code = train.run(job["args"], job["dir"])
        except BaseException:  # noqa: BLE001 - a crash is this job's result, as it would be train.py's
            traceback.print_exc()
            code = 1
        restore()
        with open(os.path.join(folder, f"rank{rank}.code"), "w") as f:
            f.write(str(code))
        if code != 0:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
