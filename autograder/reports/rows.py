"""The rows of a grading run: one :class:`Row` per student and notebook (a notebook is one part
of the assignment), made once from the records and the gradebook (:func:`class_rows`), read by
every output (``report.py``, ``feedback.py``, ``classreport.py``, Gradescope's results).

A row's flags are any of :data:`FLAGS` (none: ok): missing failed timeout tampered renamed
needs-manual review late, in words in ``grades.csv`` and as the letters of :data:`FLAG_CODES`
in the summary and the class report (:data:`FLAG_HELP` says what each means). The flag
``review`` and its notes (those starting with :data:`REVIEW_NOTE`) are for the instructor only:
what the advisory scan (``tamper.py``) noted, worth no point either way. The pages and files a
student sees (``feedback.student_page``, ``feedback.py``, Gradescope's ``results.json``) show a
row through :func:`for_student`, which leaves them out.

Extra credit is capped: a student's optional parts add at most ``[grade] extra_credit_cap``
points above the regular total. :func:`count_extra_credit` sets what counts of every optional
part (``Row.counted``) once, when the rows are made (:func:`class_rows`); every output reads it
(``Row.total``, :func:`extra_points`): grades.csv, the summary, the class report, canvas.csv,
the feedback pages and Gradescope's score, which show earned and counted both.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Protocol

from autograder.course.config import Course
from autograder.course.gradebook import Scores, read_scores
from autograder.course.nbgrader_dir import GradingDir
from autograder.course.spec import Spec, read_specs
from autograder.reports.pages import num

FLAGS = ("missing", "failed", "timeout", "tampered", "renamed", "needs-manual", "review", "late")
# One letter per flag, for the summary and the class report (grades.csv keeps the words, which
# scripts read); "L" is kept for a late hand-in.
FLAG_CODES = {"missing": "M", "failed": "F", "timeout": "T", "tampered": "X", "renamed": "R",
              "needs-manual": "W", "review": "S", "late": "L"}  # fmt: skip
REVIEW = "review"  # the advisory scan noted code for the instructor to look at
INSTRUCTOR_FLAGS = frozenset({REVIEW})  # never shown to the student
REVIEW_NOTE = "review: "  # the start of every note of the scan's (instructor only)
# The note of a notebook graded twice, the second time with every cell run (``worker.py``'s
# ``rerun``, when a test's request raised NameError: ``worker.needs_second_try``).
RERUN_NOTE = "graded again with the cells grading leaves out run: a test's request raised NameError"


@dataclass
class Row:
    """One student's grade for one notebook."""

    student: str
    notebook: str
    extra: bool = False  # an optional part: its points are extra credit, apart from the rest
    autograded: float = 0.0
    autograded_max: float = 0.0
    manual: float = 0.0
    manual_max: float = 0.0
    flags: list[str] = field(default_factory=list)
    file: str = ""
    cells: dict[str, tuple[float, float]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    # behaviours the judge found wrong: (test, behaviour, points, why); not in grades.csv
    lost: list[tuple[str, str, float, str]] = field(default_factory=list)
    # the judge's verdict on each test (grade id -> ``spec.TestVerdict`` as JSON, every check
    # passed or lost) and the seconds grading the notebook took: for the feedback pages and
    # the class report, not in grades.csv
    verdicts: dict[str, dict] = field(default_factory=dict)
    seconds: float | None = None
    # the first error in the student's own code when grading ({"cell", "words"}, fixed text),
    # and the cells grading did not run (their outputs are the student's own): feedback only
    first_error: dict | None = None
    skipped: list[int] = field(default_factory=list)
    # an optional part: the points that count after the cap (count_extra_credit); None: all
    counted: float | None = None

    @property
    def earned(self) -> float:
        """The notebook's points: its tests' and its written answers'."""
        return self.autograded + self.manual

    @property
    def total(self) -> float:
        """The points that count: those earned, for an optional part what the cap leaves."""
        return self.earned if self.counted is None else self.counted

    @property
    def max(self) -> float:
        return self.autograded_max + self.manual_max

    @property
    def flag_text(self) -> str:
        ordered = [f for f in FLAGS if f in self.flags]
        return ";".join(ordered) if ordered else "ok"

    @property
    def flag_codes(self) -> str:
        """The flags as letters (:data:`FLAG_CODES`), in :data:`FLAGS`' order; "" for none."""
        return "".join(flag_code(f) for f in FLAGS if f in self.flags)

    def as_csv(self) -> dict[str, str]:
        """The row as a line of ``grades.csv`` (its columns: ``report.COLUMNS``)."""
        return {
            "student": self.student,
            "notebook": self.notebook,
            "extra_credit": "yes" if self.extra else "no",
            "autograded": num(self.autograded),
            "autograded_max": num(self.autograded_max),
            "manual": num(self.manual),
            "manual_max": num(self.manual_max),
            "total": num(self.total),
            "max": num(self.max),
            "extra_earned": num(self.earned) if self.extra else "",
            "extra_counted": num(self.total) if self.extra else "",
            "flags": self.flag_text,
            "file": self.file,
            "cells": " ".join(f"{k}={num(s)}/{num(m)}" for k, (s, m) in self.cells.items()),
            "notes": " | ".join(self.notes),
        }


def flag_code(flag: str) -> str:
    """The letter of ``flag`` (:data:`FLAG_CODES`); a flag without one keeps its word."""
    return FLAG_CODES.get(flag, flag)


FLAG_HELP = {
    "missing": "no notebook with this name was handed in",
    "failed": "the notebook could not be graded (see the note)",
    "timeout": "a cell ran past the time limit and was stopped",
    "tampered": "a test or locked cell was changed or deleted; the original was graded",
    "renamed": "the notebook was handed in under another name",
    "needs-manual": "written answers wait for a grader; the total will change",
    "review": "the advisory scan noted code to look at (instructor only; no points changed)",
    "late": "the LMS marked the file handed in late (its late policy applies there, not here)",
}


def for_student(row: Row) -> Row:
    """``row`` as its student may see it: without the instructor-only flags and notes."""
    return replace(
        row,
        flags=[f for f in row.flags if f not in INSTRUCTOR_FLAGS],
        notes=[n for n in row.notes if not is_review_note(n)],
    )


def is_review_note(note: str) -> bool:
    """Whether ``note`` is one of the advisory scan's (instructor only)."""
    return note.startswith(REVIEW_NOTE)


def empty_row(student: str, spec: Spec, extra: bool = False) -> Row:
    """A row worth nothing yet, with the notebook's maximums."""
    return Row(
        student,
        spec.name,
        extra=extra,
        autograded_max=spec.autograded_max,
        manual_max=spec.manual_max,
    )


def regular(rows: list[Row]) -> list[Row]:
    """The rows of the assignment's regular notebooks (not extra credit)."""
    return [r for r in rows if not r.extra]


def extra_credit(rows: list[Row]) -> list[Row]:
    return [r for r in rows if r.extra]


def count_extra_credit(rows: list[Row], cap: float) -> list[Row]:
    """Apply ``[grade] extra_credit_cap``: set ``counted`` on every optional part of ``rows``
    so that a student's extra credit adds at most ``cap`` points (0: none) above the regular
    total. A student's optional parts count in the assignment's order until the cap is used
    up. The one place the cap is applied (:func:`class_rows`); returns ``rows``."""
    for srows in by_student(rows).values():
        left = cap
        for row in extra_credit(srows):
            row.counted = round(max(0.0, min(row.earned, left)), 6)
            left -= row.counted
    return rows


def extra_points(rows: list[Row]) -> tuple[float, float]:
    """One student's extra credit: the points earned and those that count (after the cap)."""
    optional = extra_credit(rows)
    return sum(r.earned for r in optional), sum(r.total for r in optional)


def pending(rows: list[Row]) -> bool:
    """Whether any of ``rows`` has written answers not graded yet (its total is provisional)."""
    return any("needs-manual" in r.flags for r in rows)


def by_student(rows: list[Row]) -> dict[str, list[Row]]:
    students: dict[str, list[Row]] = {}
    for row in rows:
        students.setdefault(row.student, []).append(row)
    return students


# --- the rows made: the records joined with the gradebook -------------------------------------


class NotebookSeen(Protocol):
    """What the intake decided for one notebook (``intake.NotebookIntake``)."""

    file: str
    staged: bool
    flags: list[str]
    notes: list[str]


class StudentSeen(Protocol):
    """One student's intake (``intake.StudentIntake``)."""

    notes: list[str]

    @property
    def notebooks(self) -> Mapping[str, NotebookSeen]: ...


class GradedRun(Protocol):
    """What the rows read of one student's record (``records.StudentRun``): the intake as read,
    the worker's result (see ``worker.py``) and whether the student's time limit stopped it."""

    worker: dict
    killed: bool

    @property
    def taken(self) -> StudentSeen: ...


class RunRecords(Protocol):
    """The records of a course directory (``records.Records``): a student's last run, or None."""

    def get(self, student: str) -> GradedRun | None: ...


def rows_for(
    student: str, run: GradedRun | None, specs: dict[str, Spec],
    scores: Scores, cell_timeout: int, problem: str = "", extra: tuple[str, ...] = (),
) -> list[Row]:  # fmt: skip
    """The report rows of one student, from what the intake and worker saw and the gradebook
    (``extra``: the notebooks graded as extra credit)."""
    rows = []
    taken = run.taken if run else None
    for name, spec in specs.items():
        row = empty_row(student, spec, extra=name in extra)
        rows.append(row)
        if taken is None:
            row.flags.append("failed")
            row.notes.append(problem or "not graded")
            continue
        seen = taken.notebooks[name]
        row.file, row.flags, row.notes = seen.file, list(seen.flags), list(seen.notes)
        done = run.worker.get("notebooks", {}).get(name, {})
        row.seconds = done.get("seconds")
        if seen.staged and not done.get("graded"):
            row.flags.append("failed")
            if run.killed:
                row.flags.append("timeout")
                row.notes.append("grading stopped: the student's time limit ran out")
            else:
                row.notes.append(done.get("error") or "the grader stopped before this notebook")
        if done.get("timeouts"):
            row.flags.append("timeout")
            row.notes.append(f"stopped after {cell_timeout} s: {', '.join(done['timeouts'])}")
        if done.get("graded") and run.worker.get("judge_error"):
            row.flags.append("failed")
            row.notes.append("the judge failed (a fault of the course): run make grade again")
        if not (seen.staged and done.get("graded")):
            continue
        row.verdicts = dict(done.get("verdicts", {}))
        row.first_error = done.get("first_error")
        row.skipped = list(done.get("skipped", []))
        if done.get("rerun"):  # graded again with every cell run (worker.needs_second_try)
            row.notes.append(RERUN_NOTE)
        for gid, verdict in done.get("verdicts", {}).items():
            for item in verdict["checks"]:
                if not item["passed"]:
                    row.lost.append((gid, item["description"], item["points"], item["message"]))
        for cell in scores.get((student, name), []):
            row.cells[cell.grade_id] = (cell.score, cell.max)
            if cell.auto:
                row.autograded += cell.score
            else:
                row.manual += cell.score
            if cell.needs_manual and "needs-manual" not in row.flags:
                row.flags.append("needs-manual")
    for note in taken.notes if taken else []:
        rows[0].notes.append(note)
    return rows


def class_rows(
    course: Course, gdir: GradingDir, everyone: list[str], cell_timeout: int,
    problems: dict[str, str], records: RunRecords,
) -> list[Row]:  # fmt: skip
    """The report rows of ``everyone``: their ``records`` joined with the gradebook's scores
    (``problems``: why a student has no record, e.g. an id grading refuses), extra credit
    capped by ``[grade] extra_credit_cap`` (every output reads the rows made here)."""
    specs = read_specs(gdir.judges, course.notebooks())
    scores = read_scores(gdir.db_url, gdir.assignment, everyone)
    rows: list[Row] = []
    for student in everyone:
        rows += rows_for(student, records.get(student), specs, scores, cell_timeout,
                         problems.get(student, ""), course.grade.extra_credit)  # fmt: skip
    return count_extra_credit(rows, course.grade.extra_credit_cap)
