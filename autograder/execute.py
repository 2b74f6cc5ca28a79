"""Run one notebook top to bottom, as the release checks need it, then its tests.

    python -m autograder.execute IN.ipynb OUT.ipynb --timeout SECONDS [--spec SPEC.json]

Runs ``IN`` in a fresh scratch folder (so ``results/`` and ``checkpoints/`` start empty) with
the environment it inherits (the release sets quick mode), keeps going after errors, and
writes the executed notebook with its outputs to ``OUT``. A cell running past ``--timeout``
is interrupted and gets an error output named ``CellTimeoutError``. With ``--spec`` (a judge
spec, ``judge.Spec``), the cells grading skips are not run (``Spec.skips``), as when grading,
and the tests then ask the still-running kernel (``judge.judge_live``,
from this process, which runs no notebook code) and the verdicts go to
:func:`verdicts_path` of ``OUT``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from . import judge, notebooks
from .nbgrader_dir import child_env

TIMEOUT_ERROR = {
    "ename": notebooks.TIMEOUT_ENAME,
    "evalue": "",
    "traceback": [f"{notebooks.TIMEOUT_ENAME}: the cell ran past its time limit"],
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


def verdicts_path(dst: Path) -> Path:
    """Where :func:`execute` writes the verdicts on the notebook it wrote to ``dst``."""
    return dst.with_name(dst.name + ".verdicts.json")


def execute(src: Path, dst: Path, timeout: int, spec: judge.Spec | None = None) -> None:
    """Execute ``src`` in a scratch folder and write the result to ``dst`` (in this process);
    with ``spec``, judge it on the live kernel before it stops."""
    from nbclient import NotebookClient

    nb = notebooks.read(src)
    found: dict = {}
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
        skipped = set(spec.skipped_cells(nb.cells)) if spec is not None else set()
        with client.setup_kernel():
            for index, cell in enumerate(nb.cells):
                if index in skipped:
                    continue  # as grading runs it (judge.Spec.skipped_cells)
                client.execute_cell(cell, index)
            if spec is not None:
                info = client.km.get_connection_info()
                verdicts, stats = judge.judge_live(spec, nb, info, request_seconds=timeout)
                found = {"verdicts": verdicts, "session": stats}
    notebooks.write(nb, dst)
    if spec is not None:
        notebooks.write_bytes(verdicts_path(dst), json.dumps(found).encode())


def read_verdicts(dst: Path) -> dict[str, judge.TestVerdict]:
    """The verdicts :func:`execute` wrote beside ``dst``."""
    data = json.loads(verdicts_path(dst).read_text())
    return judge.verdicts_from_json(data["verdicts"])


def execute_in_child(
    src: Path, dst: Path, timeout: int, threads: int | None = None, spec: Path | None = None
) -> str:
    """Execute ``src`` into ``dst`` in a child process (quick mode), judged with the spec file
    ``spec`` when given; return its error log ('' on success). The child gets a generous
    wall-clock limit on top of the cell limit."""
    cmd = [sys.executable, "-m", "autograder.execute", str(src), str(dst), f"--timeout={timeout}"]
    if spec is not None:
        cmd.append(f"--spec={spec}")
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
    parser.add_argument("--spec", type=Path, help="judge spec (JSON): judge the live kernel")
    args = parser.parse_args()
    spec = judge.Spec.from_json(args.spec.read_text()) if args.spec else None
    execute(args.src, args.dst, args.timeout, spec)


if __name__ == "__main__":
    main()
