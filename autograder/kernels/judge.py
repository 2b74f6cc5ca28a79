"""The judge: every autograded point is decided here, outside the student's kernel.

A test's *checks* (the judge cell after it, instructor only; :mod:`autograder.course.spec` reads
them into a notebook's :class:`~autograder.course.spec.Spec`), one per behaviour with its points
(:mod:`course_lib.grading.judging`), run in the process that drives the student's kernel
and never runs student code, while that kernel still runs: they ask it for the student's
objects and judge the replies.

This module runs the judge cells and their checks (:func:`judge_notebook`) on the student's
objects in the notebook's kernel while it still runs (:func:`judge_live`, through
``remote.KernelSession``), within :data:`JUDGE_SECONDS`. Every live kernel is judged through
the one run-then-judge loop (``runjudge.judge_kernel``): grading (``gradeexec.py``), the
release checks and a variant graded alone (``execute.py``, ``variants.grade_variants``),
and the versions graded in one kernel, the variant sets and the audit's mutants
(``sharedkernel.py``).
"""

from __future__ import annotations

import builtins
import time
from dataclasses import asdict

from nbformat import NotebookNode

from autograder.course.spec import Spec, TestVerdict, grade_id, is_test, verdicts_to_json

JUDGE_SECONDS = 300  # every request of one notebook's tests together


class JudgeError(RuntimeError):
    """A judge cell itself failed (a bug of the course, not of the student)."""


def collect_checks(spec: Spec) -> dict[str, list]:
    """Run ``spec``'s judge cells, in order, in one fresh namespace; return the checks they
    register, by test. Raises :class:`JudgeError` when a judge cell fails."""
    from course_lib.grading import judging

    namespace: dict = {"__name__": f"judge_{spec.name}", "__builtins__": builtins}
    collector = judging.Collector()
    with judging.collect(collector):
        for judge in spec.judges:
            collector.test = judge.test
            where = f"<judge cell {judge.cell} of {spec.name}>"
            try:
                exec(compile(judge.source, where, "exec"), namespace)  # noqa: S102 (course code)
            except Exception as err:
                raise JudgeError(f"{where} failed: {type(err).__name__}: {err}") from err
    checks: dict[str, list] = {}
    for item in collector.checks:
        checks.setdefault(item.test, []).append(item)
    return checks


def judge_notebook(
    spec: Spec, nb: NotebookNode, student=None, salt: str = "", checks: dict | None = None
) -> dict[str, TestVerdict]:
    """The verdict on every test of ``spec`` for the notebook ``nb``, its checks asking
    ``student`` (a ``course_lib.grading.judging.Student`` on the notebook's live kernel;
    None: every check that asks fails as not graded). ``checks``: what
    :func:`collect_checks` made of ``spec`` (made again when None)."""
    from course_lib.grading import judging

    checks = collect_checks(spec) if checks is None else checks
    own_words = "\n".join(j.source for j in spec.judges)
    errors = _cell_errors(nb)
    course = judging.Course(student, spec.course, spec.answers) if student is not None else None
    verdicts = {}
    for gid, test in spec.tests.items():
        results = judging.evaluate(checks.get(gid, []), student, salt, own_words, course)
        verdicts[gid] = TestVerdict(gid, test.points, [asdict(r) for r in results], errors.get(gid))
    return verdicts


def _cell_errors(nb: NotebookNode) -> dict[str, str]:
    """The error name that stopped each test cell of the executed ``nb`` (only Python's own
    names: the feedback shows it)."""
    from course_lib.grading.judging import KNOWN_ERRORS

    found = {}
    for cell in nb.cells:
        if is_test(cell):
            for output in cell.get("outputs", []):
                if output.get("output_type") == "error":
                    name = str(output.get("ename", ""))
                    found[grade_id(cell)] = name if name in KNOWN_ERRORS else "an error"
    return found


def judge_live(
    spec: Spec,
    nb: NotebookNode,
    info: dict,
    salt: str = "",
    checks: dict | None = None,
    request_seconds: float = 60.0,
) -> tuple[dict, dict]:
    """Judge the executed notebook ``nb`` while its kernel (connection ``info``) still runs:
    the checks ask the kernel through ``remote.KernelSession``, each request within
    ``request_seconds`` (grading: the cell time limit) and all of them within
    :data:`JUDGE_SECONDS`. Returns the verdicts as JSON and what the session saw
    (``requests``, ``answered``, ``broken``, ``seconds``)."""
    from autograder.kernels.remote import KernelSession
    from course_lib.grading import judging

    start = time.perf_counter()
    with KernelSession(info, request_seconds, deadline_seconds=JUDGE_SECONDS) as session:
        session.start()
        student = judging.Student(session)
        verdicts = verdicts_to_json(judge_notebook(spec, nb, student, salt, checks))
        session.forget()
        stats = {
            "requests": session.requests,
            "answered": session.answered,
            "broken": session.broken or "",
            "seconds": round(time.perf_counter() - start, 2),
        }
    return verdicts, stats
