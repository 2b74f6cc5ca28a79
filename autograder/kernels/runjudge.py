"""Run a notebook's cells in a live kernel, skipping those its tests do not need, then judge it.

The one loop of every run that grades: grading (``gradeexec.GradeExecute``, inside nbgrader's
``Autograde``), the release checks (``execute.py``: one notebook top to bottom) and one kernel
grading many versions (``sharedkernel.py``: the variant sets, the audit's mutants). Each
caller keeps its own concerns: nbgrader's hooks and caps (``gradeexec``), the scratch folder
and the verdicts file (``execute``), snapshots and restarts between versions
(``sharedkernel``).

1. The cells grading leaves out (:func:`skipped_cells`: ``spec.Spec.skipped_cells``) are not
   run; the others run in order (:func:`run_cells`).
2. The tests then ask the still-running kernel for the student's objects
   (:func:`judge_kernel`: ``judge.judge_live``, from this process, which runs no notebook
   code).

:func:`client` is the nbclient of the release checks and the shared kernel: a kernel with
Unix sockets of its own (:func:`kernel_config`), errors kept going, a cell past its time
limit interrupted and given :data:`TIMEOUT_ERROR`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection
from pathlib import Path
from typing import TYPE_CHECKING

from nbformat import NotebookNode

from autograder.course import notebooks
from autograder.course.spec import Spec
from autograder.kernels import judge

if TYPE_CHECKING:
    from nbclient import NotebookClient

TIMEOUT_ERROR = {
    "ename": notebooks.TIMEOUT_ENAME,
    "evalue": "",
    "traceback": [f"{notebooks.TIMEOUT_ENAME}: the cell ran past its time limit"],
}

RunCell = Callable[[NotebookNode, int], object]  # (cell, its index): run it in the kernel


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


def client(nb: NotebookNode, timeout: int, scratch: Path, sockets: Path) -> NotebookClient:
    """An nbclient for ``nb`` (not started: ``setup_kernel``): its kernel works in ``scratch``
    with its sockets in ``sockets``, each cell within ``timeout`` seconds (then interrupted,
    :data:`TIMEOUT_ERROR`), going on after errors."""
    from nbclient import NotebookClient

    return NotebookClient(
        nb,
        timeout=timeout,
        kernel_name="python3",
        allow_errors=True,
        interrupt_on_timeout=True,
        error_on_timeout=TIMEOUT_ERROR,
        resources={"metadata": {"path": str(scratch)}},
        config=kernel_config(sockets),
    )


def skipped_cells(spec: Spec | None, cells: list, run_all: bool = False) -> list[int]:
    """The indices of ``cells`` grading leaves out (``spec.Spec.skipped_cells``); none without
    a spec (no tests: every cell runs) or with ``run_all``."""
    return [] if spec is None or run_all else spec.skipped_cells(cells)


def _nothing(*_) -> None:
    return None


def run_cells(
    cells: list[NotebookNode],
    skipped: Collection[int],
    run: RunCell,
    skip: Callable[[NotebookNode], object] = _nothing,
    start: int = 0,
    before: Callable[[int], object] = _nothing,
) -> None:
    """Run ``cells[start:]`` in order with ``run(cell, index)``, but those in ``skipped``
    (``skip(cell)`` is told instead). ``before(index)`` is called before each cell, skipped or
    not (the shared kernel's snapshots). A cell that is no code cell is ``run`` too: nbclient
    runs nothing for it."""
    for index in range(start, len(cells)):
        before(index)
        cell = cells[index]
        if index in skipped:
            skip(cell)
        else:
            run(cell, index)


def judge_kernel(
    spec: Spec,
    nb: NotebookNode,
    info: dict,
    request_seconds: float,
    checks: dict | None = None,
) -> dict:
    """The tests of ``spec`` on the executed ``nb``, asking its still-running kernel
    (connection ``info``): ``{"verdicts": judge JSON, "session": request counts}``
    (``judge.judge_live``; ``judge.JudgeError`` when a judge cell fails)."""
    verdicts, stats = judge.judge_live(
        spec, nb, info, checks=checks, request_seconds=request_seconds
    )
    return {"verdicts": verdicts, "session": stats}


def run_then_judge(
    nb: NotebookNode,
    spec: Spec | None,
    skipped: Collection[int],
    run: RunCell,
    info: Callable[[], dict],
    request_seconds: float,
    skip: Callable[[NotebookNode], object] = _nothing,
    before_judge: Callable[[], object] = _nothing,
) -> dict | None:
    """Run the cells of ``nb`` but ``skipped`` (:func:`run_cells`), then, with a ``spec``, call
    ``before_judge()`` and judge the live kernel (:func:`judge_kernel`, its connection
    ``info()``). Returns the judgement, None without a spec. The kernel runs (the caller's
    ``setup_kernel``) around this call."""
    run_cells(nb.cells, skipped, run, skip)
    if spec is None:
        return None
    before_judge()
    return judge_kernel(spec, nb, info(), request_seconds)
