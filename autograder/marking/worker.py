"""Grade one student: the one child process per student that ``grading.py`` starts
(``launcher.run``: forked from a server that has imported nbgrader and torch once,
``launcher.launch``). This module is the child's side only; the grader's is ``launcher.py``.
By hand::

    python -m autograder.marking.worker ROOT ASSIGNMENT STUDENT --cell-timeout S --result FILE

1. Runs nbgrader's autograde on each notebook of ``ROOT/intake/STUDENT/ASSIGNMENT/`` in turn
   (one notebook at a time, so a notebook nbgrader cannot grade costs only itself: nbgrader
   otherwise deletes the student's whole graded folder). The intake staged each notebook with
   its locked and test cells in their graded form, so nbgrader does not overwrite cells
   (``OverwriteCells`` is left out); its kernel runs the student's code, never a test.
2. Each notebook's tests run right after its cells, while its kernel still runs
   (``gradeexec.GradeExecute``): they ask the kernel for the student's objects from this
   process, which never runs student code (``judge.judge_live``, ``remote.py``). The
   verdicts go into the gradebook (each test's score is its passed checks' points, whatever
   nbgrader concluded from the cell's outputs) and into the graded notebook (each test cell
   shows its checks). When a judge cell fails (the course's
   fault), the notebooks are scored 0 and the student is left unfinished (``done`` false),
   so the next ``make grade`` grades them again. A notebook whose tests met a ``NameError``
   while grading left cells out is graded once more with every cell run, and the better
   grading stands (:func:`needs_second_try`: a name only a skipped cell binds, read where
   the scan of names cannot see it, costs the student nothing).
3. Zeroes in the gradebook the assignment notebooks that were not graded (missing or failed:
   nbgrader would leave them looking like "needs manual grading"). No nbgrader feedback: its
   pages show every test cell's source; ``feedback.py`` writes the feedback pages
   from the verdicts (``report.write_reports``).

Progress goes to ``FILE`` (JSON, rewritten after every step, so a killed worker still says
what it finished)::

    {"student": str, "done": bool, "judge_error": str, "judge_seconds": float,
     "notebooks": {name: {"graded": bool, "error": str, "timeouts": [grade ids or cell
                   numbers], "seconds": float, "verdicts": {grade id: verdict},
                   "skipped": [cell indices not run], "first_error": {"cell", "words"} or
                   None, "session": the tests' request counts, "rerun": graded again with
                   every cell run, and that grading stands (absent: not graded again)}}}

Everything student code can reach runs in the kernels nbgrader starts; this process only
talks to them, and ``--sandbox LIMITS`` (JSON, see ``limits.py``) starts every kernel in the
sandbox of ``sandbox.py`` with those limits.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import sys
import tempfile
import time
import traceback
from pathlib import Path

from autograder.course import notebooks
from autograder.course.config import REPO_ROOT
from autograder.course.gradebook import record_verdicts, zero_notebooks
from autograder.course.limits import Limits
from autograder.course.nbgrader_dir import GradingDir, load_config
from autograder.course.spec import annotate, grade_id, is_solution, spec_path, verdicts_from_json

# The worker's own address space: nbgrader, the executed notebook (outputs capped at
# [sandbox] output_kb per cell and 16 MB per notebook), torch and the checks' tensors.
WORKER_MEMORY_MB = 6144


def gradebook_fault(err: BaseException | None) -> bool:
    """Whether ``err`` came from the gradebook (SQLite's own ``OperationalError``, such as
    "database is locked" past the wait, anywhere in its chain): the grading run's fault, never
    the student's, whose code runs in other processes and cannot raise in this one. Told by the
    exception's type, never by text a kernel could have written into a log."""
    import sqlite3

    import sqlalchemy.exc

    seen: set[int] = set()
    while err is not None and id(err) not in seen:
        seen.add(id(err))
        if isinstance(err, (sqlite3.OperationalError, sqlalchemy.exc.OperationalError)):
            return True
        err = err.__cause__ or err.__context__
    return False


def _load_config(root: Path, assignment: str, student: str, cell_timeout: int):
    from nbgrader.converters import Autograde
    from nbgrader.preprocessors import OverwriteCells

    cfg = load_config(root)
    cfg.CourseDirectory.root = str(root)
    cfg.CourseDirectory.db_url = GradingDir(root, assignment).db_url
    cfg.CourseDirectory.submitted_directory = "intake"
    cfg.CourseDirectory.assignment_id = assignment
    cfg.CourseDirectory.student_id = student
    cfg.Execute.timeout = cell_timeout
    cfg.BaseConverter.force = True
    # The intake already put every locked and test cell back in its graded form (docstrings, not
    # the visible checks that nbgrader's gradebook holds): nbgrader must not overwrite them.
    steps = Autograde.class_traits()["sanitize_preprocessors"].default()
    cfg.Autograde.sanitize_preprocessors = [s for s in steps if s is not OverwriteCells]
    return cfg


def inspect(path: Path, skipped: list[int] = ()) -> dict:
    """The cells of an autograded notebook that ran past their time limit, and the first error
    raised in the student's own code (an answer cell): its cell and, when it is one of
    Python's own, the exception's name (``judging.raised_words``: the kernel's words are never
    repeated). ``skipped``: the cells grading did not run (their outputs are the student's)."""
    from course_lib.grading.judging import raised_words

    nb = notebooks.read(path)
    timeouts, first_error = [], None
    for i, cell in enumerate(nb.cells):
        outputs = [] if i in skipped else cell.get("outputs", [])
        errors = [o for o in outputs if o.output_type == "error"]
        if any(o.get("ename") == notebooks.TIMEOUT_ENAME for o in errors):
            timeouts.append(grade_id(cell) or f"cell {i}")
        elif errors and first_error is None and is_solution(cell):
            first_error = {
                "cell": grade_id(cell) or f"cell {i}",
                "words": raised_words(str(errors[0].get("ename", ""))),
            }
    return {"timeouts": timeouts, "first_error": first_error}


def grade_student(
    root: Path,
    assignment: str,
    student: str,
    cell_timeout: int,
    result_file: Path,
    limits: Limits | None = None,
) -> dict:
    """Grade every staged notebook of ``student``, each kernel in the sandbox of ``limits``."""
    from autograder.kernels.sandbox import Sandbox
    from autograder.marking import gradeexec

    cfg = _load_config(root, assignment, student, cell_timeout)
    sandbox = Sandbox(limits or Limits())
    sandbox.configure(cfg)
    gradeexec.configure(cfg, sandbox.limits)
    try:
        return _grade(cfg, root, assignment, student, result_file)
    finally:
        sandbox.cleanup()


def _grade(cfg, root: Path, assignment: str, student: str, result_file: Path) -> dict:
    from nbgrader.coursedir import CourseDirectory

    coursedir = CourseDirectory(config=cfg)
    staged = sorted(p.stem for p in (root / "intake" / student / assignment).glob("*.ipynb"))
    released = sorted(p.stem for p in (root / "release" / assignment).glob("*.ipynb"))
    result: dict = {"student": student, "done": False, "notebooks": {}}

    def save() -> None:
        notebooks.write_bytes(result_file, json.dumps(result, indent=1).encode())

    # A notebook graded in an earlier run but not handed in (readable) now must not keep its
    # old graded copy (nbgrader would make feedback from it).
    for old in (root / "autograded" / student / assignment).glob("*.ipynb"):
        if old.stem not in staged:
            old.unlink()

    errors = _Errors()
    logging.getLogger().addHandler(errors)
    verdict_dir = Path(tempfile.mkdtemp(prefix="a3-verdicts-"))
    for name in staged:
        start = time.perf_counter()
        result["notebooks"][name] = {"graded": False, "error": "", "timeouts": [],
                                     "seconds": 0.0, "verdicts": {}}  # fmt: skip
        save()
        coursedir.notebook_id = name
        cfg.GradeExecute.spec_file = str(spec_path(root / "judges" / assignment, name))
        cfg.GradeExecute.verdict_file = str(verdict_dir / f"{name}.json")
        graded = root / "autograded" / student / assignment / f"{name}.ipynb"
        entry = _grade_notebook(cfg, coursedir, graded, errors, result, verdict_dir)
        entry["seconds"] = round(time.perf_counter() - start, 2)
        result["notebooks"][name] = entry
        save()
    shutil.rmtree(verdict_dir, ignore_errors=True)
    if result.get("gradebook_fault"):  # not the student's fault: not done, graded again
        return result

    graded = {
        name: root / "autograded" / student / assignment / f"{name}.ipynb"
        for name, entry in result["notebooks"].items()
        if entry["graded"]
    }
    db_url = coursedir.db_url
    try:
        if graded and not record_student(root, assignment, student, db_url, graded, result):
            save()
            return result
        ungraded = [n for n in released if not result["notebooks"].get(n, {}).get("graded")]
        if ungraded:
            zero_notebooks(db_url, assignment, student, ungraded)
    except Exception as err:
        if not gradebook_fault(err):
            raise
        traceback.print_exc()
        result["gradebook_fault"] = True
        save()
        return result
    result["done"] = True
    save()
    return result


def _grade_notebook(
    cfg, coursedir, graded: Path, errors: _Errors, result: dict, scratch: Path
) -> dict:
    """Grade ``coursedir.notebook_id`` (:func:`_autograde`) with the cells the tests do not
    need left out; when :func:`needs_second_try`, once more with every cell run. The better
    grading stands (the first on a tie; the second: ``rerun`` true, the report notes
    ``rows.RERUN_NOTE``), with its graded notebook (``graded``; the first is kept in
    ``scratch`` meanwhile)."""

    def once(run_skipped: bool) -> dict:
        cfg.GradeExecute.run_skipped = run_skipped
        return _autograde(cfg, coursedir, graded, errors, result)

    entry = once(False)
    if not needs_second_try(entry) or result.get("gradebook_fault"):
        return entry
    first = scratch / f"{graded.stem}.first.ipynb"
    shutil.copyfile(graded, first)
    second = once(True)
    if second["graded"] and total(second) > total(entry):
        return {**second, "rerun": True}
    if second["graded"]:  # no better: the first grading stands, and its graded notebook
        shutil.copyfile(first, graded)
        return {**entry, "rerun": False}
    if result.get("gradebook_fault"):
        return second
    return {**once(False), "rerun": False}  # the second failed: graded as the first time


def _autograde(cfg, coursedir, graded: Path, errors: _Errors, result: dict) -> dict:
    """nbgrader's autograde of ``coursedir.notebook_id`` (the tests run on its live kernel:
    ``gradeexec.GradeExecute``); returns its entry of :func:`_grade`'s result (``graded``: the
    autograded notebook it writes). A judge or gradebook fault goes into ``result``."""
    from nbgrader.converters import Autograde

    entry: dict = {"graded": False, "error": "", "timeouts": [], "verdicts": {}}
    verdict_file = Path(cfg.GradeExecute.verdict_file)
    verdict_file.unlink(missing_ok=True)
    try:
        Autograde(coursedir=coursedir, parent=None, config=cfg).start()
        if not graded.exists():
            raise RuntimeError("nbgrader could not grade this notebook (see the log)")
        judged = json.loads(verdict_file.read_text()) if verdict_file.exists() else {}
        entry["skipped"] = [i for i in judged.get("skipped", []) if isinstance(i, int)]
        entry.update(inspect(graded, entry["skipped"]), graded=True)
        if "verdicts" in judged:
            entry["verdicts"], entry["session"] = judged["verdicts"], judged["session"]
        else:
            result["judge_error"] = judged.get("judge_error", "the tests did not run")
    except Exception as err:
        entry["error"] = _cause(err, errors.messages)[:500]
        traceback.print_exc()
        result["gradebook_fault"] = result.get("gradebook_fault") or gradebook_fault(err)
    finally:
        errors.messages.clear()
    return entry


def needs_second_try(entry: dict) -> bool:
    """Whether a graded notebook is graded again with every cell run (``run_skipped``): a
    request of its tests raised ``NameError`` (the kernel's reply names the exception's type
    only, never the name: its words are not trusted) while grading left cells out. Such a
    name may be one that only a skipped cell binds, read where the scan of names
    (``spec.Spec.skipped_cells``) does not see it (a magic's code, ``%%time``): on the
    student's machine it was bound, so grading runs what the student ran instead of scoring
    0. It costs that student's own grading time, within their limits, nobody else's."""
    from course_lib.grading.judging import raised_words

    if not (entry.get("graded") and entry.get("skipped")):
        return False
    words = raised_words("NameError")
    return any(
        not check.get("passed") and words in str(check.get("message", ""))
        for verdict in entry.get("verdicts", {}).values()
        for check in verdict.get("checks", [])
    )


def total(entry: dict) -> float:
    """The points of a notebook's verdicts."""
    return sum(float(v.get("score", 0)) for v in entry.get("verdicts", {}).values())


def record_student(
    root: Path, assignment: str, student: str, db_url: str, graded: dict[str, Path], result: dict
) -> bool:
    """Record the verdicts on the ``graded`` notebooks (name -> autograded path): gradebook,
    graded notebooks, ``result``. When the tests could not run (``result["judge_error"]``, a
    fault of the course) score them 0 and return False (the student stays unfinished)."""
    if result.get("judge_error"):
        zero_notebooks(db_url, assignment, student, list(graded))
        logging.error("judging %s failed: %s", student, result["judge_error"])
        return False
    for name, path in graded.items():
        found = verdicts_from_json(result["notebooks"][name]["verdicts"])
        record_verdicts(db_url, assignment, student, name, found)
        graded_nb = notebooks.read(path)
        annotate(graded_nb, found)
        notebooks.write(graded_nb, path)
    return True


class _Errors(logging.Handler):
    """Keeps the error messages nbgrader logs while it grades one notebook."""

    def __init__(self):
        super().__init__(level=logging.ERROR)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def _cause(err: Exception, logged: list[str]) -> str:
    """Why grading a notebook failed, in words: nbgrader's own exception only says "see the
    above traceback", so a dead kernel is told from what it logged."""
    if any("Kernel died" in m or "DeadKernelError" in m for m in logged):
        return "the kernel died (a crash, an exit or the memory limit): no tests ran"
    return f"{type(err).__name__}: {err}"


def limit_memory(megabytes: int) -> None:
    """Cap this process's address space (its soft limit: the kernels it starts set their own
    with ``prlimit``), so a flood that got past the output caps fails this student only."""
    import resource

    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    soft = megabytes * 2**20
    if hard != resource.RLIM_INFINITY:
        soft = min(soft, hard)
    resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("By hand::")[0])
    parser.add_argument("root", type=Path)
    parser.add_argument("assignment")
    parser.add_argument("student")
    parser.add_argument("--cell-timeout", type=int, required=True)
    parser.add_argument("--result", type=Path, required=True)
    parser.add_argument("--sandbox", type=Limits.from_json, default=Limits(), help="limits (JSON)")
    args = parser.parse_args(argv)
    limit_memory(WORKER_MEMORY_MB)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    # The kernels inherit this environment: keep this package off their import path.
    paths = os.environ.get("PYTHONPATH", "").split(os.pathsep)
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in paths if p and p != str(REPO_ROOT))
    grade_student(
        args.root.resolve(),
        args.assignment,
        args.student,
        args.cell_timeout,
        args.result,
        args.sandbox,
    )


if __name__ == "__main__":
    sys.exit(main())
