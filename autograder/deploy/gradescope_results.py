"""Gradescope's ``results.json`` for one student: a test per graded cell (:func:`tests`,
:func:`test`) under a summary (:func:`summary`); ``gradescope.results`` puts them together.

``results.json``, as ``gradescope.results`` writes it for the container's one student:

- one test per graded cell, in notebook order, numbered ``<notebook>.<cell>``. An autograded
  test is named by its notebook, grade id and docstring (never its checks' source);
  its ``score`` is the judge's (the gradebook's, as in grades.csv) and its ``output`` the
  verdict a graded notebook shows: each behaviour checked, passed or lost, and why. One entry
  per test, not per check: the checks are its output's lines. A notebook that could not be
  graded gives each of its tests 0 and says why;
- a written answer is a test with ``score`` 0 and ``max_score`` its points, tagged
  ``manual-grading``, its output saying that it is graded by hand in Gradescope (add manually
  graded questions to the assignment's outline for them);
- extra-credit notebooks (``[grade] extra_credit``): their tests are named
  ``Extra credit: ...``, and the top-level ``score`` (the autograded points) includes what
  counts of them after ``[grade] extra_credit_cap`` (``rows.count_extra_credit``), so it
  can exceed the autograder points set in Gradescope by at most the cap;
- top level: ``score``, ``output`` (the points, then each notebook's flags and notes, as text),
  ``stdout_visibility`` ``hidden`` (the grading log, for instructors), ``execution_time`` and
  ``extra_data`` (per-notebook points and flags, and what the sandbox enforced). Every test is
  ``visible`` (:data:`VISIBILITY`). Students read it all: the instructor-only flag ``review``
  and the advisory scan's notes are left out everywhere (``rows.for_student``).
"""

from __future__ import annotations

import ast

from autograder.course import spec
from autograder.course.config import Course
from autograder.reports import pages, rows

VISIBILITY = "visible"  # of every test: names and verdicts, never its checks' source


def docstring(source: str) -> str:
    """The first line of the docstring that opens a test's graded source ("" if none)."""
    try:
        text = ast.get_docstring(ast.parse(source)) or ""
    except SyntaxError:
        return ""
    return text.strip().split("\n")[0].strip()


def tests(specs: dict[str, spec.Spec], mine: dict[str, rows.Row], worker: dict) -> list[dict]:
    """One test per graded cell of every notebook of ``specs`` (in order, numbered
    ``<notebook>.<cell>``), from the student's ``mine`` (notebook -> row) and the worker's
    result file's ``notebooks`` (``worker``: notebook -> its verdicts as JSON)."""
    out = []
    for i, (name, nb_spec) in enumerate(specs.items(), 1):
        row = mine[name]
        verdicts = spec.verdicts_from_json(worker.get(name, {}).get("verdicts", {}))
        graded = bool(verdicts) and "failed" not in row.flags
        for j, cell in enumerate(nb_spec.graded, 1):
            out.append(test(f"{i}.{j}", nb_spec, cell, row, verdicts if graded else None))
    return out


def test(
    number: str,
    nb_spec: spec.Spec,
    cell: spec.GradedCell,
    row: rows.Row,
    verdicts: dict[str, spec.TestVerdict] | None,
) -> dict:
    """results.json's test ``number`` for ``cell`` of ``row``'s notebook: an autograded test
    with its judge's verdict (``verdicts``: None where the notebook was not graded, the test
    then 0 and why), or a written answer (0 here, graded by hand in Gradescope)."""
    score, most = row.cells.get(cell.grade_id, (0.0, cell.points))
    entry: dict = {"number": number, "max_score": most, "visibility": VISIBILITY}
    prefix = f"{'Extra credit: ' if row.extra else ''}{row.notebook} / {cell.grade_id}: "
    if not cell.auto:
        entry["name"] = f"{prefix}written answer"
        entry["score"] = 0.0
        entry["output"] = (
            f"A written answer worth {most:g} point(s): graded by hand in Gradescope, "
            "not by the autograder. Its 0 here is no grade: its points come from the "
            "manually graded question."
        )
        entry["tags"] = [row.notebook, "manual-grading"]
        return entry
    source = nb_spec.tests.get(cell.grade_id)
    entry["name"] = f"{prefix}{docstring(source.graded_source) if source else ''}".rstrip(": ")
    entry["score"] = score if verdicts is not None else 0.0
    verdict = (verdicts or {}).get(cell.grade_id)
    if verdicts is not None and verdict is not None:
        entry["output"] = spec.verdict_text(verdict)
    else:
        why = "; ".join(row.notes) or row.flag_text
        entry["output"] = f"Autograder: 0 / {most:g} points\n  not graded: {why}\n"
    entry["tags"] = [row.notebook, "extra-credit"] if row.extra else [row.notebook]
    return entry


def summary(course: Course, mine: dict[str, rows.Row], notes: list[str]) -> tuple[float, str]:
    """results.json's ``score`` (the autograded points, with the extra credit that counts)
    and ``output``: the points, then each notebook's flags and notes, then ``notes`` (the
    files not graded)."""
    regular = rows.regular(list(mine.values()))
    extra = rows.extra_credit(list(mine.values()))
    earned, counted = rows.extra_points(extra)  # written answers are 0 here: autograded
    points = sum(r.autograded for r in regular)
    line = f"Autograded: {pages.num(points)} / "
    line += f"{pages.num(sum(r.autograded_max for r in regular))} points"
    if extra:
        line += (
            f", plus {pages.num(earned)} / "
            f"{pages.num(sum(r.autograded_max for r in extra))} extra credit earned, "
            f"{pages.num(counted)} of it in the score (extra credit adds at most "
            f"{pages.num(course.grade.extra_credit_cap)} points)"
        )
    lines = [line + "."]
    manual = sum(r.manual_max for r in mine.values())
    if manual:
        lines.append(
            f"Written answers ({pages.num(manual)} point{'' if manual == 1 else 's'}) are "
            "graded by hand in Gradescope: they are not in this score."
        )
    lines.append("Each test lists the behaviours it checks, passed or lost, and why.\n")
    for row in mine.values():
        flags = [f for f in row.flags if f != "needs-manual"]
        text = ", ".join(f"{f} ({rows.FLAG_HELP[f]})" for f in flags) if flags else "ok"
        lines.append(f"{row.notebook}: {text}")
        lines += [f"  {note}" for note in row.notes]
    if notes:
        lines += ["\nFiles not graded:", *(f"  {note}" for note in notes)]
    return round(points + counted, 6), "\n".join(lines) + "\n"
