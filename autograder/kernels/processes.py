"""Ending processes: a student's grading worker with its kernels, a sandbox's leftovers, what
Gradescope's run left. Used by the worker, the zygote and Gradescope's entry point, so that none
of them imports another for it."""

from __future__ import annotations

import os
import time

KILL_WAIT_SECONDS = 10.0


def kill_all(procs) -> None:
    """Kill ``procs`` (psutil processes) and wait until each has ended; those already gone are
    skipped. This process's own children are reaped. Another's process has ended once it is a
    zombie: its parent reaps it, or the machine's init when its parent is gone too, in its own
    time (1.5 s for a student's zygote on this course's machine; never, in a container whose
    first process reaps nothing), and waiting for it to go would only wait for that."""
    import psutil

    for proc in procs:
        try:
            proc.kill()
        except psutil.NoSuchProcess:
            pass
    deadline = time.monotonic() + KILL_WAIT_SECONDS
    for proc in procs:
        while time.monotonic() < deadline:
            try:
                if proc.ppid() == os.getpid():
                    proc.wait(max(0.0, deadline - time.monotonic()))  # reaps it
                    break
            except (psutil.NoSuchProcess, psutil.TimeoutExpired):
                break
            if not running(proc):
                break
            time.sleep(0.005)


def running(proc) -> bool:
    """Whether the psutil process ``proc`` still runs: neither gone nor a zombie (ended,
    waiting for its parent to reap it); one this process may not even read is not counted
    (it could not kill it either)."""
    import psutil

    try:
        return proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def kill_tree(pid: int) -> None:
    """Kill a process and all its descendants (nbgrader's kernels run in their own sessions,
    so killing the process group alone would leave them running)."""
    import psutil

    try:
        parent = psutil.Process(pid)
        procs = parent.children(recursive=True) + [parent]
    except psutil.NoSuchProcess:
        return
    kill_all(procs)
