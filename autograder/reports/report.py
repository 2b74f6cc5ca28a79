"""What a grading run writes: ``grades.csv``, ``canvas.csv``, the summary table and histogram,
the per-student index pages.

``grades.csv`` has one row per student and notebook (a notebook is one part of the
assignment)::

    student, notebook        who and which part
    extra_credit             yes for an optional part (its points are apart from the others)
    autograded, autograded_max   points of the code tests
    manual, manual_max       points of the written answers (0 until graded in formgrader)
    total, max               the points that count (autograded + manual; for an optional part,
                             extra_counted) and the most the notebook is worth
    extra_earned             an optional part: the points earned (autograded + manual); else ""
    extra_counted            an optional part: the points that count after ``[grade]
                             extra_credit_cap`` (:func:`count_extra_credit`); else ""
    flags                    ok, or any of: missing failed timeout tampered renamed needs-manual
                             review late (in words: the summary and class report show them as the
                             letters of :data:`FLAG_CODES`)
    file                     the file handed in that was graded
    cells                    every graded cell: grade_id=score/max
    notes                    why a flag was raised, in words

The flag ``review`` and its notes (those starting with :data:`REVIEW_NOTE`) are for the
instructor only: what the advisory scan (``tamper.py``) noted, worth no point either way. The
pages and files a student sees (``student_page``, ``feedback.py``, Gradescope's
``results.json``) show a row through :func:`for_student`, which leaves them out.

Extra credit is capped: a student's optional parts add at most ``[grade] extra_credit_cap``
points above the regular total. :func:`count_extra_credit` sets what counts of every optional
part (``Row.counted``) once, when the rows are made (``grading.class_rows``); every output
reads it (``Row.total``, :func:`extra_points`): grades.csv, the summary, the class report,
canvas.csv, the feedback pages and Gradescope's score, which show earned and counted both.

``canvas.csv`` is the same grades in the layout of Canvas's gradebook import (see
:func:`write_canvas` and the README's "Grades into the LMS").
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from autograder.course import notebooks
from autograder.reports import pages

if TYPE_CHECKING:
    from autograder.course.spec import Spec

FLAGS = ("missing", "failed", "timeout", "tampered", "renamed", "needs-manual", "review", "late")
# One letter per flag, for the summary and the class report (grades.csv keeps the words, which
# scripts read); "L" is kept for a late hand-in.
FLAG_CODES = {"missing": "M", "failed": "F", "timeout": "T", "tampered": "X", "renamed": "R",
              "needs-manual": "W", "review": "S", "late": "L"}  # fmt: skip
REVIEW = "review"  # the advisory scan noted code for the instructor to look at
INSTRUCTOR_FLAGS = frozenset({REVIEW})  # never shown to the student
REVIEW_NOTE = "review: "  # the start of every note of the scan's (instructor only)
COLUMNS = ("student", "notebook", "extra_credit", "autograded", "autograded_max", "manual",
           "manual_max", "total", "max", "extra_earned", "extra_counted", "flags", "file",
           "cells", "notes")  # fmt: skip


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


num = pages.num


def flag_code(flag: str) -> str:
    """The letter of ``flag`` (:data:`FLAG_CODES`); a flag without one keeps its word."""
    return FLAG_CODES.get(flag, flag)


def flag_legend(flags: tuple[str, ...] = FLAGS) -> str:
    """The letters of ``flags`` with their words, one line: ``W needs-manual, ...``."""
    return ", ".join(f"{flag_code(f)} {f}" for f in flags)


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
    up. The one place the cap is applied (``grading.class_rows``); returns ``rows``."""
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


def extra_text(rows: list[Row]) -> str:
    """One student's extra credit in a few characters: ``+2`` counted, and ``(3.5)`` earned
    after it when the cap counted less."""
    earned, counted = extra_points(rows)
    return f"+{num(counted)}" + (f" ({num(earned)})" if earned > counted + 1e-9 else "")


def pending(rows: list[Row]) -> bool:
    """Whether any of ``rows`` has written answers not graded yet (its total is provisional)."""
    return any("needs-manual" in r.flags for r in rows)


def write_csv(rows: list[Row], path: Path) -> None:
    """Write ``rows`` to ``path`` atomically."""
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow(row.as_csv())
    notebooks.write_bytes(path, buf.getvalue().encode())


def by_student(rows: list[Row]) -> dict[str, list[Row]]:
    students: dict[str, list[Row]] = {}
    for row in rows:
        students.setdefault(row.student, []).append(row)
    return students


def notebook_labels(names: list[str]) -> dict[str, str]:
    """Short labels of notebooks for the summary's flags: the number before the first ``_``
    (``5a_decoding`` -> ``5a``) when no other notebook shares it, else the whole name."""
    heads = [n.split("_", 1)[0] for n in names]
    return {n: h if heads.count(h) == 1 else n for n, h in zip(names, heads, strict=True)}


def summary_table(rows: list[Row], extra_cap: float | None = None) -> str:
    """One line per student: points per notebook, the total of the regular notebooks, the
    extra credit apart (when the assignment has optional parts: what counts, and what was
    earned in brackets when ``extra_cap``, ``[grade] extra_credit_cap``, counted less), and
    the flags as letters per notebook (``1:W 3:TF``; a legend follows the table). A notebook
    of extra credit that was not handed in is no flag."""
    students = by_student(rows)
    if not students:
        return "no students"
    first = next(iter(students.values()))
    names = [r.notebook for r in first]
    labels = notebook_labels(names)
    has_extra = any(r.extra for r in first)
    width = max(len(s) for s in students) + 1
    head = f"{'student':{width}}" + "".join(f"{n[:14]:>15}" for n in names) + f"{'total':>12}"
    head += f"{'extra':>13}" if has_extra else ""
    maxima = f"{'(max)':{width}}" + "".join(f"{num(r.max):>15}" for r in first)
    maxima += f"{num(sum(r.max for r in regular(first))):>12}"
    extra_max = sum(r.max for r in extra_credit(first))
    if extra_cap is not None:
        extra_max = min(extra_max, extra_cap)
    maxima += f"{'+' + num(extra_max):>13}" if has_extra else ""
    lines = [head + "  flags", maxima]
    for student, srows in students.items():
        flags = " ".join(f"{labels[r.notebook]}:{r.flag_codes}" for r in srows if r.flags)
        cells = "".join(f"{num(r.earned):>15}" for r in srows)
        kept = regular(srows)
        total = f"{num(sum(r.total for r in kept))}/{num(sum(r.max for r in kept))}"
        extra = f"{extra_text(srows):>13}" if has_extra else ""
        lines.append(f"{student:{width}}{cells}{total:>12}{extra}  {flags or 'ok'}")
    used = [f for f in FLAGS if any(f in r.flags for r in rows)]
    lines.append("")
    lines.append(f"flags, per notebook (by its number): {flag_legend(tuple(used))}" if used
                 else "flags: none")  # fmt: skip
    if has_extra:
        cap = f"at most +{num(extra_cap)} above the total; " if extra_cap is not None else ""
        lines.append(f"extra: the extra credit that counts ({cap}in brackets the points earned "
                     "when the cap counted less)")  # fmt: skip
    return "\n".join(lines)


def histogram(rows: list[Row], bins: int = 10, bar: int = 40) -> str:
    """A text histogram of the students' totals of the regular notebooks, as a share of the
    maximum (extra credit left out). A student with written answers not graded yet is
    pending: counted apart, not as zeros."""
    students = by_student(rows).values()
    totals = [
        (sum(r.total for r in regular(srows)), sum(r.max for r in regular(srows)))
        for srows in students
        if not pending(regular(srows))
    ]
    counts = [0] * bins
    for total, most in totals:
        share = total / most if most else 0.0
        counts[min(int(share * bins), bins - 1)] += 1
    scale = max(1, max(counts)) / bar
    lines = ["totals (% of the maximum, extra credit left out)"]
    for i, n in enumerate(counts):
        lo, hi = 100 * i // bins, 100 * (i + 1) // bins
        bracket = "]" if i == bins - 1 else ")"
        lines.append(f"  [{lo:3d}, {hi:3d}{bracket} {'#' * round(n / scale):{bar}} {n}")
    waiting = len(students) - len(totals)
    if waiting:
        lines.append(f"  pending: {waiting} student(s) with written answers not graded yet")
    return "\n".join(lines)


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


# --- HTML pages (templates/: pages.py) -------------------------------------------------------


def student_page(
    student: str, rows: list[Row], feedback_files: dict[str, str], extra_cap: float | None = None
) -> str:
    """A small HTML page for one student (``templates/student.html.j2``): points per notebook
    (extra credit apart: earned and counted, ``extra_cap`` the cap), flags explained (not the
    instructor-only ones), the behaviours lost, and links to the feedback page of each
    notebook (``feedback_files``: notebook -> file)."""
    earned, counted = extra_points(rows)
    return pages.render(
        "student.html.j2",
        title=f"{student}: grades",
        csp=pages.STRICT_CSP,
        student=student,
        total=sum(r.total for r in regular(rows)),
        most=sum(r.max for r in regular(rows)),
        bonus=counted,
        earned=earned,
        cap=extra_cap,
        regular=[for_student(r) for r in regular(rows)],
        extra=[for_student(r) for r in extra_credit(rows)],
        lost=[(r.notebook, *item) for r in rows for item in r.lost],
        files=feedback_files,
        flags=FLAGS,
        flag_help=FLAG_HELP,
    )


# --- the LMS export ---------------------------------------------------------------------------

CANVAS_COLUMNS = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")


@dataclass(frozen=True)
class RosterEntry:
    """What the LMS knows of one student (``autograder/roster.csv``)."""

    name: str = ""
    canvas_id: str = ""
    sis_user_id: str = ""
    sis_login_id: str = ""
    section: str = ""


def canvas_file_name(name: str) -> str:
    """The name as Canvas writes it at the start of a download's file names (``[collect]
    pattern``): the sortable name's letters and digits, lower case ("Doe, Jane" -> doejane)."""
    return "".join(c for c in name.lower() if c.isalnum())


def read_roster(path: Path) -> dict[str, RosterEntry]:
    """Our student ids -> what Canvas knows of them, from ``path``: either our layout
    (``student_id,name,canvas_id,sis_user_id,section``, optionally ``sis_login_id``) or
    Canvas's own gradebook export (``Student,ID,SIS User ID,SIS Login ID,Section,...``), whose
    students are known by their SIS Login ID and by the name their download files start with."""
    with open(path, newline="", encoding="utf-8-sig") as fh:
        records = list(csv.DictReader(fh))
    roster: dict[str, RosterEntry] = {}
    for rec in records:
        rec = {k.strip(): (v or "").strip() for k, v in rec.items() if k}
        if "student_id" in rec:
            if rec["student_id"]:
                roster[rec["student_id"]] = RosterEntry(
                    rec.get("name", ""), rec.get("canvas_id", ""), rec.get("sis_user_id", ""),
                    rec.get("sis_login_id", ""), rec.get("section", ""),
                )  # fmt: skip
            continue
        name = rec.get("Student", "")
        if not rec.get("ID") or name.lower() in ("points possible", "student, test"):
            continue  # Canvas's points row and its test student
        entry = RosterEntry(name, rec["ID"], rec.get("SIS User ID", ""),
                            rec.get("SIS Login ID", ""), rec.get("Section", ""))  # fmt: skip
        for key in (entry.sis_login_id, canvas_file_name(name)):
            if key:
                roster.setdefault(key, entry)
    return roster


def canvas_rows(
    rows: list[Row], column: str, roster: dict[str, RosterEntry] | None = None
) -> list[list[str]]:
    """Canvas's gradebook import: a header, the points possible, then one row per student with
    the assignment's points in ``column``: the regular notebooks' total plus the extra credit
    that counts (``Row.total``: after ``[grade] extra_credit_cap``; Canvas takes a score above
    the points possible as extra credit). Without a roster entry
    a student is named by our id, which is also their SIS Login ID."""
    roster = roster or {}
    students = by_student(rows)
    most = max((sum(r.max for r in regular(s)) for s in students.values()), default=0.0)
    table = [[*CANVAS_COLUMNS, column], ["Points Possible", "", "", "", "", _points(most)]]
    for student, srows in students.items():
        known = roster.get(student, RosterEntry())
        total = sum(r.total for r in srows)  # regular + extra credit counted (capped)
        table.append([
            known.name or student, known.canvas_id, known.sis_user_id,
            known.sis_login_id or student, known.section, _points(total),
        ])  # fmt: skip
    return table


def _points(x: float) -> str:
    return f"{round(x, 4):g}"


CANVAS_FILE = "canvas.csv"
PROVISIONAL_CANVAS_FILE = "canvas-PROVISIONAL.csv"


def waiting_students(rows: list[Row]) -> list[str]:
    """The students with a written answer (or other manually graded cell) not graded yet."""
    return sorted({r.student for r in rows if "needs-manual" in r.flags})


def write_canvas_file(
    rows: list[Row], out: Path, column: str, roster: dict[str, RosterEntry] | None = None
) -> Path:
    """Write the Canvas import into ``out``: ``canvas.csv`` when every grade is complete,
    else ``canvas-PROVISIONAL.csv`` (written answers waiting for a grader count 0 there), and
    remove the other one, so a file named ``canvas.csv`` is always complete. Returns the path."""
    complete = not waiting_students(rows)
    keep, drop = (CANVAS_FILE, PROVISIONAL_CANVAS_FILE)[:: 1 if complete else -1]
    write_canvas(rows, out / keep, column, roster)
    (out / drop).unlink(missing_ok=True)
    return out / keep


def write_canvas(
    rows: list[Row], path: Path, column: str, roster: dict[str, RosterEntry] | None = None
) -> None:
    """Write :func:`canvas_rows` to ``path`` (CSV, atomically)."""
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(canvas_rows(rows, column, roster))
    notebooks.write_bytes(path, buf.getvalue().encode())
