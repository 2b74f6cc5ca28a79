"""Forked kernels (``[sandbox] fork_kernels``, ``autograder/kernels/zygote.py`` and
``forkkernel.py``): each notebook's kernel is a fork of one process per student, in that student's
sandbox, and starts in a sandbox as fresh as its own would be. The attack corpus
(``tests/scenarios/test_sandbox.py``) and the real demo class
(``tests/scenarios/test_grade_real.py``) grade in this mode too; here, what a kernel leaves for the
next one, and what happens when the zygote is gone or cannot start."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import sys

import psutil
import pytest
from nbclient import NotebookClient
from nbformat.v4 import new_code_cell, new_notebook

from autograder.kernels import sandbox, zygote


@pytest.fixture
def box(monkeypatch, tmp_path):
    """A bubblewrap sandbox forking its kernels (nothing preloaded: ipykernel alone)."""
    if not sandbox.probe().isolated:
        pytest.fail(f"no sandbox on this machine: {sandbox.probe().reason}")
    made = sandbox.Sandbox(sandbox.Limits(fork_kernels=True, scratch_mb=16, processes=64))
    monkeypatch.setattr(sandbox.SandboxKernelManager, "sandbox", made)
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(made.rundir))
    yield made
    made.cleanup()


def run(cells: list[str], timeout: int = 60) -> list[str]:
    """Each cell's output text, run in a kernel the patched SandboxKernelManager starts."""
    nb = new_notebook(cells=[new_code_cell(c) for c in cells])
    NotebookClient(
        nb, kernel_manager_class=sandbox.SandboxKernelManager, timeout=timeout,
        allow_errors=True,
    ).execute()  # fmt: skip
    return [
        "".join(o.get("text", "") or o.get("ename", "") for o in cell.outputs) for cell in nb.cells
    ]


SHOWN = sandbox.shown_paths()
STATE = "import json, os; print(json.dumps({'pid': os.getpid(), 'tmp': sorted(os.listdir('/tmp')), 'here': sorted(os.listdir('.')), 'procs': sorted(int(p) for p in os.listdir('/proc') if p.isdigit())}))"  # noqa: E501
LEAVE = """\
import subprocess
open('left.txt', 'w').write('from the first notebook')
open('/tmp/left-too', 'w').write('x')
subprocess.Popen(['sh', '-c', 'setsid sleep 300 & sleep 300'], start_new_session=True)
print('left')
"""


def test_the_next_kernel_starts_in_a_fresh_sandbox(box, monkeypatch, tmp_path):
    """A kernel's files and processes (a daemon in a session of its own too) are gone when the
    next kernel of the same student starts, which is a new process of the same zygote; what
    the sandbox shows in the machine's /tmp (course_lib in a clone there) stays, untouched."""
    shown = tmp_path / "shown"  # pytest's tmp_path is in /tmp: in the sandbox's scratch
    shown.mkdir()
    (shown / "kept.txt").write_text("shown")
    monkeypatch.setattr(sandbox, "shown_paths", lambda: [*SHOWN, shown])
    read = f"print(open({str(shown / 'kept.txt')!r}).read())"
    first = run([STATE, LEAVE, read])
    assert first[1].strip() == "left" and first[2] == "shown\n"
    before = json.loads(first[0])
    zygote_pid = box.zygote.pid
    second, again = run([STATE, read])
    second = json.loads(second)
    assert again == "shown\n" and (shown / "kept.txt").read_text() == "shown"
    assert box.zygote.pid == zygote_pid  # forked again, not a new sandbox
    assert second["pid"] != before["pid"]
    assert second["here"] == before["here"] == [".ipython"], second  # left.txt is gone
    assert "left-too" not in second["tmp"] and second["tmp"] == before["tmp"]
    assert second["procs"] == before["procs"][:-1] + [second["pid"]], (before, second)
    inside = psutil.Process(box.zygote.process.pid).children(recursive=True)
    assert not any("sleep" in p.name() for p in inside)


def test_a_kernel_cannot_take_over_its_zygote(box):
    """Its kernels run as its uid, but cannot attach to it nor touch its memory (it is not
    dumpable): alive while the grader empties the scratch, it could race the grader there."""
    code = (
        "import ctypes\ntry:\n    open('/proc/1/mem', 'rb')\n    print('mem opened')\n"
        "except OSError:\n    print('mem refused')\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "print('attached' if libc.ptrace(16, 1, 0, 0) == 0 else 'attach refused')\n"
        "print(open('/proc/self/status').read().count('TracerPid:\\t0'))"
    )
    assert run([code]) == ["mem refused\nattach refused\n1\n"]


def test_a_replaced_zygote_socket_is_never_followed(box):
    """A kernel that puts a link where the zygote's socket was (to a path that exists on the
    machine: the grader's side would follow it from its own root) costs that zygote: the next
    kernel comes from a fresh one."""
    run(["import os\nos.remove('/tmp/.zygote/socket')\nos.symlink('/tmp', '/tmp/.zygote/socket')"])
    first = box.zygote.pid
    assert run(["print(6 * 7)"]) == ["42\n"] and box.zygote.pid != first and box.forking


def test_a_kernel_cannot_end_its_zygote_and_a_zygote_gone_is_started_again(box):
    """The zygote is the sandbox's pid 1: a kernel's signals do not reach it (it has no
    handler). One that is gone all the same (here killed from outside) is started again."""
    out = run([
        "import os, signal\nfor sig in (signal.SIGKILL, signal.SIGTERM, signal.SIGINT):\n"
        "    os.kill(os.getppid(), sig)\ntry:\n    os.kill(-1, signal.SIGKILL)\n"
        "except ProcessLookupError:\n    pass\nprint(os.getppid())",
    ])  # fmt: skip
    assert out == ["1\n"]
    first = box.zygote.pid
    assert box.zygote.alive() and run(["print(6 * 7)"]) == ["42\n"] and box.zygote.pid == first
    os.kill(first, signal.SIGKILL)
    psutil.wait_procs([psutil.Process(box.zygote.process.pid)], timeout=10)  # bwrap ends with it
    assert run(["print(6 * 7)"]) == ["42\n"] and box.zygote.pid != first


def test_the_kernel_lives_as_long_as_what_jupyter_started(box):
    """jupyter_client's kernel process (the stub) ends with the kernel and its exit status, and
    killing it (a timed-out kernel's hard kill) kills the kernel."""
    assert asyncio.run(_lifetimes(box)) == ([], 3)


async def _lifetimes(box) -> tuple[list, int | None]:
    km = sandbox.SandboxKernelManager()
    await km.start_kernel()
    client = km.client()
    client.start_channels()
    await client.wait_for_ready(timeout=60)
    kernel = psutil.Process(box.zygote.pid).children()
    assert len(kernel) == 1 and await km.is_alive()
    km.provisioner.process.kill()
    _, left = psutil.wait_procs(kernel, timeout=10)
    client.stop_channels()
    await km.shutdown_kernel(now=True)

    km = sandbox.SandboxKernelManager()
    await km.start_kernel()
    client = km.client()
    client.start_channels()
    await client.wait_for_ready(timeout=60)
    client.execute("import os; os._exit(3)")
    stub = km.provisioner.process
    for _ in range(300):
        if stub.poll() is not None:
            break
        await asyncio.sleep(0.1)
    client.stop_channels()
    await km.shutdown_kernel(now=True)
    return left, stub.returncode


def test_a_kernel_ends_as_python_ends(box):
    """Its exit waits for its threads, then runs its exit handlers, as Python's exit does; it
    skips only the teardown of what it shares with the zygote (``forkkernel._leave``)."""
    code = (
        "import atexit, threading, time\n"
        "def late():\n    time.sleep(1)\n    open('thread.txt', 'w').write('thread')\n"
        "def done():\n    open('exit.txt', 'w').write(open('thread.txt').read() + ' then exit')\n"
        "atexit.register(done)\nthreading.Thread(target=late).start()\nprint('started')"
    )
    assert run([code]) == ["started\n"]
    with open(f"{box.zygote.root}{sandbox.SCRATCH}/exit.txt") as fh:  # before the next kernel
        assert fh.read() == "thread then exit"


def test_a_zygote_that_cannot_start_gives_kernels_of_their_own(box, monkeypatch, caplog):
    broken = box.rundir / "broken.py"
    broken.write_text("import sys\nsys.exit('no zygote here')\n")
    monkeypatch.setattr(zygote, "PROGRAM", broken)
    with caplog.at_level(logging.WARNING):
        out = run(["import os; print(os.getpid())"])
    assert out[0].strip() == "2"  # a kernel of its own: pid 2, after bwrap's init
    assert not box.forking and box.zygote is None
    assert "kernels are not forked for this student: the zygote exited (no zygote here)" in (
        caplog.text
    )


def test_the_zygote_is_told_apart_from_other_kernels():
    cmd = [sys.executable, "-Xfrozen_modules=off", "-m", "ipykernel_launcher", "-f", "c.json",
           "--HistoryManager.hist_file=:memory:"]  # fmt: skip
    assert zygote.kernel_args(cmd) == (
        [sys.executable, "-Xfrozen_modules=off"],
        ["--HistoryManager.hist_file=:memory:"],
    )
    with pytest.raises(zygote.ZygoteError):
        zygote.kernel_args([sys.executable, "-m", "other_kernel", "-f", "c.json"])
