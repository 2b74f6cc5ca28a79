"""The canary: the solutions graded as a student first, so a broken set-up fails loudly.

A grading machine that cannot grade (the kernel cannot import ``course_lib``, a virtual
environment that belongs to another checkout, a sandbox that hides what the notebooks need,
a given cell that fails there) would otherwise give every student zero and exit as if all
were well. So before grading any student, ``make grade`` grades the solutions (the demo
class's full-marks student, ``demo.full``) exactly as it grades a student: same intake,
worker, sandbox, time limits and judge, in a course directory of its own
(``<out>/canary/class`` or ``<out>/canary/demo``, with its own gradebook) so it never
appears among the students. Every autograded point must be earned; otherwise grading stops
before any student is graded, with what failed (the course's own words: notebook, test,
check, or the given cell that raised) and exit status 1, and the next run tries again.

A canary that passed is not graded again until something it depends on changes: the
assignment, the cell time limit, the sandbox limits, the Python that grades, or
``course_lib``'s code (:func:`key`). Its result is kept in its folder, or, when the environment
names one in ``A3_CANARY_RECORDS``, in that folder by key (the test suite shares one).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from . import demo, intake, judge, nbgrader_dir, notebooks, worker
from .config import Course
from .gradebook import read_scores
from .nbgrader_dir import GradingDir

STUDENT = "canary"
RESULT = "canary.json"
# A folder where canary results are kept by key instead of in each course directory: the test
# suite grades many copies of the same course, and one canary per distinct key is enough.
RECORDS_ENV = "A3_CANARY_RECORDS"


@dataclass(frozen=True)
class Verdict:
    """What the canary found: ``problems`` empty when every autograded point was earned."""

    problems: tuple[str, ...]
    graded: bool  # False: it passed before with the same key, and was not graded again

    @property
    def passed(self) -> bool:
        return not self.problems

    def message(self) -> str:
        lines = "\n".join(f"  - {p}" for p in self.problems[:20])
        return (
            "\nTHE CANARY FAILED: the solutions, graded exactly as a student would be, did not "
            "get every autograded point, so this machine or the course cannot grade correctly. "
            f"No student was graded (the next make grade grades them).\n{lines}\n"
            "Usual causes: the venv is not this checkout's (run make setup), a sandbox "
            "setting hides what the notebooks need, or a given cell or judge fails here."
        )


def folder(course: Course, gdir: GradingDir) -> GradingDir:
    """The canary's own course directory, beside the class's reports."""
    root = course.out_dir / "canary" / ("demo" if gdir.demo else "class")
    root.mkdir(parents=True, exist_ok=True)
    nbgrader_dir.write_derived_config(root, gdir.root / "nbgrader_config.py", "the canary")
    return GradingDir(root, gdir.assignment, demo=gdir.demo)


def fresh(cdir: GradingDir) -> None:
    """Empty the canary's course directory but for its nbgrader config."""
    import shutil

    for path in cdir.root.iterdir():
        if path.name == "nbgrader_config.py":
            continue
        if path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink()


def key(gdir: GradingDir, cell_timeout: int, limits_json: str) -> str:
    """What a passed canary depends on (see the module docstring); ``gdir``: the class's
    course directory, its assignment generated."""
    import course_lib

    digest = hashlib.sha256()
    parts = [gdir.source_stamp.read_text().strip(), str(cell_timeout), limits_json]
    parts += [sys.executable, str(Path(course_lib.__file__).resolve().parent)]
    for part in parts:
        digest.update(part.encode() + b"\0")
    for path in sorted(Path(course_lib.__file__).resolve().parent.rglob("*.py")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def check(course: Course, gdir: GradingDir, cell_timeout: int, threads: int, log=print) -> Verdict:
    """Grade the canary for the class in ``gdir`` (unless it passed before with the same key)."""
    cdir = folder(course, gdir)
    names = course.notebooks()
    sandbox = course.sandbox
    stamp = key(gdir, cell_timeout, sandbox.to_json())  # the class's assignment, generated
    shared = os.environ.get(RECORDS_ENV)
    record = Path(shared) / f"{stamp}.json" if shared else cdir.root / RESULT
    try:
        before = json.loads(record.read_text())
    except (OSError, ValueError):
        before = {}
    if before.get("key") == stamp and before.get("passed"):
        return Verdict((), graded=False)
    record.unlink(missing_ok=True)
    fresh(cdir)  # nbgrader refuses to change an assignment that has a submission
    nbgrader_dir.generate_assignment(course, cdir)

    released = {n: notebooks.read(cdir.release / f"{n}.ipynb") for n in names}
    src = demo.Sources(
        source={n: notebooks.read(cdir.source / f"{n}.ipynb") for n in names}, released=released
    )
    inbox = cdir.student_dir(cdir.submitted, STUDENT)
    for filename, data in demo.full(src).items():
        notebooks.write_bytes(inbox / filename, data)
    judges = {n: judge.Spec.from_json((cdir.judges / f"{n}.json").read_text()) for n in names}
    seen, staged = intake.read_student(cdir, STUDENT, released, judges, scan=False)
    intake.stage(cdir, seen, staged)
    log(f"  canary: grading the solutions as a student first ({len(names)} notebooks)")
    result, killed, _, seconds = worker.run(
        cdir, STUDENT, cell_timeout, course.grade.student_timeout, threads, sandbox
    )
    problems = problems_of(cdir, names, result, killed)
    notebooks.write_bytes(
        record, json.dumps({"key": stamp, "passed": not problems, "seconds": seconds}).encode()
    )
    if not problems:
        log(f"  canary: full marks ({seconds:.0f} s)")
    return Verdict(tuple(problems), graded=True)


def problems_of(cdir: GradingDir, names: list[str], result: dict, killed: bool) -> list[str]:
    """Why the canary's grading is not full marks (empty when it is)."""
    problems = []
    if killed:
        problems.append("the canary's grading ran past [grade] student_timeout")
    if result.get("judge_error"):
        problems.append(f"a judge cell failed: {result['judge_error'][:300]}")
    done = result.get("notebooks", {})
    for name in names:
        entry = done.get(name, {})
        if not entry.get("graded"):
            problems.append(f"{name}: not graded ({(entry.get('error') or 'no result')[:300]})")
            continue
        for gid in entry.get("timeouts", []):
            problems.append(f"{name}: cell {gid} ran past its time limit")
        for gid, verdict in entry.get("verdicts", {}).items():
            for item in verdict.get("checks", []):
                if not item.get("passed"):
                    problems.append(f"{name} {gid}: {item.get('description')!r} failed: "
                                    f"{str(item.get('message'))[:200]}")  # fmt: skip
        problems += given_cell_errors(cdir, name)
    if not problems:  # the gradebook must agree
        scores = read_scores(cdir.db_url, cdir.assignment, [STUDENT])
        for (_, name), cells in sorted(scores.items()):
            for cell in cells:
                if cell.auto and cell.score < cell.max - 1e-9:
                    problems.append(f"{name} {cell.grade_id}: {cell.score:g} of {cell.max:g}")
    return problems


def given_cell_errors(cdir: GradingDir, name: str) -> list[str]:
    """The cells of the canary's graded notebook that raised (the solution raises nowhere)."""
    path = cdir.student_dir(cdir.autograded, STUDENT) / f"{name}.ipynb"
    try:
        nb = notebooks.read(path)
    except Exception:
        return [f"{name}: its graded notebook cannot be read"]
    found = []
    for i, cell in enumerate(nb.cells):
        error = notebooks.cell_error(cell)
        if error:
            found.append(f"{name} {notebooks.grade_id(cell) or f'cell {i}'} raised {error}")
    return found
