"""Grading runs only what the tests need, and shows the student's own outputs where it skips.

``judge.Spec.skipped_cells`` leaves out the cells tagged ``skip_in_grading`` unless a cell
that runs later may read what they bind (the student's own code included); ``ownrun`` keeps
the handed-in outputs of the cells left out, cleaned, and the feedback page shows them beside
the written answers, with where the student's own code first raised. End to end (the release
checks and the variant sets run as grading does): tests/grader/test_release.py, test_variants.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from autograder import feedback, gradebook, judge, ownrun, release, report, worker

PNG = (  # a 1x1 PNG
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)


def skip_cell(source: str) -> nbformat.NotebookNode:
    cell = new_code_cell(source)
    cell.metadata["tags"] = [judge.SKIP_TAG]
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


def spec() -> judge.Spec:
    return judge.spec_of(course_notebook(), "nb")


def test_names_a_cell_binds_and_reads():
    bound, loaded = judge.names_of(
        "x = x + 1\nfor i in range(3):\n    y = i\n"
        "def f(a):\n    return a + z + y\n%matplotlib inline\n!pip list\nimport numpy as np\n"
    )
    assert {"x", "i", "y", "f", "np"} <= bound
    assert {"x", "range", "z"} <= loaded  # x is read before this cell binds it
    assert not {"a", "y", "i"} & loaded  # a parameter; names bound before they are read
    assert judge.ANY_NAME in judge.names_of("print(eval('model'))")[1]
    assert judge.ANY_NAME in judge.names_of("def broken(:")[1]
    assert judge.ANY_NAME in judge.names_of("from m import *")[0]


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
    nb.cells[1].metadata["tags"] = [judge.SKIP_TAG]
    problems = release.spec_problems(judge.spec_of(nb, "nb"), nb)
    assert any("only given code cells may be tagged skip_in_grading" in p for p in problems)
    assert not release.spec_problems(spec(), course_notebook())


def handed_in(tmp_path: Path, outputs: dict[int, list]) -> Path:
    nb = course_notebook()
    for index, outs in outputs.items():
        nb.cells[index].outputs = outs
    path = tmp_path / "nb.ipynb"
    path.write_text(nbformat.writes(nb))
    return path


def test_own_outputs_are_kept_cleaned_and_shown_as_the_students(tmp_path):
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
    kept = staged.cells[3].metadata[ownrun.KEY]
    assert "<script" not in json.dumps(kept)
    ownrun.show(staged.cells[2])
    assert staged.cells[2].outputs[0].text == ownrun.NOTE
    assert staged.cells[2].outputs[1].text == "accuracy 0.45\n"
    assert ownrun.KEY not in staged.cells[2].metadata
    # a skipped cell without outputs in the file says so
    bare = course_notebook()
    ownrun.attach(bare, handed_in(tmp_path, {}), spec())
    ownrun.show(bare.cells[2])
    assert [o.text for o in bare.cells[2].outputs] == [ownrun.NO_OUTPUT]
    # a file that is not JSON gives no outputs, and no error
    broken = tmp_path / "broken.ipynb"
    broken.write_text("{not json")
    assert ownrun.attach(course_notebook(), broken, spec()) == 0


def test_own_outputs_are_capped(tmp_path, monkeypatch):
    monkeypatch.setattr(ownrun, "CELL_CHARS", 2000)
    many = [new_output("stream", name="stdout", text="x" * 500) for _ in range(20)]
    staged = course_notebook()
    ownrun.attach(staged, handed_in(tmp_path, {2: many}), spec())
    kept = staged.cells[2].metadata[ownrun.KEY]
    assert len(kept) < 20 and "is not kept" in kept[-1]["text"]


def graded_notebook(tmp_path: Path) -> Path:
    """A graded notebook as grading leaves it: cells 2 and 3 skipped, the answer cell raised,
    and a cell that ran printed the note itself (the student's code may print anything)."""
    nb = course_notebook()
    nb.cells[1].outputs = [new_output("error", ename="NameError", evalue="n", traceback=[])]
    for index, text in ((2, "accuracy 0.45\n"), (3, "<b>plot</b>")):
        nb.cells[index].outputs = [
            new_output("stream", name="stdout", text=ownrun.NOTE),
            new_output("stream", name="stdout", text=text),
        ]
    nb.cells[0].outputs = [
        new_output("stream", name="stdout", text=ownrun.NOTE),
        new_output("stream", name="stdout", text="grader run: never shown"),
    ]
    path = tmp_path / "graded.ipynb"
    path.write_text(nbformat.writes(nb))
    return path


def test_feedback_shows_own_results_beside_the_answer_and_the_first_error_first(tmp_path):
    path = graded_notebook(tmp_path)
    own = feedback.own_results(path, [2, 3])
    assert [o.text for o in own["q1"]] == ["accuracy 0.45\n", "<b>plot</b>"]
    assert feedback.own_results(path, []) == {}
    found = worker.inspect(path, [2, 3])
    assert found["first_error"] == {"cell": "answer", "words": "your code raised NameError"}
    row = report.Row("ann", "nb", autograded_max=1, manual_max=1, skipped=[2, 3])
    row.first_error = found["first_error"]
    info = feedback.Material("nb", (), (feedback.Written("q1", 1.0, "<p>Which words?</p>"),), ())
    page = feedback.notebook_page(row, info, gradebook.Marks(), {"q1": ("my answer", {})},
                                  own=own)  # fmt: skip
    assert "Your own results for this question" in page and "accuracy 0.45" in page
    assert "&lt;b&gt;plot&lt;/b&gt;" in page and "<b>plot</b>" not in page
    assert "grader run: never shown" not in page
    assert page.index("Start here: the first error in your code") < page.index("my answer")
    assert "<code>answer</code> stopped: your code raised NameError" in page


def test_first_error_names_only_pythons_own_errors(tmp_path):
    nb = course_notebook()
    nb.cells[1].outputs = [new_output("error", ename="<img src=x>Leak", evalue="", traceback=[])]
    path = tmp_path / "g.ipynb"
    path.write_text(nbformat.writes(nb))
    first = worker.inspect(path)["first_error"]
    assert first == {"cell": "answer", "words": "your code raised an exception"}
