"""Waiting for a send, a receive or a collective, never past the run's timeout: the one wait every module of the
program uses (pipeline.py's messages, the collectives of collectives.py, copies.py, stream.py and
tensor_parallel.py, the gathers of train.py, profiling.py). It imports nothing of the program, so any module may."""


class RunFailed(Exception):
    """A process cannot go on (a message did not come in time); the text names the rank and the action."""


def wait(work, timeout, message):
    """Waits for a send, a receive or a collective; past the timeout the run fails with `message` (never a hang)."""
    try:
        done = work.wait(timeout)
    except RuntimeError as e:  # gloo raises on a timeout
        raise RunFailed(f"{message} ({e})") from None
    if done is False:
        raise RunFailed(message)
