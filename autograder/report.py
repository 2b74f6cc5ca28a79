"""What a grading run writes: ``grades.csv``, the summary table and histogram, student pages.

``grades.csv`` has one row per student and notebook (a notebook is one part of the
assignment)::

    student, notebook        who and which part
    extra_credit             yes for an optional part (its points are apart from the others)
    autograded, autograded_max   points of the code tests
    manual, manual_max       points of the written answers (0 until graded in formgrader)
    total, max               their sums
    flags                    ok, or any of: missing failed timeout tampered renamed needs-manual
    file                     the file handed in that was graded
    cells                    every graded cell: grade_id=score/max
    notes                    why a flag was raised, in words
"""

from __future__ import annotations

import csv
import html
import io
from dataclasses import dataclass, field
from pathlib import Path

from . import notebooks

FLAGS = ("missing", "failed", "timeout", "tampered", "renamed", "needs-manual")
COLUMNS = ("student", "notebook", "extra_credit", "autograded", "autograded_max", "manual",
           "manual_max",
           "total", "max", "flags", "file", "cells", "notes")  # fmt: skip


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

    @property
    def total(self) -> float:
        return self.autograded + self.manual

    @property
    def max(self) -> float:
        return self.autograded_max + self.manual_max

    @property
    def flag_text(self) -> str:
        ordered = [f for f in FLAGS if f in self.flags]
        return ";".join(ordered) if ordered else "ok"

    def as_csv(self) -> dict[str, str]:
        return {
            "student": self.student,
            "notebook": self.notebook,
            "extra_credit": "yes" if self.extra else "no",
            "autograded": _num(self.autograded),
            "autograded_max": _num(self.autograded_max),
            "manual": _num(self.manual),
            "manual_max": _num(self.manual_max),
            "total": _num(self.total),
            "max": _num(self.max),
            "flags": self.flag_text,
            "file": self.file,
            "cells": " ".join(f"{k}={_num(s)}/{_num(m)}" for k, (s, m) in self.cells.items()),
            "notes": " | ".join(self.notes),
        }


def _num(x: float) -> str:
    return f"{x:g}"


def empty_row(student: str, spec: notebooks.NotebookSpec, extra: bool = False) -> Row:
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


def write_csv(rows: list[Row], path: Path) -> None:
    """Write ``rows`` to ``path`` atomically."""
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow(row.as_csv())
    notebooks.write_bytes(path, buf.getvalue().encode())


def read_csv(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def by_student(rows: list[Row]) -> dict[str, list[Row]]:
    students: dict[str, list[Row]] = {}
    for row in rows:
        students.setdefault(row.student, []).append(row)
    return students


def summary_table(rows: list[Row]) -> str:
    """One line per student: points per notebook, the total of the regular notebooks, the
    extra credit apart (when the assignment has optional parts), and the flags that are not
    ok. A notebook of extra credit that was not handed in is no flag."""
    students = by_student(rows)
    if not students:
        return "no students"
    first = next(iter(students.values()))
    names = [r.notebook for r in first]
    has_extra = any(r.extra for r in first)
    width = max(len(s) for s in students) + 1
    head = f"{'student':{width}}" + "".join(f"{n[:14]:>15}" for n in names) + f"{'total':>12}"
    head += f"{'extra':>8}" if has_extra else ""
    maxima = f"{'(max)':{width}}" + "".join(f"{_num(r.max):>15}" for r in first)
    maxima += f"{_num(sum(r.max for r in regular(first))):>12}"
    maxima += f"{'+' + _num(sum(r.max for r in extra_credit(first))):>8}" if has_extra else ""
    lines = [head + "  flags", maxima]
    for student, srows in students.items():
        flags = "; ".join(f"{r.notebook}: {r.flag_text}" for r in srows if r.flag_text != "ok")
        cells = "".join(f"{_num(r.total):>15}" for r in srows)
        kept = regular(srows)
        total = f"{_num(sum(r.total for r in kept))}/{_num(sum(r.max for r in kept))}"
        extra = f"{'+' + _num(sum(r.total for r in extra_credit(srows))):>8}" if has_extra else ""
        lines.append(f"{student:{width}}{cells}{total:>12}{extra}  {flags or 'ok'}")
    return "\n".join(lines)


def histogram(rows: list[Row], bins: int = 10, bar: int = 40) -> str:
    """A text histogram of the students' totals of the regular notebooks, as a share of the
    maximum (extra credit left out)."""
    totals = [
        (sum(r.total for r in regular(srows)), sum(r.max for r in regular(srows)))
        for srows in by_student(rows).values()
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
    return "\n".join(lines)


FLAG_HELP = {
    "missing": "no notebook with this name was handed in",
    "failed": "the notebook could not be graded (see the note)",
    "timeout": "a cell ran past the time limit and was stopped",
    "tampered": "a test or locked cell was changed or deleted; the original was graded",
    "renamed": "the notebook was handed in under another name",
    "needs-manual": "written answers wait for a grader; the total will change",
}


def student_page(student: str, rows: list[Row], feedback_files: dict[str, str]) -> str:
    """A small HTML page for one student: points per notebook, flags explained, links to
    nbgrader's feedback of each graded notebook (``feedback_files``: notebook -> file name)."""
    esc = html.escape
    body = []
    for r in rows:
        link = feedback_files.get(r.notebook)
        name = f'<a href="{esc(link)}">{esc(r.notebook)}</a>' if link else esc(r.notebook)
        name += " (extra credit)" if r.extra else ""
        flags = "<br>".join(f"<b>{esc(f)}</b>: {esc(FLAG_HELP[f])}" for f in FLAGS if f in r.flags)
        notes = "<br>".join(esc(n) for n in r.notes)
        body.append(
            f"<tr><td>{name}</td><td>{_num(r.total)} / {_num(r.max)}</td>"
            f"<td>{flags or 'ok'}</td><td>{notes}</td></tr>"
        )
    total = sum(r.total for r in regular(rows))
    most = sum(r.max for r in regular(rows))
    bonus = ""
    if extra_credit(rows):
        got = sum(r.total for r in extra_credit(rows))
        bonus = f" and <b>{_num(got)}</b> extra credit (optional parts, apart from the total)"
    lost = [
        f"<tr><td>{esc(r.notebook)}</td><td>{esc(test)}</td><td>{esc(what)}</td>"
        f"<td>{_num(points)}</td><td>{esc(why)}</td></tr>"
        for r in rows
        for test, what, points, why in r.lost
    ]
    details = (
        "<h2>Points lost, by behaviour</h2><table border='1' cellpadding='4'><tr><th>notebook"
        "</th><th>test</th><th>what was checked</th><th>points</th><th>what went wrong</th></tr>"
        + "".join(lost)
        + "</table>"
        if lost
        else ""
    )
    return (
        "<!DOCTYPE html>\n<html><head><meta charset='utf-8'>"
        f"<title>{esc(student)}: grades</title></head><body>"
        f"<h1>{esc(student)}</h1><p>Total: <b>{_num(total)} / {_num(most)}</b>{bonus}</p>"
        "<table border='1' cellpadding='4'><tr><th>notebook</th><th>points</th><th>flags</th>"
        "<th>notes</th></tr>" + "".join(body) + "</table>" + details + "</body></html>\n"
    )
