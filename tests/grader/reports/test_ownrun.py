"""Grading runs only what the tests need, and shows the student's own outputs where it skips.

``spec.Spec.skipped_cells`` leaves out the cells tagged ``skip_in_grading`` unless a cell
that runs later may read what they bind (the student's own code included); ``ownrun`` keeps
the handed-in outputs of the cells left out, cleaned, and the feedback page shows them beside
the written answers, with where the student's own code first raised. End to end (the release
checks and the variant sets run as grading does): tests/grader/publish/test_release.py,
test_variants.py.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from autograder.course import gradebook
from autograder.course.spec import ANY_NAME, SKIP_TAG, Spec, names_of, spec_of
from autograder.marking import worker
from autograder.publish import releasechecks
from autograder.reports import feedback, ownrun, safehtml, sanitise
from autograder.reports.rows import Row

PNG = (  # a 1x1 PNG
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)


def skip_cell(source: str) -> nbformat.NotebookNode:
    cell = new_code_cell(source)
    cell.metadata["tags"] = [SKIP_TAG]
    return cell


def answer_cell(source: str, gid: str = "answer") -> nbformat.NotebookNode:
    meta = {"solution": True, "grade": False, "locked": False, "grade_id": gid,
            "schema_version": 3}  # fmt: skip
    return new_code_cell(source, metadata={"nbgrader": meta})


def written_cell(gid: str) -> nbformat.NotebookNode:
    meta = {"solution": True, "grade": True, "locked": False, "grade_id": gid, "points": 1,
            "schema_version": 3}  # fmt: skip
    return new_markdown_cell("my answer", metadata={"nbgrader": meta})


TRAIN = "model = train(data)\nprint('accuracy', 0.9)"
PLOT = "plot(model)"


def course_notebook() -> nbformat.NotebookNode:
    return new_notebook(
        cells=[
            new_code_cell("data = load()"),
            answer_cell("def f(x):\n    return x + 1"),
            skip_cell(TRAIN),
            skip_cell(PLOT),
            new_markdown_cell("Which words does your model get wrong?"),
            written_cell("q1"),
        ]
    )


def spec() -> Spec:
    return spec_of(course_notebook(), "nb")


def test_names_a_cell_binds_and_reads():
    bound, loaded = names_of(
        "x = x + 1\nfor i in range(3):\n    y = i\n"
        "def f(a):\n    return a + z + y\n%matplotlib inline\n!pip list\nimport numpy as np\n"
    )
    assert {"x", "i", "y", "f", "np"} <= bound
    assert {"x", "range", "z"} <= loaded  # x is read before this cell binds it
    assert not {"a", "y", "i"} & loaded  # a parameter; names bound before they are read
    assert ANY_NAME in names_of("print(eval('model'))")[1]
    assert ANY_NAME in names_of("def broken(:")[1]
    assert ANY_NAME in names_of("from m import *")[0]


def test_tagged_cells_are_left_out_unless_a_later_cell_reads_them():
    nb = course_notebook()
    assert spec().skip == (TRAIN, PLOT)
    assert spec().skipped_cells(nb.cells) == [2, 3]
    # a student's own later cell that uses the trained model: that training cell runs
    nb.cells.append(answer_cell("print(model.accuracy)", "mine"))
    assert spec().skipped_cells(nb.cells) == [3]
    # dynamic reads: nothing before may be left out
    nb.cells[-1] = answer_cell("print(globals()['model'])", "mine")
    assert spec().skipped_cells(nb.cells) == []
    # a student who changed a tagged cell's code: it runs (it is not the course's any more)
    edited = course_notebook()
    edited.cells[2].source = TRAIN.replace("0.9", "0.95")
    edited.cells[2].metadata["tags"] = []
    assert spec().skipped_cells(edited.cells) == [3]
    # blank lines and trailing spaces do not count as a change
    edited.cells[2].source = "\n" + TRAIN.replace("\n", "   \n") + "\n\n"
    assert spec().skipped_cells(edited.cells) == [2, 3]


def test_the_tag_is_refused_on_answers_tests_and_markdown():
    nb = course_notebook()
    nb.cells[1].metadata["tags"] = [SKIP_TAG]
    problems = releasechecks.spec_problems(spec_of(nb, "nb"), nb)
    assert any("only given code cells may be tagged skip_in_grading" in p for p in problems)
    assert not releasechecks.spec_problems(spec(), course_notebook())


def handed_in(tmp_path: Path, outputs: dict[int, list]) -> Path:
    nb = course_notebook()
    for index, outs in outputs.items():
        nb.cells[index].outputs = outs
    path = tmp_path / "nb.ipynb"
    path.write_text(nbformat.writes(nb))
    return path


def test_own_outputs_are_kept_bounded_and_shown_framed_as_the_students(tmp_path):
    outputs = {
        2: [new_output("stream", name="stdout", text="accuracy 0.45\n")],
        3: [
            new_output("display_data", data={"image/png": PNG, "text/plain": "<Figure>"}),
            new_output("display_data", data={"text/html": "<script>alert(1)</script><b>x</b>"}),
        ],
        1: [new_output("stream", name="stdout", text="the answer cell runs: not kept\n")],
    }
    path = handed_in(tmp_path, outputs)
    staged = course_notebook()
    staged.cells[1].metadata[ownrun.KEY] = [{"output_type": "stream", "text": "forged"}]
    assert ownrun.attach(staged, path, spec()) == 2
    assert ownrun.KEY not in staged.cells[1].metadata  # a key the student wrote is removed
    ownrun.show(staged.cells[3])  # in the worker: cleaned there, under the student's limits
    (framed,) = staged.cells[3].outputs
    assert "<script" not in json.dumps(framed) and "<b>x</b>" in framed.data["text/html"]
    assert ownrun.LABEL in framed.data["text/html"] and ownrun.SKIPPED in framed.data["text/html"]
    ownrun.show(staged.cells[2])
    assert "accuracy 0.45" in staged.cells[2].outputs[0].data["text/plain"]
    assert ownrun.KEY not in staged.cells[2].metadata
    graded = sanitise.sanitise_notebook(staged)  # the frame stays the grader's, as made
    assert graded.cells[2].outputs[0].data["text/html"].count("border:3px solid") == 1
    # a skipped cell without outputs in the file says so
    bare = course_notebook()
    ownrun.attach(bare, handed_in(tmp_path, {}), spec())
    ownrun.show(bare.cells[2])
    assert ownrun.NO_OUTPUT in bare.cells[2].outputs[0].data["text/plain"]
    # a file that is not JSON gives no outputs, and no error
    broken = tmp_path / "broken.ipynb"
    broken.write_text("{not json")
    assert ownrun.attach(course_notebook(), broken, spec()) == 0


def test_intake_parses_no_student_markup_and_bounds_it_in_linear_time(tmp_path, monkeypatch):
    """Issue 37: cleaning 32,000 nested <div>s in the class-wide process cost 624 s. The
    intake only bounds own outputs (no parser: cleaning happens in the student's worker);
    what is over a bound is the fixed note, and a 20 MB output is refused in linear time."""

    def no_parser(*args):
        raise AssertionError("student markup parsed in the class-wide process")

    monkeypatch.setattr(sanitise, "clean_output", no_parser)
    monkeypatch.setattr(sanitise, "sanitise_html", no_parser)
    deep = "<div>" * 32_000 + "x" + "</div>" * 32_000
    huge = "<div>" * 3_800_000  # 19 MB: under the file cap (20 MB), over every other
    flat = "<table>" + "<tr><td>1</td></tr>" * 100 + "</table>"
    outs = [new_output("display_data", data={"text/html": t}) for t in (deep, flat, huge)]
    staged = course_notebook()
    start = time.perf_counter()
    ownrun.attach(staged, handed_in(tmp_path, {3: outs}), spec())
    seconds = time.perf_counter() - start
    kept = staged.cells[3].metadata[ownrun.KEY]
    assert kept[0] == ownrun.TOO_BIG and "".join(kept[1]["data"]["text/html"]) == flat
    assert kept[2] in (ownrun.TOO_BIG, ownrun.CUT)
    assert seconds < 30, seconds  # linear: about a second here


def test_own_outputs_are_capped(tmp_path, monkeypatch):
    monkeypatch.setattr(ownrun, "CELL_CHARS", 2000)
    many = [new_output("stream", name="stdout", text="x" * 500) for _ in range(20)]
    staged = course_notebook()
    ownrun.attach(staged, handed_in(tmp_path, {2: many}), spec())
    kept = staged.cells[2].metadata[ownrun.KEY]
    assert len(kept) < 20 and kept[-1] == ownrun.CUT


def test_a_changed_tagged_cell_shows_the_students_outputs_and_the_graders_run(tmp_path):
    """Issue 38: a student who changed a training cell (it runs in quick mode) keeps their
    own results on show, framed as theirs; the grader's run follows, labelled as such."""
    nb = course_notebook()
    nb.cells[2].source = TRAIN.replace("0.9", "0.95")  # the student's own settings
    nb.cells[2].outputs = [new_output("stream", name="stdout", text="my full run: 0.93\n")]
    path = tmp_path / "nb.ipynb"
    path.write_text(nbformat.writes(nb))
    staged = nbformat.reads(nbformat.writes(nb), as_version=4)
    staged.cells[2].outputs = []
    assert spec().skipped_cells(staged.cells) == [3]  # it runs when grading
    assert ownrun.attach(staged, path, spec()) == 1
    kept = staged.cells[2].metadata.pop(ownrun.KEY)
    staged.cells[2].outputs = [new_output("stream", name="stdout", text="quick: 0.41\n")]
    ownrun.show_rerun(staged.cells[2], kept)
    own, note, run = staged.cells[2].outputs
    assert (
        "my full run: 0.93" in own.data["text/html"] and ownrun.RERUN_LABEL in own.data["text/html"]
    )
    assert ownrun.RERUN in note.data["text/plain"] and run.text == "quick: 0.41\n"
    found = ownrun.own_outputs(sanitise.sanitise_notebook(staged))
    assert [o.text for o in found[2][0]] == ["my full run: 0.93\n"] and found[2][1] is True


def graded_notebook(tmp_path: Path) -> Path:
    """A graded notebook as grading leaves it: cells 2 and 3 skipped (their own outputs in
    the grader's frames), the answer cell raised, and a cell that ran printed the note and a
    frame's metadata itself (the student's code may print anything)."""
    nb = course_notebook()
    nb.cells[1].outputs = [new_output("error", ename="NameError", evalue="n", traceback=[])]
    for index, text in ((2, "accuracy 0.45\n"), (3, "<b>plot</b>")):
        nb.cells[index].metadata[ownrun.KEY] = [new_output("stream", name="stdout", text=text)]
        ownrun.show(nb.cells[index])
    forged = new_output("display_data", data={"text/plain": "x"}, metadata={ownrun.OWN: []})
    forged.metadata[ownrun.OWN] = [new_output("stream", name="stdout", text="grader run")]
    nb.cells[0].outputs = [
        new_output("stream", name="stdout", text=ownrun.NO_OUTPUT),
        new_output("stream", name="stdout", text="grader run: never shown"),
        forged,
    ]
    sanitise.sanitise_notebook(nb)
    path = tmp_path / "graded.ipynb"
    path.write_text(nbformat.writes(nb))
    return path


def test_feedback_shows_own_results_beside_the_answer_and_the_first_error_first(tmp_path):
    path = graded_notebook(tmp_path)
    own = feedback.own_results(feedback.graded_copy(path))
    assert [o.text for o in own["q1"]] == ["accuracy 0.45\n", "<b>plot</b>"]
    assert feedback.own_results(feedback.graded_copy(path), [2]) == {"q1": own["q1"][:1]}
    found = worker.inspect(path, [2, 3])
    assert found["first_error"] == {"cell": "answer", "words": "your code raised NameError"}
    row = Row("ann", "nb", autograded_max=1, manual_max=1, skipped=[2, 3])
    row.first_error = found["first_error"]
    info = feedback.Material("nb", (), (feedback.Written("q1", 1.0, "<p>Which words?</p>"),), ())
    page = feedback.notebook_page(row, info, gradebook.Marks(), {"q1": ("my answer", {})},
                                  own=own)  # fmt: skip
    assert "Your own results for this question" in page and "accuracy 0.45" in page
    assert "&lt;b&gt;plot&lt;/b&gt;" in page and "<b>plot</b>" not in page
    assert "grader run" not in page
    assert page.index("Start here: the first error in your code") < page.index("my answer")
    assert "<code>answer</code> stopped: your code raised NameError" in page


def test_first_error_names_only_pythons_own_errors(tmp_path):
    nb = course_notebook()
    nb.cells[1].outputs = [new_output("error", ename="<img src=x>Leak", evalue="", traceback=[])]
    path = tmp_path / "g.ipynb"
    path.write_text(nbformat.writes(nb))
    first = worker.inspect(path)["first_error"]
    assert first == {"cell": "answer", "words": "your code raised an exception"}


# --- through make grade (issues 37 and 38) ---------------------------------------------------

FORGED = (
    "[autograder] This cell was run when grading (the tests need it).\nAutograder: 1 / 1 points\n"
)


def test_make_grade_shows_own_outputs_framed_bounded_and_marked(tmp_path):
    """One ``make grade`` of three students of the tiny course, all with full answers: ``deep``
    handed in HTML nested deeper than the bound in the cell grading skips (it keeps its points,
    the output is the fixed note), ``changed`` changed that cell (it runs in quick mode: their
    own result and the grader's run are both shown, each labelled), ``forger`` printed lines
    like the grader's notes (marked as theirs, in the formgrader's notebook and the feedback)."""
    from helpers import autograder, course_sources, grades, make_course

    root = make_course(tmp_path / "course")
    src, gdir = course_sources(root)
    nested = "<div>" * 150 + "NESTED-TEXT" + "</div>" * 150
    own = {
        "deep": [new_output("display_data", data={"text/html": nested, "text/plain": "D"})],
        "changed": [new_output("stream", name="stdout", text="my full run: 0.93\n")],
        "forger": [new_output("stream", name="stdout", text=FORGED)],
    }
    for student, outputs in own.items():
        folder = gdir.submitted / student / "a3"
        folder.mkdir(parents=True)
        sums = src.solved("1_sums")
        cell = next(c for c in sums.cells if c.source.startswith('print("2 + 3 ='))
        cell.outputs = outputs
        if student == "changed":
            cell.source = 'print("quick:", add(2, 3))'
        (folder / "1_sums.ipynb").write_text(nbformat.writes(sums))
        (folder / "2_words.ipynb").write_text(nbformat.writes(src.solved("2_words")))
    autograder(root, "grade", "--jobs", "2")
    table = grades(root)
    for student in own:
        assert table[(student, "1_sums")]["autograded"] == "2", table[(student, "1_sums")]  # full

    def shown(student: str) -> tuple[list, str]:
        nb = nbformat.read(gdir.autograded / student / "a3" / "1_sums.ipynb", as_version=4)
        cell = next(c for c in nb.cells if c.source.startswith("print("))
        page = (gdir.feedback / student / "a3" / "1_sums.html").read_text()
        return cell.outputs, page

    (framed,), page = shown("deep")
    assert (
        safehtml.TOO_BIG in framed.data["text/html"]
        and "NESTED-TEXT" not in framed.data["text/html"]
    )
    assert ownrun.LABEL in framed.data["text/html"] and ownrun.SKIPPED in framed.data["text/html"]

    (framed, note, run), page = shown("changed")
    assert "my full run: 0.93" in framed.data["text/html"] and framed.metadata[ownrun.RAN]
    assert ownrun.RERUN in note.data["text/plain"] and run.text == "quick: 5\n"
    assert "my full run: 0.93" in page and feedback.RERUN_NOTE in page and "quick: 5" not in page

    (framed,), page = shown("forger")
    for line in FORGED.splitlines():
        assert safehtml.STUDENT_MARK + line in framed.data["text/html"]
        assert safehtml.STUDENT_MARK + line in page
    assert "\n[autograder] This cell was run" not in page.replace("<pre>", "\n")
