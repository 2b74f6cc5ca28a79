"""Feedback pages that teach without giving the tests away.

nbgrader's feedback (``GenerateFeedback``) renders the whole graded notebook, the source of
every test cell included: students would read the tests, and the tests could not be reused
next term. Here each notebook's page is written from plain data instead:

- per graded test, in notebook order: what it checks (its docstring, from the judge spec),
  its score, and every check of the judge (``spec.TestVerdict``): the behaviour, its points,
  passed or lost, and the message of a failure (shapes expected and got, which property
  failed); the error that stopped the test cell, if one did;
- per written answer: the question (the Markdown cell above it in the released notebook), the
  student's answer, its manual grade once a grader gave one in formgrader (or "waits for a
  grader"), the student's own results for it (the outputs, in the notebook they handed in,
  of the tagged cells above it: ``ownrun.py``'s frames, with a note where grading ran the
  cell again in quick mode) and the grader's comment; comments on code answer cells too;
- first, where the student's own code first raised when grading (the cell and Python's
  name for the error, never the kernel's words), since later "not defined" failures follow;
- the notebook's points, flags explained and notes (not the instructor-only ones: the flag
  ``review`` and the advisory scan's notes, see ``rows.for_student``); for an optional part
  what it earned, and how much of it counts when ``[grade] extra_credit_cap`` cut it (the
  index page states the cap and the sum, earned and counted).

Nothing a student wrote runs in a browser: their answers are read from the graded notebook
(already cleaned by ``sanitise.py`` when it was graded), cleaned again, rendered with
nbconvert's Markdown renderer (as the formgrader renders them) and checked by
``safehtml.markdown_problems`` (a text that fails is shown as plain text); every other string
(check messages, errors, notes, comments) is escaped. The pages are self-contained: inline
CSS, no script, no external asset, and a Content-Security-Policy that loads nothing but
inline images.

The code of each test (its checks, the judge cells after it) is shown only with ``[feedback]
show_test_source = true`` in ``course.toml`` (default false). Pages:
``feedback/<student>/<assignment>/<notebook>.html``, one per notebook of the assignment (extra-
credit notebooks marked as such), linked from the student's ``index.html``
(:func:`student_page`). ``report.write_reports`` writes them after every ``make grade``;
``make feedback`` writes them again from the gradebook after manual grading.
"""

from __future__ import annotations

import ast
import html
from dataclasses import dataclass
from pathlib import Path

from markupsafe import Markup
from nbformat import NotebookNode

from autograder.course import notebooks, spec
from autograder.course.gradebook import Marks, read_marks
from autograder.course.nbgrader_dir import GradingDir
from autograder.course.spec import Spec, docstring_lines
from autograder.reports import pages, safehtml
from autograder.reports.pages import num
from autograder.reports.rows import (
    FLAG_HELP,
    FLAGS,
    Row,
    by_student,
    extra_credit,
    extra_points,
    for_student,
    regular,
)


@dataclass(frozen=True)
class Test:
    """What a student may read of a graded test."""

    grade_id: str
    points: float
    docstring: str
    source: str  # its checks (the judge cells after it): shown only when the course allows


@dataclass(frozen=True)
class Written:
    """A written answer cell: its points and the question above it (HTML)."""

    grade_id: str
    points: float
    question: str


@dataclass(frozen=True)
class Material:
    """What the pages of one notebook need, read once for the whole class."""

    name: str
    tests: tuple[Test, ...]
    written: tuple[Written, ...]
    code_answers: tuple[str, ...]  # grade ids of the code cells students complete


def _docstring(source: str) -> str:
    try:
        text = ast.get_docstring(ast.parse(source))
    except SyntaxError:
        text = None
    return (text or "\n".join(docstring_lines(source)).strip().strip("\"'")).strip()


def material(gdir: GradingDir, name: str) -> Material:
    """The tests (from the judge spec) and written answers (from the release) of ``name``."""
    nb_spec = Spec.from_json((gdir.judges / f"{name}.json").read_text())
    checks = {
        gid: "\n\n".join(j.source for j in nb_spec.judges if j.test == gid) for gid in nb_spec.tests
    }
    tests = tuple(
        Test(t.grade_id, t.points, _docstring(t.graded_source), checks[t.grade_id])
        for t in nb_spec.tests.values()
    )
    released = notebooks.read(gdir.release / f"{name}.ipynb")
    written, code = [], []
    previous: NotebookNode | None = None
    for cell in released.cells:
        gid = spec.grade_id(cell)
        if cell.cell_type == "markdown" and spec.is_grade(cell) and gid:
            question = previous.source if previous is not None else ""
            written.append(Written(gid, spec.points(cell), render_markdown(question)))
        elif cell.cell_type == "code" and spec.is_solution(cell) and gid:
            code.append(gid)
        if cell.cell_type == "markdown":
            previous = cell
    return Material(name, tests, tuple(written), tuple(code))


def render_markdown(text: str, attachments: dict | None = None) -> str:
    """Markdown as nbconvert renders a cell, after ``safehtml.sanitise_markdown``; shown as
    plain text when the rendered HTML is not inert."""
    from nbconvert.filters.markdown_mistune import IPythonRenderer, MarkdownWithMath

    attachments = attachments or {}
    safe = safehtml.sanitise_markdown(text, attachments)
    if not safehtml.markdown_problems(safe, attachments):
        try:
            renderer = IPythonRenderer(escape=False, attachments=attachments)
            return MarkdownWithMath(renderer=renderer).render(safe)
        except Exception:  # the renderer failed on it: show the text
            pass
    return f"<pre>{html.escape(text)}</pre>"


def graded_copy(path: Path) -> NotebookNode | None:
    """A student's graded notebook, read once for its page; None when there is none or it
    cannot be read (its page then shows no answer and no output rather than fail)."""
    if not path.exists():
        return None
    try:
        return notebooks.read(path)
    except Exception:  # a graded copy that cannot be read
        return None


def written_answers(nb: NotebookNode | None) -> dict[str, tuple[str, dict]]:
    """The written answers of a graded notebook (:func:`graded_copy`): grade id -> (Markdown,
    attachments)."""
    if nb is None:
        return {}
    return {
        spec.grade_id(c): (_text(c.get("source")), dict(c.get("attachments") or {}))
        for c in nb.cells
        if c.cell_type == "markdown" and spec.is_grade(c) and spec.grade_id(c)
    }


RERUN_NOTE = (
    "The autograder ran the next cell again, in quick mode (you changed it, or a later cell "
    "needs it); what follows is from your own run."
)


def own_results(
    nb: NotebookNode | None, skipped: list[int] | None = None
) -> dict[str, list[NotebookNode]]:
    """The student's own outputs that belong with each written answer of a graded notebook
    (grade id -> outputs): those of the tagged cells (``ownrun.own_outputs``: the grader's
    frames; ``skipped``: only those cells) between the previous written answer and this one,
    a cell grading ran too after an output of type :data:`RERUN` (:data:`RERUN_NOTE`)."""
    from autograder.reports import ownrun

    if nb is None:
        return {}
    own = ownrun.own_outputs(nb, skipped)
    found: dict[str, list[NotebookNode]] = {}
    pending: list[NotebookNode] = []
    for index, cell in enumerate(nb.cells):
        outputs, ran = own.get(index, ([], False))
        pending += [NotebookNode(output_type=RERUN)] if ran and outputs else []
        pending += outputs
        gid = spec.grade_id(cell)
        if cell.cell_type == "markdown" and spec.is_grade(cell) and gid:
            found[gid], pending = pending, []
    return found


OWN_TEXT_CHARS = 4000  # characters of one text output shown on a feedback page
RERUN = "a3_rerun"  # own_results: the outputs that follow are of a cell grading ran too


def _own_output(out: NotebookNode) -> tuple[str, str] | None:
    """One of the student's own outputs, inert: ``("text", text)`` (escaped by the template;
    lines like the grader's marked), ``("note", RERUN_NOTE)`` (the grader's) or ``(mime,
    base64)`` of a raster image checked by ``safehtml.raster``; None: nothing."""
    kind = out.get("output_type")
    text = ""
    if kind == RERUN:
        return "note", RERUN_NOTE
    if kind == "stream":
        text = _text(out.get("text"))
    elif kind == "error":
        text = f"{_text(out.get('ename'))}: {_text(out.get('evalue'))}"
    elif kind in ("display_data", "execute_result"):
        data = out.get("data") or {}
        for mime in ("image/png", "image/jpeg", "image/gif"):
            value = safehtml.raster(data.get(mime), mime)
            if value:
                return mime, value
        text = _text(data.get("text/plain"))
    if not text.strip():
        return None
    if len(text) > OWN_TEXT_CHARS:
        text = text[:OWN_TEXT_CHARS] + "\n..."
    return "text", safehtml.mark_grader_lines(safehtml.strip_ansi(text))


def _text(value: object) -> str:
    """A notebook string field (a string or a list of strings) as one string."""
    if isinstance(value, list):
        return "".join(v for v in value if isinstance(v, str))
    return value if isinstance(value, str) else ""


def _status(score: float, points: float) -> tuple[str, str]:
    if points and score >= points - 1e-9:
        return "ok", "passed"
    return ("part", "partly passed") if score > 0 else ("lost", "not passed")


def _test_view(test: Test, verdict: dict | None, show_source: bool, graded: bool) -> dict:
    """What ``feedback.html.j2`` shows of one test."""
    score = float(verdict.get("score", 0.0)) if verdict else 0.0
    lines = test.docstring.split("\n")
    if verdict is None:
        status = ("lost", "not graded") if not graded else ("lost", "no result")
    else:
        status = _status(score, test.points)
    checks = [
        {
            "passed": bool(c["passed"]),
            "description": str(c["description"]),
            "points": float(c["points"]),
            "message": "" if c["passed"] else str(c.get("message") or ""),
        }
        for c in (verdict or {}).get("checks") or []
    ]
    return {
        "grade_id": test.grade_id,
        "title": lines[0] or test.grade_id,
        "more": "\n".join(lines[1:]).strip(),
        "status": status[0],
        "status_text": status[1],
        "score": score,
        "points": test.points,
        "checks": checks,
        "error": str((verdict or {}).get("error") or ""),
        "source": test.source if show_source else None,
    }


def _written_view(
    item: Written, answer: tuple[str, dict] | None, marks: Marks, own: list | None
) -> dict:
    """What ``feedback.html.j2`` shows of one written answer."""
    grade = marks.grade(item.grade_id)
    most = num(item.points, 4)
    if grade is None:
        state = ("lost", f"not graded: 0 / {most}")
    elif grade.manual is not None:
        state = (_status(grade.manual, item.points)[0], f"graded: {num(grade.manual, 4)} / {most}")
    elif grade.needs_manual:
        state = ("part", f"waits for a grader ({most} points)")
    else:
        state = ("ok" if grade.score else "lost", f"{num(grade.score, 4)} / {most}")
    return {
        "grade_id": item.grade_id,
        "status": state[0],
        "status_text": state[1],
        "question": Markup(item.question),  # rendered and checked by render_markdown
        "answer": None if answer is None else Markup(render_markdown(*answer)),
        "own": [shown for shown in map(_own_output, own or []) if shown],
        "comment": marks.comments.get(item.grade_id, ""),
    }


def notebook_page(
    row: Row,
    info: Material,
    marks: Marks,
    answers: dict[str, tuple[str, dict]],
    show_source: bool = False,
    own: dict[str, list] | None = None,
) -> str:
    """The feedback page of one student's notebook (see the module docstring;
    ``templates/feedback.html.j2``); ``own``: the student's own outputs by written answer
    (:func:`own_results`)."""
    row = for_student(row)  # no instructor-only flag or note
    graded = bool(row.verdicts) or any(t in row.cells for t in (x.grade_id for x in info.tests))
    verdicts = row.verdicts or {}
    first = row.first_error
    return pages.render(
        "feedback.html.j2",
        title=f"{row.notebook}: {row.student}",
        csp=pages.STRICT_CSP,
        row=row,
        shown_flags=[f for f in FLAGS if f in row.flags],
        flag_help=FLAG_HELP,
        first_error={"cell": str(first.get("cell", "")), "words": str(first.get("words", ""))}
        if first
        else None,
        tests=[_test_view(t, verdicts.get(t.grade_id), show_source, graded) for t in info.tests],
        written=[
            _written_view(w, answers.get(w.grade_id), marks, (own or {}).get(w.grade_id))
            for w in info.written
        ],
        written_max=sum(w.points for w in info.written),
        waiting=any(g.needs_manual for g in marks.cells),
        code_comments=[(g, marks.comments[g]) for g in info.code_answers if g in marks.comments],
    )


def student_page(
    student: str, rows: list[Row], feedback_files: dict[str, str], extra_cap: float | None = None
) -> str:
    """A small HTML page for one student (``templates/student.html.j2``), their ``index.html``:
    points per notebook (extra credit apart: earned and counted, ``extra_cap`` the cap), flags
    explained (not the instructor-only ones), the behaviours lost, and links to the feedback
    page of each notebook (``feedback_files``: notebook -> file)."""
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


def write_feedback(
    gdir: GradingDir, rows: list[Row], show_source: bool = False,
    extra_cap: float | None = None,
) -> dict[str, dict[str, str]]:  # fmt: skip
    """Write every student's notebook pages and index page into ``gdir.feedback`` (the index
    states ``extra_cap``, ``[grade] extra_credit_cap``); remove pages left from earlier runs
    (nbgrader's). Returns student -> notebook -> file name."""
    students = by_student(rows)
    names = list(dict.fromkeys(r.notebook for r in rows))
    info = {n: material(gdir, n) for n in names}
    marks = {}
    if gdir.gradebook.exists():
        marks = read_marks(gdir.db_url, gdir.assignment, list(students))
    written: dict[str, dict[str, str]] = {}
    for student, srows in students.items():
        folder = gdir.student_dir(gdir.feedback, student)
        graded = gdir.student_dir(gdir.autograded, student)
        files = {}
        for row in srows:
            nb = graded_copy(graded / f"{row.notebook}.ipynb")
            answers = written_answers(nb)
            own = own_results(nb)  # every framed cell
            mine = marks.get((student, row.notebook), Marks())
            page = notebook_page(row, info[row.notebook], mine, answers, show_source, own)
            files[row.notebook] = f"{row.notebook}.html"
            notebooks.write_bytes(folder / files[row.notebook], page.encode())
        page = student_page(student, srows, files, extra_cap)
        notebooks.write_bytes(folder / "index.html", page.encode())
        for stale in folder.glob("*.html"):
            if stale.name != "index.html" and stale.stem not in files:
                stale.unlink()
        written[student] = files
    return written
