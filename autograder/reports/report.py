"""What a grading run writes (:func:`write_reports`): ``grades.csv``, ``canvas.csv``, the
summary table and histogram (``summary.txt``), from the rows of ``rows.py``; the class report
(``classreport.py``) and the feedback pages (``feedback.py``) beside them.

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
                             extra_credit_cap`` (``rows.count_extra_credit``); else ""
    flags                    ok, or any of: missing failed timeout tampered renamed needs-manual
                             review late (in words: the summary and class report show them as the
                             letters of ``rows.FLAG_CODES``; ``review`` is the instructor's only)
    file                     the file handed in that was graded
    cells                    every graded cell: grade_id=score/max
    notes                    why a flag was raised, in words

``canvas.csv`` is the same grades in the layout of Canvas's gradebook import (see
:func:`write_canvas` and the README's "Grades into the LMS").
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path

from autograder.course import notebooks
from autograder.course.config import Course
from autograder.course.nbgrader_dir import GradingDir
from autograder.reports.pages import num
from autograder.reports.rows import (
    FLAGS,
    Row,
    by_student,
    extra_credit,
    extra_points,
    flag_code,
    pending,
    regular,
)

COLUMNS = ("student", "notebook", "extra_credit", "autograded", "autograded_max", "manual",
           "manual_max", "total", "max", "extra_earned", "extra_counted", "flags", "file",
           "cells", "notes")  # fmt: skip


def flag_legend(flags: tuple[str, ...] = FLAGS) -> str:
    """The letters of ``flags`` with their words, one line: ``W needs-manual, ...``."""
    return ", ".join(f"{flag_code(f)} {f}" for f in flags)


def extra_text(rows: list[Row]) -> str:
    """One student's extra credit in a few characters: ``+2`` counted, and ``(3.5)`` earned
    after it when the cap counted less."""
    earned, counted = extra_points(rows)
    return f"+{num(counted)}" + (f" ({num(earned)})" if earned > counted + 1e-9 else "")


def write_csv(rows: list[Row], path: Path) -> None:
    """Write ``rows`` to ``path`` atomically."""
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow(row.as_csv())
    notebooks.write_bytes(path, buf.getvalue().encode())


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


def write_reports(
    course: Course, gdir: GradingDir, rows: list[Row], title: str, sandbox: list[str], log=print
) -> None:
    """grades.csv, canvas.csv, summary.txt, the class report (report.html and its PNGs) and
    every student's feedback pages; print the summary and histogram (``sandbox``: what the
    grading sandbox enforces, in words: ``grading.sandbox_lines``)."""
    from autograder.reports import classreport, feedback

    course.out_dir.mkdir(parents=True, exist_ok=True)
    write_csv(rows, course.out_dir / "grades.csv")
    roster_file = course.grader_dir / "roster.csv"
    roster = read_roster(roster_file) if roster_file.exists() else {}
    unknown = sorted({r.student for r in rows} - set(roster)) if roster else []
    if unknown:
        log(f"  not in {roster_file.name}: {', '.join(unknown)} (canvas.csv names them by login)")
    column = course.lms.canvas_column or course.assignment
    canvas = write_canvas_file(rows, course.out_dir, column, roster)
    waiting = waiting_students(rows)
    if waiting:
        log(f"  {len(waiting)} student(s) have written answers waiting for a grader: "
            f"{canvas.name} is PROVISIONAL (those answers count 0); make formgrade, then "
            "make feedback, writes canvas.csv once every answer is graded")  # fmt: skip
    cap = course.grade.extra_credit_cap
    feedback.write_feedback(gdir, rows, course.feedback.show_test_source, cap)
    classreport.write_report(rows, course.out_dir, title, cap)
    text = "\n\n".join(
        [
            f"Grades of {title}",
            summary_table(rows, cap),
            histogram(rows),
            "\n".join(sandbox),
            f"grades: {course.out_dir / 'grades.csv'} (Canvas: {canvas.name})\n"
            f"class report: {course.out_dir / 'report.html'}\nfeedback: {gdir.feedback}/"
            f"<student>/{gdir.assignment}/index.html\nwritten answers: make formgrade, then "
            "make feedback",
        ]
    )
    notebooks.write_bytes(course.out_dir / "summary.txt", (text + "\n").encode())
    log(text)
