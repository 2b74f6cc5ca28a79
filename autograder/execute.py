"""Run one notebook top to bottom, as the release checks need it.

    python -m autograder.execute IN.ipynb OUT.ipynb --timeout SECONDS

Runs ``IN`` in a fresh scratch folder (so ``results/`` and ``checkpoints/`` start empty) with
the environment it inherits (the release sets quick mode), keeps going after errors, and
writes the executed notebook with its outputs to ``OUT``. A cell running past ``--timeout``
is interrupted and gets an error output named ``CellTimeoutError``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from . import notebooks
from .nbgrader_dir import child_env

TIMEOUT_ERROR = {
    "ename": "CellTimeoutError",
    "evalue": "",
    "traceback": ["CellTimeoutError: the cell ran past its time limit"],
}


def kernel_config(sockets: Path):
    """The nbclient configuration of a kernel whose sockets are files in ``sockets`` (a folder
    of this run, apart from the notebook's working folder).

    With TCP, jupyter_client picks free ports by binding and releasing them before the kernel
    binds them, so kernels started at the same moment by parallel workers (the release checks,
    the variant and mutant grading) can pick the same port, and one dies before replying
    ("Address already in use"). Unix sockets in a folder of this run cannot collide. TCP stays
    where there are no Unix sockets (Windows)."""
    from traitlets.config import Config

    cfg = Config()
    if os.name == "posix":
        cfg.KernelManager.transport = "ipc"
        cfg.KernelManager.ip = str(sockets / "kernel")
    return cfg


def execute(src: Path, dst: Path, timeout: int) -> None:
    """Execute ``src`` in a scratch folder and write the result to ``dst`` (in this process)."""
    from nbclient import NotebookClient

    nb = notebooks.read(src)
    with (
        tempfile.TemporaryDirectory(prefix="a3-run-") as scratch,
        tempfile.TemporaryDirectory(prefix="a3-kernel-") as sockets,
    ):
        client = NotebookClient(
            nb,
            timeout=timeout,
            kernel_name="python3",
            allow_errors=True,
            interrupt_on_timeout=True,
            error_on_timeout=TIMEOUT_ERROR,
            resources={"metadata": {"path": scratch}},
            config=kernel_config(Path(sockets)),
        )
        client.execute()
    notebooks.write(nb, dst)


def execute_in_child(src: Path, dst: Path, timeout: int, threads: int | None = None) -> str:
    """Execute ``src`` into ``dst`` in a child process (quick mode); return its error log
    ('' on success). The child gets a generous wall-clock limit on top of the cell limit."""
    cmd = [sys.executable, "-m", "autograder.execute", str(src), str(dst), f"--timeout={timeout}"]
    try:
        proc = subprocess.run(
            cmd, env=child_env(threads), capture_output=True, text=True, timeout=timeout * 20
        )
    except subprocess.TimeoutExpired:
        return f"{src.name}: did not finish in {timeout * 20} s"
    return "" if proc.returncode == 0 else f"{src.name}: {proc.stderr[-3000:]}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("src", type=Path)
    parser.add_argument("dst", type=Path)
    parser.add_argument("--timeout", type=int, default=600, help="seconds per cell")
    args = parser.parse_args()
    execute(args.src, args.dst, args.timeout)


if __name__ == "__main__":
    main()
