"""The one run-then-judge loop (``autograder/kernels/runjudge.py``) that grading, the release
checks and the shared kernel use, and the worker split at its process boundary (issue 40, step 2):
the loop runs the cells the tests need in order and tells the caller of each one left out, and
no caller keeps a loop or a judge call of its own; the child's module holds none of the
parent's code."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from autograder.course.spec import Spec
from autograder.kernels import runjudge
from autograder.marking import launcher, worker
from helpers import ROOT

CALLERS = ("marking/gradeexec.py", "kernels/execute.py", "kernels/sharedkernel.py")


def test_the_cells_left_out_are_not_run_and_the_caller_is_told():
    cells = [new_code_cell("a = 1"), new_markdown_cell("# words"), new_code_cell("b = 2")]
    ran, told, before = [], [], []
    runjudge.run_cells(
        cells, {2}, lambda cell, i: ran.append(i), told.append, start=0, before=before.append
    )
    assert ran == [0, 1]  # a Markdown cell goes to nbclient too, which runs nothing
    assert told == [cells[2]]
    assert before == [0, 1, 2]  # every cell, run or not (the shared kernel's snapshots)


def test_a_run_from_a_start_runs_no_cell_above_it():
    cells = [new_code_cell(f"x = {i}") for i in range(4)]
    ran: list[int] = []
    runjudge.run_cells(cells, set(), lambda cell, i: ran.append(i), start=2)
    assert ran == [2, 3]


def test_without_a_spec_every_cell_runs_and_nothing_is_judged():
    nb = new_notebook(cells=[new_code_cell("a = 1"), new_code_cell("b = 2")])
    asked: list[str] = []
    found = runjudge.run_then_judge(
        nb, None, runjudge.skipped_cells(None, nb.cells), lambda cell, i: asked.append("run"),
        lambda: asked.append("info") or {}, 60, before_judge=lambda: asked.append("judge"),
    )  # fmt: skip
    assert found is None
    assert asked == ["run", "run"]


def test_run_all_leaves_no_cell_out():
    nb = new_notebook(cells=[new_code_cell("unused = 1"), new_code_cell("x = 2")])
    spec = Spec("n", tests={}, judges=())
    assert runjudge.skipped_cells(spec, nb.cells, run_all=True) == []
    assert runjudge.skipped_cells(spec, nb.cells) == spec.skipped_cells(nb.cells)


def _calls(path: Path) -> set[str]:
    """The names of the functions and methods ``path`` calls (``a.b(...)``: ``b``)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call):
            func = node.func
            found.add(func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", ""))
    return found


def test_the_three_callers_share_the_loop_and_the_judge_call():
    for name in CALLERS:
        calls = _calls(ROOT / "autograder" / name)
        assert "judge_live" not in calls, name  # only runjudge asks the live kernel
        assert "NotebookClient" not in calls, name  # one client: runjudge.client
        assert calls & {"run_then_judge", "run_cells"}, name
    assert "judge_live" in _calls(ROOT / "autograder" / "kernels" / "runjudge.py")


def test_the_worker_holds_only_the_childs_code():
    """``python -m autograder.marking.worker`` imports none of the parent's side (fork server,
    launch, the live workers), and the parent's names live in ``launcher``."""
    code = (
        "import sys, autograder.marking.worker; print('autograder.marking.launcher' in sys.modules)"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "False"
    parent = ("run", "launch", "kill_running", "sweep_scratch", "stop_fork_server", "arguments")
    assert not [n for n in parent if hasattr(worker, n)]
    assert all(callable(getattr(launcher, n)) for n in parent)


def test_the_fork_server_imports_one_list():
    """nbgrader and the launcher first, then the judge cells' modules that are installed: one
    list, imported by ``forkpreload.py`` (each failure skipped)."""
    found = launcher.fork_preload(["json", "no_such_module_at_all", "os.path"])
    assert found == [*launcher.PRELOAD, "json", "os.path"]
    assert "autograder.marking.launcher" in found  # what a worker runs (launcher._forked)


def test_the_release_digest_covers_the_loop():
    """The release checks run notebooks through ``execute.py`` and this loop: a change to
    either changes the release's dependencies digest, so the checks run again."""
    from autograder.publish import releasehistory

    assert {"kernels/execute.py", "kernels/runjudge.py"} <= set(releasehistory.RUN_MODULES)
