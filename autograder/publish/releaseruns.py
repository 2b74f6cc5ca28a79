"""``make release``'s runs: every solution and every blank notebook executed in quick mode,
judged, and checked (``release.py`` runs only the notebooks that changed, ``releasehistory.py``).

3. every solution notebook runs without an error (visible checks included) and the judge
   gives every check of every test its points (:func:`check_solution_run`);
4. every released notebook, run as the grader runs it (tests in their graded form,
   :func:`graded_form`), scores nothing: the judge fails every check, and the setup and given
   code raise nothing but the stubs' ``NotImplementedError`` (or the ``NameError`` of a name a
   stub never defined, :data:`STUB_ERRORS`) (:func:`check_blank_run`).
"""

from __future__ import annotations

import os
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from nbformat import NotebookNode

from autograder.course import notebooks
from autograder.course.config import Course
from autograder.course.spec import Spec, TestVerdict, grade_id, is_solution, is_test, meta
from autograder.handin import restore
from autograder.kernels.execute import execute_in_child, read_verdicts

# Errors the given code of a blank notebook may raise: a stub, or a name a stub never defined.
STUB_ERRORS = {"NotImplementedError", "NameError"}


def check_solution_run(name: str, nb: NotebookNode, verdicts: dict[str, TestVerdict]) -> list[str]:
    """Problems of an executed solution notebook: any error (visible checks included), a
    graded cell writing to stderr (nbgrader's Validate button fails a notebook for that: a
    warning would tell a student with a right answer that it failed), any check of the judge
    short of its points."""
    problems = []
    for i, cell in enumerate(nb.cells):
        error = notebooks.cell_error(cell)
        where = grade_id(cell) or f"cell {i}"
        if error:
            problems.append(f"{name} (solution) {where}: raised {error}")
        elif meta(cell).get("grade") and any(
            o.output_type == "stream" and o.get("name") == "stderr" for o in cell.get("outputs", [])
        ):
            problems.append(
                f"{name} (solution) {where}: writes to stderr (a warning?), so nbgrader's "
                "Validate fails it"
            )
    for gid, verdict in verdicts.items():
        for item in verdict.lost():
            problems.append(
                f"{name} (solution) {gid}: the judge fails {item['description']!r}: "
                f"{item['message']}"
            )
    return problems


def check_blank_run(
    name: str, nb: NotebookNode, verdicts: dict[str, TestVerdict] | None = None
) -> list[str]:
    """Problems of an executed blank notebook (the release in its graded form): a check the
    judge passes (a free point), or given code failing for another reason than the stubs."""
    problems = []
    seen_solution = False
    for i, cell in enumerate(nb.cells):
        gid = grade_id(cell) or f"cell {i}"
        error = notebooks.cell_error(cell)
        if not is_test(cell) and error:
            if not seen_solution or error.split(":")[0] not in STUB_ERRORS:
                problems.append(f"{name} (blank) {gid}: given code raised {error}")
        seen_solution = seen_solution or is_solution(cell)
    for gid, verdict in (verdicts or {}).items():
        for item in verdict.checks:
            if item["passed"]:
                problems.append(
                    f"{name} (blank) {gid}: {item['description']!r} passes on the blank "
                    "notebook (a free point)"
                )
    return problems


def graded_form(released: NotebookNode, spec: Spec) -> NotebookNode:
    """A copy of ``released`` as the grader runs it: its tests in their graded form."""
    nb = notebooks.nbformat.from_dict(released)
    restore.install_graded_forms(nb, released, spec)
    return nb


def run_checks(
    course: Course,
    sources: dict[str, NotebookNode],
    released: dict[str, NotebookNode],
    specs: dict[str, Spec],
    jobs: int,
    log=print,
) -> list[str]:
    """Execute every solution (``sources``: what nbgrader got) and every blank notebook in its
    graded form (``jobs`` at a time), judge them and check them."""
    timeout = course.grade.cell_timeout
    threads = max(1, (os.cpu_count() or 1) // max(jobs, 1))
    problems: list[str] = []
    with tempfile.TemporaryDirectory(prefix="release-check-") as tmp:
        runs = []
        spec_files = {name: Path(tmp) / f"{name}.spec.json" for name in sources}
        for name, path in spec_files.items():
            path.write_text(specs[name].to_json())
        for name in sources:
            for kind, nb in (
                ("solution", sources[name]),
                ("blank", graded_form(released[name], specs[name])),
            ):
                src = Path(tmp) / f"{kind}-{name}.ipynb"
                notebooks.write(nb, src)
                runs.append((name, kind, src, Path(tmp) / f"{kind}-{name}.out.ipynb"))
        with ThreadPoolExecutor(max_workers=max(jobs, 1)) as pool:
            errors = list(
                pool.map(
                    lambda r: execute_in_child(r[2], r[3], timeout, threads, spec_files[r[0]]),
                    runs,
                )
            )
        for (name, kind, _, out), error in zip(runs, errors, strict=True):
            if error:
                problems.append(f"{name} ({kind}): could not run: {error}")
                continue
            executed = notebooks.read(out)
            verdicts = read_verdicts(out)
            check = check_solution_run if kind == "solution" else check_blank_run
            problems += check(name, executed, verdicts)
            seconds, slowest = max(cell_seconds(executed), default=(0.0, ""))
            log(f"  {name} ({kind}): slowest cell {slowest} took {seconds:.1f} s")
            if seconds > timeout / 3:
                log(f"  warning: that is over a third of the {timeout} s cell limit of grading")
    return problems


def cell_seconds(nb: NotebookNode) -> list[tuple[float, str]]:
    """(seconds, cell name) of every executed cell, from the timings nbclient records."""
    from datetime import datetime

    found = []
    for i, cell in enumerate(nb.cells):
        timing = cell.get("metadata", {}).get("execution", {})
        try:
            busy = datetime.fromisoformat(timing["iopub.status.busy"].replace("Z", "+00:00"))
            idle = datetime.fromisoformat(timing["iopub.status.idle"].replace("Z", "+00:00"))
        except (KeyError, ValueError):
            continue
        found.append(((idle - busy).total_seconds(), grade_id(cell) or f"cell {i}"))
    return found
