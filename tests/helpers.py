"""What the grader's tests share: the repository, a tiny course built from
``tests/fixtures/course`` in a temporary folder, ``python -m autograder`` run on it as the
Makefile runs it, and readers of what grading wrote (``grades.csv``, the gradebook).

A module of its own (not a test module): pytest puts this folder on the import path, since
``conftest.py`` sits in it, so every test module imports it as ``helpers``."""

from __future__ import annotations

import csv
import fcntl
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

from autograder.course import config, demo, nbgrader_dir, notebooks

ROOT = Path(__file__).resolve().parents[1]  # the repository

FIXTURE = ROOT / "tests" / "fixtures" / "course"
ENV = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}


def make_course(tmp: Path, source: Path = FIXTURE, toml: str | None = None) -> Path:
    """A course under ``tmp``: course.toml, solutions/a3 and the real nbgrader config."""
    (tmp / "autograder").mkdir(parents=True)
    (tmp / "course.toml").write_text(toml or (source / "course.toml").read_text())
    solutions = tmp / "solutions" / "a3"
    solutions.mkdir(parents=True)
    for nb in sorted((source / "solutions" / "a3").glob("*.ipynb")):
        (solutions / nb.name).write_bytes(nb.read_bytes())
    (tmp / "autograder" / "nbgrader_config.py").write_text(
        (ROOT / "autograder" / "nbgrader_config.py").read_text()
    )
    return tmp


def autograder(
    root: Path, *args: str, timeout: int = 1800, env: dict | None = None
) -> subprocess.CompletedProcess:
    """``python -m autograder --root ROOT ARGS``, as the Makefile runs it (in ``env``)."""
    cmd = [sys.executable, "-m", "autograder", "--root", str(root), *args]
    proc = subprocess.run(
        cmd, cwd=ROOT, env=env or ENV, capture_output=True, text=True, timeout=timeout
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    return proc


def grades(root: Path) -> dict[tuple[str, str], dict[str, str]]:
    with open(root / "autograder" / "out" / "grades.csv", newline="") as fh:
        return {(r["student"], r["notebook"]): r for r in csv.DictReader(fh)}


def gradebook_rows(gdir: Path) -> list[tuple]:
    con = sqlite3.connect(gdir / "gradebook.db")
    try:
        assert con.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        return sorted(
            con.execute(
                "SELECT student.id, notebook.name, base_cell.name, grade.auto_score, "
                "grade.manual_score, grade.needs_manual_grade FROM grade "
                "JOIN submitted_notebook ON grade.notebook_id = submitted_notebook.id "
                "JOIN notebook ON submitted_notebook.notebook_id = notebook.id "
                "JOIN submitted_assignment ON submitted_notebook.assignment_id = "
                "submitted_assignment.id JOIN student ON submitted_assignment.student_id = "
                "student.id JOIN base_cell ON grade.cell_id = base_cell.id"
            ).fetchall()
        )
    finally:
        con.close()


def student_record(gdir: Path, student: str, assignment: str = "a3") -> dict | None:
    """The run last recorded for ``student`` in the course directory ``gdir``
    (``autograder/marking/records.py``), as JSON; None when there is none."""
    path = gdir / "records" / assignment / f"{student}.json"
    return json.loads(path.read_text())["run"] if path.exists() else None


def graded_tiny_demo(dest: Path) -> tuple[Path, str]:
    """The tiny course's demo class graded by one ``make grade`` (``grade --jobs 2``), copied to
    ``dest`` (which must not exist); returns the copy's root and what grading printed.

    Graded once per test run, for every module that starts from it (test_grade,
    test_gradescope): in the run's shared folder (conftest.py), under a lock, since
    pytest-xdist runs modules in separate processes. A course directory holds no absolute path,
    so the copy grades on as the original would (test_tiny_demo_rerun_is_idempotent)."""
    shared = Path(os.environ["A3_TEST_SHARED"]) / "tiny-demo"
    shared.mkdir(parents=True, exist_ok=True)
    printed = shared / "stdout.txt"
    with open(shared / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not printed.exists():
            shutil.rmtree(shared / "course", ignore_errors=True)  # a failed try before
            root = make_course(shared / "course")
            printed.write_text(autograder(root, "grade", "--jobs", "2").stdout)
    shutil.copytree(shared / "course", dest, symlinks=True)
    return dest, printed.read_text()


def course_sources(root: Path) -> tuple[demo.Sources, nbgrader_dir.GradingDir]:
    course = config.load(root)
    gdir = nbgrader_dir.real(course)
    nbgrader_dir.generate_assignment(course, gdir)
    names = course.notebooks()
    src = demo.Sources(
        source={n: notebooks.read(gdir.source / f"{n}.ipynb") for n in names},
        released={n: notebooks.read(gdir.release / f"{n}.ipynb") for n in names},
    )
    return src, gdir
