"""Run one notebook top to bottom, as the release checks need it, then its tests.

    python -m autograder.kernels.execute IN.ipynb OUT.ipynb --timeout SECONDS [--spec SPEC.json]

Runs ``IN`` in a fresh scratch folder (so ``results/`` and ``checkpoints/`` start empty) with
the environment it inherits (the release sets quick mode), keeps going after errors, and
writes the executed notebook with its outputs to ``OUT``. A cell running past ``--timeout``
is interrupted and gets an error output named ``CellTimeoutError``. With ``--spec`` (a judge
spec, ``spec.Spec``), the cells grading skips are not run (``Spec.skipped_cells``), as when
grading, and the tests then ask the still-running kernel (``runjudge.run_then_judge``: the
loop grading runs, from this process, which runs no notebook code) and the verdicts go to
:func:`verdicts_path` of ``OUT``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from autograder.course import notebooks
from autograder.course.nbgrader_dir import child_env
from autograder.course.spec import Spec, TestVerdict, verdicts_from_json
from autograder.kernels import runjudge


def verdicts_path(dst: Path) -> Path:
    """Where :func:`execute` writes the verdicts on the notebook it wrote to ``dst``."""
    return dst.with_name(dst.name + ".verdicts.json")


def execute(src: Path, dst: Path, timeout: int, spec: Spec | None = None) -> None:
    """Execute ``src`` in a scratch folder and write the result to ``dst`` (in this process);
    with ``spec``, judge it on the live kernel before it stops."""
    nb = notebooks.read(src)
    with (
        tempfile.TemporaryDirectory(prefix="a3-run-") as scratch,
        tempfile.TemporaryDirectory(prefix="a3-kernel-") as sockets,
    ):
        client = runjudge.client(nb, timeout, Path(scratch), Path(sockets))
        skipped = set(runjudge.skipped_cells(spec, nb.cells))  # as grading runs it
        with client.setup_kernel():
            found = runjudge.run_then_judge(
                nb, spec, skipped, client.execute_cell, lambda: client.km.get_connection_info(),
                request_seconds=timeout,
            )  # fmt: skip
    notebooks.write(nb, dst)
    if spec is not None:
        notebooks.write_bytes(verdicts_path(dst), json.dumps(found).encode())


def read_verdicts(dst: Path) -> dict[str, TestVerdict]:
    """The verdicts :func:`execute` wrote beside ``dst``."""
    data = json.loads(verdicts_path(dst).read_text())
    return verdicts_from_json(data["verdicts"])


def execute_in_child(
    src: Path, dst: Path, timeout: int, threads: int | None = None, spec: Path | None = None
) -> str:
    """Execute ``src`` into ``dst`` in a child process (quick mode), judged with the spec file
    ``spec`` when given; return its error log ('' on success). The child gets a generous
    wall-clock limit on top of the cell limit."""
    cmd = [
        sys.executable,
        "-m",
        "autograder.kernels.execute",
        str(src),
        str(dst),
        f"--timeout={timeout}",
    ]
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
    spec = Spec.from_json(args.spec.read_text()) if args.spec else None
    execute(args.src, args.dst, args.timeout, spec)


if __name__ == "__main__":
    main()
