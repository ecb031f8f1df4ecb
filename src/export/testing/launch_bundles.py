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

    python3 launch_bundles.py --alone JOBS.json
    # JOBS.json: [{"dir": BUNDLE, "args": [...], "env": {"RANK": ..., "WORLD_SIZE": ...}}, ...]

One process, no launcher and no process group: each job is train.py's run(args, BUNDLE) with its env set, for the
checks that stop a process before any process group starts (./torchrun.ts runPythonMany). Job i's output goes to
JOBS.json's folder as job{i}.log, its exit code to job{i}.code, and every job runs whatever the others' codes.
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


def run_job(train, job):
    """train.run(job's args, job's folder) in that folder (as `cd BUNDLE; train.py ARGS` runs), a crash being exit
    code 1 as it is train.py's."""
    here = os.getcwd()
    os.chdir(job["dir"])
    try:
        return train.run(job["args"], job["dir"])
    except BaseException:  # noqa: BLE001 - a crash is this job's result, as it would be train.py's
        traceback.print_exc()
        return 1
    finally:
        os.chdir(here)


def alone(path, jobs, train):
    import torch.distributed as dist
    folder = os.path.dirname(os.path.abspath(path))
    for i, job in enumerate(jobs):
        saved = dict(os.environ)
        os.environ.update(job["env"])
        restore = redirected(os.path.join(folder, f"job{i}.log"))
        code = run_job(train, job)
        restore()
        if dist.is_initialized():  # a job that went further than its check: the next starts without its group
            dist.destroy_process_group()
        os.environ.clear()
        os.environ.update(saved)
        with open(os.path.join(folder, f"job{i}.code"), "w") as f:
            f.write(str(code))


def main():
    path = sys.argv[-1]
    with open(path) as f:
        jobs = json.load(f)
    sys.path.insert(0, jobs[0]["dir"])
    import torch.distributed as dist
    import train

    if sys.argv[1] == "--alone":
        alone(path, jobs, train)
        return
    rank = int(os.environ["RANK"])
    dist.init_process_group("gloo", rank=rank, world_size=int(os.environ["WORLD_SIZE"]),
                            timeout=datetime.timedelta(seconds=120))  # train.py's --timeout default
    for job in jobs:
        folder = os.path.join(job["dir"], "launch")
        os.makedirs(folder, exist_ok=True)
        restore = redirected(os.path.join(folder, f"rank{rank}.log"))
        code = run_job(train, job)
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
