"""The workers' fork server imports, once per grading run, what every worker would import: nbgrader,
and the modules the assignment's judge cells import at their top level (torch, course_lib's
checks, scikit-learn's metrics for the repository's course); a module that fails to import is
left to the worker that needs it, where grading reports the error. And a worker's second try:
a notebook whose tests met a NameError while cells were left out is graded again with every
cell run, through the real `make grade` (issue 37, item 6)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from autograder.course import config, nbgrader_dir, notebooks
from autograder.course.spec import SKIP_TAG, JudgeCell, Spec, grade_id, spec_of, tags
from autograder.kernels import processes
from autograder.marking import launcher
from autograder.reports.rows import RERUN_NOTE
from helpers import ROOT, autograder, grades, student_record


def judges(tmp_path: Path, **sources: str) -> nbgrader_dir.GradingDir:
    """A grading folder whose assignment has one judge spec per keyword (name: judge source)."""
    folder = tmp_path / "judges" / "a3"
    folder.mkdir(parents=True)
    for name, source in sources.items():
        spec = Spec(name, tests={}, judges=(JudgeCell(None, source, 0),))
        (folder / f"{name}.json").write_text(spec.to_json())
    return nbgrader_dir.GradingDir(tmp_path, "a3")


def test_the_judges_top_level_imports_are_preloaded(tmp_path):
    gdir = judges(
        tmp_path,
        one="import math, numpy as np\nfrom course_lib.checks import check_close\n",
        two="from . import local\nfrom os.path import *\n\ndef later():\n    import sklearn\n",
    )
    (gdir.judges / "broken.json").write_text("{")  # grading reports it; no preload from it
    assert launcher.judge_imports(gdir) == (
        "course_lib.checks", "course_lib.checks.check_close", "math", "numpy", "os.path",
    )  # fmt: skip


def test_the_repository_course_preloads_torch_and_the_checks(tmp_path):
    """The specs as grading writes them (``nbgrader_dir.generate_assignment``) from solutions/."""
    gdir = nbgrader_dir.GradingDir(tmp_path, "a3")
    gdir.judges.mkdir(parents=True)
    for name in config.load(ROOT).notebooks():
        spec = spec_of(notebooks.read(ROOT / "solutions" / "a3" / f"{name}.ipynb"), name)
        (gdir.judges / f"{name}.json").write_text(spec.to_json())
    found = launcher.judge_imports(gdir)
    assert {"torch", "course_lib.grading.judging", "course_lib.checks"} <= set(found)


def test_a_module_that_fails_to_import_is_skipped(tmp_path):
    (tmp_path / "raises_on_import.py").write_text("raise RuntimeError('a broken course module')\n")
    env = {
        **os.environ,
        launcher.FORK_PRELOAD: "raises_on_import,no_such_module_at_all,json",
        "PYTHONPATH": os.pathsep.join([str(ROOT), str(tmp_path)]),
    }
    code = "import sys, autograder.marking.forkpreload; print('json' in sys.modules)"
    proc = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "True"


def test_a_worker_starts_with_the_modules_already_imported(tmp_path):
    """Through multiprocessing's real fork server, as grading starts its workers."""
    out = tmp_path / "modules.json"
    probe = (
        "import json, sys\n"
        f"open({str(out)!r}, 'w').write(json.dumps([name in sys.modules for name in "
        "('wave', 'tabnanny', 'nbgrader.preprocessors')]))\n"
    )
    launcher.stop_fork_server()  # this process's server, if a test started one: start ours
    try:
        server = launcher._fork_server(lambda: ("wave",))
        process = server.Process(target=exec, args=(probe,))
        process.start()
        process.join(120)
        assert process.exitcode == 0
        assert json.loads(out.read_text()) == [True, False, True]
    finally:
        launcher.stop_fork_server()


def test_killing_waits_for_the_end_not_for_the_reaping():
    """A killed process whose parent has not reaped it yet (a student's zygote, whose parent
    was killed with it, waits for the machine's init) has ended: kill_all does not wait for it
    to be reaped. Here its parent reaps it only after 3 s."""
    import psutil

    code = (
        "import os, time\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    time.sleep(600)\n"
        "    os._exit(0)\n"
        "print(pid, flush=True)\n"
        "time.sleep(3)\n"
        "os.waitpid(pid, 0)\n"
        "time.sleep(600)\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        grandchild = psutil.Process(int(parent.stdout.readline()))
        processes.kill_all([grandchild])
        assert grandchild.status() == psutil.STATUS_ZOMBIE  # ended, its parent not yet told
    finally:
        processes.kill_all([psutil.Process(parent.pid)])
    assert not psutil.pid_exists(parent.pid)  # this process's own child: reaped


# ---------------------------------------------------------------------------------------------
# Skipped cells and names read at call time (issue 37, item 6), through the real `make grade`.

TRAINING = 'FACTOR = 1  # bound by the "training" cell only\nprint("trained")'
TIMED = "%%time\nOFFSET = 0  # bound inside a magic: the scan of names does not see it"
HELPERS = {  # student: (their helper cell, expected autograded points of 1_sums, rerun)
    "helper-reads-training": ("def scaled(x):\n    return x * FACTOR", 2.0, None),
    "helper-reads-magic": ("def scaled(x):\n    return x + OFFSET", 2.0, True),
    "helper-reads-nothing-bound": ("def scaled(x):\n    return x + NOWHERE", 1.0, False),
}


def _with_training_cells(root: Path) -> None:
    """The tiny course's 1_sums with two cells grading leaves out: a "training" cell and a
    ``%%time`` one, each binding a name that no other cell of the course reads."""
    from nbformat.v4 import new_code_cell

    path = root / "solutions" / "a3" / "1_sums.ipynb"
    nb = notebooks.read(path)
    at = next(i for i, c in enumerate(nb.cells) if SKIP_TAG in tags(c)) + 1
    for source in (TRAINING, TIMED):
        cell = new_code_cell(source)
        cell.metadata["tags"] = [SKIP_TAG]
        nb.cells.insert(at, cell)
        at += 1
    notebooks.write(nb, path)


def _hand_in_helper(released, gdir, student: str, helper: str) -> None:
    """A correct ``add`` that calls the student's helper, defined in a cell of their own before
    it, and a correct ``mul``; the rest as released (its skipped cells unchanged)."""
    import nbformat
    from nbformat.v4 import new_code_cell

    nb = nbformat.from_dict(released)
    index = next(i for i, c in enumerate(nb.cells) if grade_id(c) == "add")
    nb.cells[index].source = "def add(a, b):\n    return scaled(a) + scaled(b)"
    mul = next(c for c in nb.cells if grade_id(c) == "mul")
    mul.source = "def mul(a, b):\n    return a * b"
    nb.cells.insert(index, new_code_cell(helper))
    folder = gdir.submitted / student / "a3"
    folder.mkdir(parents=True)
    nbformat.write(nb, folder / "1_sums.ipynb")


@pytest.fixture(scope="module")
def helper_class(tmp_path_factory):
    from helpers import course_sources, make_course

    root = make_course(tmp_path_factory.mktemp("skipped-names"))
    _with_training_cells(root)
    src, gdir = course_sources(root)
    for student, (helper, _, _) in HELPERS.items():
        _hand_in_helper(src.released["1_sums"], gdir, student, helper)
    autograder(root, "grade", "--jobs", "2")
    return root, gdir


@pytest.mark.parametrize("student", sorted(HELPERS))
def test_a_helper_reading_a_name_a_skipped_cell_binds_keeps_full_marks(helper_class, student):
    """A correct answer whose helper, defined in an earlier cell, reads a global that only a
    skipped cell binds: the scan of names counts reads inside function bodies from any cell,
    so that cell runs (no second grading); a name bound where the scan cannot see (a
    ``%%time`` cell) gets the notebook graded again with every cell run, noted for the TA,
    no flag. A name bound nowhere costs the answer its points, as on the student's machine:
    the second grading is no better, and the first stands (no note)."""
    root, gdir = helper_class
    _, points, rerun = HELPERS[student]
    row = grades(root)[(student, "1_sums")]
    assert float(row["autograded"]) == points, row
    assert row["flags"] == "ok", row  # no flag (the written answer as released: no grading)
    done = student_record(gdir.root, student)["worker"]["notebooks"]["1_sums"]
    assert done.get("rerun") is rerun, done
    assert (RERUN_NOTE in row["notes"]) is bool(rerun), row["notes"]
    if rerun is None:  # the "training" cell ran the first time; the timed one did not
        graded = notebooks.read(gdir.autograded / student / "a3" / "1_sums.ipynb")
        skipped = [graded.cells[i].source for i in done["skipped"]]
        assert TIMED in skipped and TRAINING not in skipped, skipped
