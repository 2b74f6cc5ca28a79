"""Feedback pages that teach without giving the tests away (``autograder/reports/feedback.py``).

A small real class of the tiny course (``tests/fixtures/course``) is graded with ``make grade``
(through the real pipeline): one student solves everything, one gets ``mul`` wrong and writes
HTML and a ``javascript:`` link into the written answer, one hands in only the first notebook.
Their pages must say what each test checks (its docstring), each check's points, passed or
lost, and the judge's message; never the hidden test's code (nor the visible checks'), unless
``[feedback] show_test_source = true``; hold nothing that runs or loads; and, after a grader
scores the written answer and comments in the gradebook, ``make feedback`` shows both. A fourth
student's code has a line the advisory scan notes: grades.csv says ``review`` with the note, the
student's pages say nothing of it (the flag and its notes are for the instructor only).
"""

from __future__ import annotations

import dataclasses
import re

import nbformat
import pytest

from autograder.course import config, gradebook, spec
from autograder.deploy import gradescope
from autograder.handin import tamper
from autograder.marking.records import Records
from autograder.reports import feedback
from autograder.reports.rows import Row, class_rows
from helpers import autograder, course_sources, grades, make_course

HOSTILE = (
    "Because order does not matter. <script>alert('xss')</script> "
    "[proof](javascript:alert(1)) <img src=x onerror=alert(2)>"
)


def _wrong_mul(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    for cell in nb.cells:
        if spec.grade_id(cell) == "mul":
            cell.source = cell.source.replace("product = a * b", "product = a + b")
        if spec.grade_id(cell) == "why_commutative":
            cell.source = HOSTILE
    return nb


NOTED = "import sys\n\nsys.settrace(None)  # an experiment the advisory scan notes\n"


def _noted(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    for cell in nb.cells:
        if spec.grade_id(cell) == "add":
            cell.source = NOTED + cell.source
    return nb


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    root = make_course(tmp_path_factory.mktemp("feedback"))
    src, gdir = course_sources(root)
    hand_in = {
        "full": {"1_sums": src.solved("1_sums"), "2_words": src.solved("2_words")},
        "wrong-mul": {"1_sums": _wrong_mul(src.solved("1_sums")), "2_words": src.solved("2_words")},
        "only-sums": {"1_sums": src.solved("1_sums")},
        "noted": {"1_sums": _noted(src.solved("1_sums")), "2_words": src.solved("2_words")},
    }
    for student, files in hand_in.items():
        folder = gdir.submitted / student / "a3"
        folder.mkdir(parents=True)
        for name, nb in files.items():
            (folder / f"{name}.ipynb").write_text(nbformat.writes(nb))
    autograder(root, "grade", "--jobs", "2")
    return root, gdir


def page(gdir, student: str, name: str) -> str:
    return (gdir.feedback / student / "a3" / f"{name}.html").read_text()


def test_one_page_per_notebook_linked_from_the_index(graded):
    _, gdir = graded
    for student in ("full", "wrong-mul", "only-sums"):
        folder = gdir.feedback / student / "a3"
        assert {p.name for p in folder.iterdir()} == {"1_sums.html", "2_words.html", "index.html"}
        index = (folder / "index.html").read_text()
        assert 'href="1_sums.html"' in index and 'href="2_words.html"' in index
    missing = page(gdir, "only-sums", "2_words")
    assert "missing" in missing and "not graded" in missing


def test_tests_are_explained_not_shown(graded):
    _, gdir = graded
    text = page(gdir, "wrong-mul", "1_sums")
    assert "mul returns the product of two numbers." in text  # the docstring
    assert "add returns the sum of two numbers." in text
    assert "mul(2, 3) is 6" in text and "mul works for negative numbers" in text
    assert "mul(2, 3) should be 6" in text  # the judge's message
    assert "not passed: 0 / 1" in text and "passed: 1 / 1" in text
    for secret in ("student.mul", "@check", "BEGIN HIDDEN", "course_lib", "== 6,"):
        assert secret not in text, secret  # neither the checks nor the visible checks
    assert "passed: 2 / 2" in page(gdir, "wrong-mul", "2_words")


def test_pages_run_and_load_nothing(graded):
    _, gdir = graded
    for path in gdir.feedback.rglob("*.html"):
        text = path.read_text()
        assert "<script" not in text.lower(), path
        assert "javascript:" not in re.sub(r">[^<]*<", "><", text), path  # not in markup
        assert not re.search(r"""\b(?:src|href)\s*=\s*["']?(?:https?:|//)""", text), path
        assert "<link" not in text and "Content-Security-Policy" in text, path
    text = page(gdir, "wrong-mul", "1_sums")
    assert "Because order does not matter." in text
    assert "&lt;script&gt;alert('xss')&lt;/script&gt;" in text  # the HTML, shown as text
    assert "waits for a grader" in text


def test_manual_grades_and_comments_appear_after_make_feedback(graded):
    from nbgrader.api import Gradebook

    root, gdir = graded
    with Gradebook(gdir.db_url) as gb:
        nb = gb.find_submission_notebook("1_sums", "a3", "wrong-mul")
        grade = next(g for g in nb.grades if g.name == "why_commutative")
        grade.manual_score, grade.needs_manual_grade = 0.5, False  # as formgrader saves it
        comment = next(c for c in nb.comments if c.name == "why_commutative")
        comment.manual_comment = "Close: <b>say</b> why the order does not matter."
        code = next(c for c in nb.comments if c.name == "mul")
        code.manual_comment = "Multiply, do not add."
        gb.db.commit()
    out = autograder(root, "feedback").stdout
    assert "Grades of submissions (from the gradebook)" in out
    text = page(gdir, "wrong-mul", "1_sums")
    assert "graded: 0.5 / 1" in text and "waits for a grader" not in text
    assert "Close: &lt;b&gt;say&lt;/b&gt; why" in text
    assert "Comments on your code" in text and "Multiply, do not add." in text
    row = grades(root)[("wrong-mul", "1_sums")]
    assert row["manual"] == "0.5" and "needs-manual" not in row["flags"]
    # other students' written answers still wait: the Canvas file says it is provisional
    out_dir = root / "autograder" / "out"
    assert not (out_dir / "canvas.csv").exists() and "PROVISIONAL" in out
    canvas = (out_dir / "canvas-PROVISIONAL.csv").read_text().splitlines()
    assert "wrong-mul,,,wrong-mul,,3.5" in canvas  # 1 (add) + 0.5 (written) + 2 (shout)


def test_test_source_only_when_the_course_says_so(graded):
    root, gdir = graded
    toml = root / "course.toml"
    before = toml.read_text()
    toml.write_text(before + "\n[feedback]\nshow_test_source = true\n")
    try:
        autograder(root, "feedback")
        text = page(gdir, "wrong-mul", "1_sums")
        assert "student.mul(" in text and "the test&#x27;s code" in text.replace("'", "&#x27;")
    finally:
        toml.write_text(before)
    autograder(root, "feedback")
    assert "student.mul(" not in page(gdir, "wrong-mul", "1_sums")


def test_extra_credit_is_capped_in_every_output(graded):
    """``[grade] extra_credit_cap``, through the real grading's reports: with 2_words (2 points)
    as extra credit and a cap of 1, a student who earned all of it counts 1 in grades.csv's
    total, the summary, the class report, canvas and Gradescope's score; grades.csv and the
    feedback show the 2 earned and the 1 counted."""
    root, gdir = graded
    toml = root / "course.toml"
    before = toml.read_text()
    capped = '[grade]\nextra_credit = ["2_words"]\nextra_credit_cap = 1\n'
    toml.write_text(before.replace("[grade]\n", capped, 1))
    try:
        autograder(root, "feedback")
        row = grades(root)[("full", "2_words")]
        assert (row["extra_earned"], row["extra_counted"], row["total"]) == ("2", "1", "1")
        assert grades(root)[("full", "1_sums")]["extra_counted"] == ""  # a regular part
        out = root / "autograder" / "out"
        summary = (out / "summary.txt").read_text()
        line = next(x for x in summary.splitlines() if x.startswith("full "))
        assert "+1 (2)" in line and "at most +1 above the total" in summary
        assert "full,,,full,,3" in (out / "canvas-PROVISIONAL.csv").read_text()  # 2 + 1, not 4
        assert (
            "extra credit counted</b> (every student, at most 1)"
            in (out / "report.html").read_text()
        )
        index = (gdir.feedback / "full" / "a3" / "index.html").read_text()
        assert "<b>1</b> extra credit" in index and "you earned 2, and 1 count" in index
        text = page(gdir, "full", "2_words")
        assert "Points: <b>2 / 2</b>" in text and "1 of these count" in text
        course = config.load(root)
        rows = class_rows(course, gdir, ["full"], 20, {}, Records(gdir))
        mine = [dataclasses.replace(r, student=gradescope.STUDENT) for r in rows]
        result = gradescope.results(course, gdir, mine, None, [], 1.0, [])
        assert result["score"] == 3  # 1_sums' 2 autograded points, 1 of 2_words' 2
        assert "2 / 2 extra credit earned, 1 of it in the score" in result["output"]
    finally:
        toml.write_text(before)
    autograder(root, "feedback")
    assert grades(root)[("full", "2_words")]["total"] == "2"


def test_markdown_is_rendered_inert():
    html = feedback.render_markdown(
        "**bold** <script>x()</script> [a](javascript:x()) ![i](data:text/html,<b>)"
    )
    assert "<strong>bold</strong>" in html
    assert "<script" not in html and 'href="javascript' not in html
    assert 'src="data:text/html' not in html


def test_review_is_for_the_instructor_only(graded):
    root, gdir = graded
    row = grades(root)[("noted", "1_sums")]
    assert row["flags"] == "needs-manual;review"  # noted, and no point lost for it
    assert row["autograded"] == grades(root)[("full", "1_sums")]["autograded"]
    assert f"review: cell 4 line 3: {tamper.RULES['tracing']}" in row["notes"].split(" | ")
    pages = {p.name: p.read_text() for p in (gdir.feedback / "noted" / "a3").glob("*.html")}
    assert set(pages) == {"1_sums.html", "2_words.html", "index.html"}
    for name, text in pages.items():
        assert "review" not in text and "tracer" not in text and "settrace" not in text, name
    assert "needs-manual" in pages["1_sums.html"] and "needs-manual" in pages["index.html"]


def _row_for_review() -> Row:
    row = Row("ann", "1_sums", autograded=1.0, autograded_max=1.0)
    row.flags = ["tampered", "review"]
    row.notes = ["edited locked cell test_add", "review: cell 3 line 2: uses ctypes"]
    return row


def test_pages_leave_the_review_flag_and_notes_out():
    row = _row_for_review()
    info = feedback.Material("1_sums", (), (), ())
    page = feedback.notebook_page(row, info, gradebook.Marks(), {})
    index = feedback.student_page("ann", [row], {"1_sums": "1_sums.html"})
    for text in (page, index):
        assert "tampered" in text and "edited locked cell test_add" in text  # the course's cells
        assert "review" not in text and "ctypes" not in text
    assert row.flags == ["tampered", "review"] and len(row.notes) == 2  # the row is unchanged


def test_every_value_on_the_pages_is_escaped():
    """The pages come from templates with autoescape on: a string from a student's run (a check
    message, an error, a file name in a note, a comment) never becomes markup; only the
    Markdown that render_markdown made inert does."""
    evil = "<script>alert(1)</script><img src=x onerror=alert(2)>"
    row = Row("ann", "1_sums", autograded=0.5, autograded_max=1.0, manual=0.0,
                     manual_max=1.0)  # fmt: skip
    row.flags, row.notes = ["renamed"], [f"handed in as {evil}.ipynb"]
    check = {"passed": False, "description": f"add {evil}", "points": 0.5, "message": evil}
    row.verdicts = {"test_add": {"score": 0.5, "checks": [check], "error": evil}}
    row.lost = [("test_add", f"add {evil}", 0.5, evil)]
    row.first_error = {"cell": evil, "words": evil}
    info = feedback.Material(
        "1_sums",
        (feedback.Test("test_add", 1.0, f"{evil}\n{evil}", evil),),
        (feedback.Written("q1", 1.0, "<p>Why?</p>"),),
        ("add",),
    )
    marks = gradebook.Marks(comments={"q1": evil, "add": evil})
    own = {"q1": [nbformat.v4.new_output("stream", name="stdout", text=evil)]}
    page = feedback.notebook_page(row, info, marks, {"q1": (evil, {})}, True, own)
    index = feedback.student_page("ann", [row], {"1_sums": "1_sums.html"})
    for text in (page, index):
        assert "<script" not in text and "<img src=x" not in text
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert "<p>Why?</p>" in page  # the question: Markdown the course rendered
    # every place of the page shows it: title, checks, error, source, note, comments, own run
    assert page.count("&lt;script&gt;") >= 10
