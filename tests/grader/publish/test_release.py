"""`make release`: the student notebooks and bundle, and the checks that must fail loudly.

End to end on temporary copies of the tiny course in tests/fixtures/course (passing; with one
fault of each kind the static checks find, which stop it before any notebook runs, a single
solution line pasted anywhere among them; with the faults only running finds; with the points
and lint faults that stop it before nbgrader) and of the repository's own solutions (passing,
and the committed assignments/a3 up to date); the checks alone on hand-made notebooks. The
release history: a second release of the tiny course after a test's docstring changed records
both, and the intake accepts a notebook made from the first; it also records what each release
verified, so that only changed notebooks (or those --notebook names) run again.
"""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from autograder.course import config, nbgrader_dir, notebooks, spec
from autograder.course.spec import Spec
from autograder.handin import intake
from autograder.publish import leaks, release, releasechecks, releasehistory, releaseruns
from helpers import ENV, FIXTURE, ROOT, make_course


def run_release(root: Path, *extra: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "autograder", "--root", str(root), "release", "--jobs", "2"]
    return subprocess.run(
        [*cmd, *extra], cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=3600
    )


@pytest.fixture(scope="module")
def tiny_release(tmp_path_factory):
    root = make_course(tmp_path_factory.mktemp("tiny-release"))
    proc = run_release(root)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return root, proc.stdout


def test_release_writes_stamped_student_notebooks(tiny_release):
    root, out = tiny_release
    folder = root / "assignments" / "a3"
    assert sorted(p.name for p in folder.iterdir()) == ["1_sums.ipynb", "2_words.ipynb"]
    text = (folder / "1_sums.ipynb").read_text()
    nb = nbformat.read(folder / "1_sums.ipynb", as_version=4)
    assert all(not c.get("outputs") and c.get("execution_count") is None for c in nb.cells)
    for secret in ("BEGIN", "END SOLUTION", "HIDDEN", "return a + b", "product = a * b",
                   "add(-1, 1)", "mul(-4, 5)", "Because counting"):  # fmt: skip
        assert secret not in text, secret
    assert "raise NotImplementedError()" in text and "YOUR ANSWER HERE" in text
    assert "add(1, 2) == 3" in text  # the visible test stays
    assert "{{" not in text
    assert "git+https://github.com/nmt-course/tiny-course@spring" in text
    colab = "https://colab.research.google.com/github/nmt-course/tiny-course/blob/spring"
    assert f"{colab}/assignments/a3/1_sums.ipynb" in text
    assert f"{colab}/assignments/a3/2_words.ipynb" in out


def test_release_bundle_holds_only_the_student_copy(tiny_release):
    root, _ = tiny_release
    bundle = root / "autograder" / "out" / "a3-student.zip"
    with zipfile.ZipFile(bundle) as zf:
        assert sorted(zf.namelist()) == ["a3/1_sums.ipynb", "a3/2_words.ipynb", "a3/README.md"]
        readme = zf.read("a3/README.md").decode()
        for name in ("1_sums", "2_words"):
            assert (
                zf.read(f"a3/{name}.ipynb")
                == (root / "assignments/a3" / f"{name}.ipynb").read_bytes()
            )
    assert (
        'pip install "course-lib @ git+https://github.com/nmt-course/tiny-course@spring"' in readme
    )
    assert "names unchanged" in readme


STATIC_FAULTS = {  # what each fault found without running must produce in the error report
    "no judge": "2_words test_nojudge: no judge cell with checks follows this test",
    "points do not add up": "its checks are worth 1 points, the test cell 2",
    "hidden region": "its hidden region would run in the student's kernel",
    "reference answer": "lines in a row of a solution of 2_words",
    "instructor-only text": "a sentence of an instructor-only answer of 1_sums is in the release",
    "misspelt marker": "marker left in the release: # BEGIN SOLUTON",
    "wrong badge": "2_words: Colab badge opens",
    "placeholder repository": "github_repo = 'example-org/tiny-course' is a placeholder",
}
RUN_FAULTS = {  # what each fault found by running the notebooks must produce
    "solution fails": "1_sums (solution) test_mul: raised AssertionError",
    "judge fails the solution": "1_sums (solution) test_mul: the judge fails 'mul(2, 3) is 6'",
    "free point": "2_words (blank) test_free: 'anything' passes on the blank notebook",
    "broken given code": "(blank) cell 5: given code raised ModuleNotFoundError",
}


def _judge(source: str) -> nbformat.NotebookNode:
    cell = new_code_cell(source)
    cell.metadata["tags"] = ["judge"]
    return cell


def _test(gid: str, source: str, points: float = 1) -> nbformat.NotebookNode:
    meta = {"grade_id": gid, "grade": True, "locked": True, "points": points, "solution": False}
    return new_code_cell(source, id=gid, metadata={"nbgrader": {**meta, "schema_version": 3}})


INSTRUCTOR_NOTE = (
    "Reference result for TAs: the mean of the class was seven out of ten on this part."
)
SOLUTIONS = ("1_sums", "2_words")


def _solutions(root: Path) -> tuple[list[Path], list[nbformat.NotebookNode]]:
    paths = [root / "solutions" / "a3" / f"{n}.ipynb" for n in SOLUTIONS]
    return paths, [nbformat.read(p, as_version=4) for p in paths]


def _points(root: Path, words: int) -> None:
    """2_words's autograded points in course.toml (its tests as the faults left them)."""
    toml = root / "course.toml"
    toml.write_text(
        toml.read_text().replace(
            "2_words = { autograded = 2,", f"2_words = {{ autograded = {words},"
        )
    )


def break_statically(root: Path) -> None:
    """One fault of each kind the release finds without running anything, in the tiny course's
    solutions (none the cheap checks stop at: the points are the handout's, and ruff passes)."""
    toml = root / "course.toml"
    toml.write_text(toml.read_text().replace("nmt-course/tiny-course", "example-org/tiny-course"))
    _points(root, 5)
    paths, (nb1, nb2) = _solutions(root)
    nb1.cells.append(new_code_cell("# BEGIN SOLUTON\nsecret = 42\n# END SOLUTION"))
    note = new_markdown_cell(INSTRUCTOR_NOTE)
    note.metadata["tags"] = ["instructor"]
    nb1.cells.append(note)
    nb2.cells.append(new_markdown_cell("## Notes\n\nAs announced. " + INSTRUCTOR_NOTE))
    answer = [
        "shouted_word = word.upper()",
        'exclamation_mark = "!"',
        "result_with_mark = shouted_word + exclamation_mark",
        "return result_with_mark",
    ]
    cells2 = {c.id: c for c in nb2.cells}
    cells2["shout"].source = cells2["shout"].source.replace(
        '    return word.upper() + "!"', "\n".join("    " + line for line in answer)
    )
    cells2["cell-0"].source = cells2["cell-0"].source.replace("2_words.ipynb", "1_sums.ipynb")
    halves = _judge('@check("half", points=1)\ndef _(student):\n    student.shout("x")')
    leaky = _test(
        "test_leaky",
        '"""A probe."""\nassert True\n### BEGIN HIDDEN TESTS\nvisible_only = shout("a")\n'
        "### END HIDDEN TESTS",
        points=2,
    )
    nb2.cells[6:6] = [
        _test("test_nojudge", '"""No judge follows."""\nassert True'),
        leaky,
        halves,
        new_code_cell("def reference(word):\n" + "\n".join("    " + line for line in answer)),
    ]
    for nb, path in zip((nb1, nb2), paths, strict=True):
        nbformat.write(nb, path)


def break_runs(root: Path) -> None:
    """One fault of each kind only running the notebooks finds, in the tiny course."""
    _points(root, 3)
    paths, (nb1, nb2) = _solutions(root)
    cells1 = {c.id: c for c in nb1.cells}
    cells1["mul"].source = cells1["mul"].source.replace("product = a * b", "product = a * b + 1")
    nb1.cells.insert(6, new_code_cell("import nonexistent_module_xyz  # noqa: F401"))
    free = _judge('@check("anything", points=1)\ndef _(student):\n    pass')
    nb2.cells[6:6] = [_test("test_free", '"""A free point."""\nassert True'), free]
    for nb, path in zip((nb1, nb2), paths, strict=True):
        nbformat.write(nb, path)


def _published_nothing(root: Path) -> None:
    assert not (root / "assignments").exists()
    assert not (root / "autograder" / "out" / "a3-student.zip").exists()


def _no_notebook_runs(monkeypatch) -> list:
    """Make running a notebook a recorded failure; the list of what tried."""
    tried: list = []

    def refuse(src, *args, **kwargs):
        tried.append(src)
        return "the test forbids running notebooks here"

    monkeypatch.setattr(releaseruns, "execute_in_child", refuse)
    return tried


def test_static_faults_stop_the_release_before_any_notebook_runs(tmp_path, monkeypatch):
    """Every static check reports before anything runs, and the release stops there."""
    root = make_course(tmp_path)
    break_statically(root)
    tried = _no_notebook_runs(monkeypatch)
    with pytest.raises(release.ReleaseError) as err:
        release.release(config.load(root), jobs=1, log=lambda *a: None)
    report = str(err.value)
    assert report.startswith("release stopped before running any notebook"), report
    missing = [fault for fault, message in STATIC_FAULTS.items() if message not in report]
    assert not missing, f"not reported: {missing}\n{report}"
    assert tried == []  # no notebook ran
    _published_nothing(root)


def test_release_fails_loudly_and_publishes_nothing(tmp_path):
    root = make_course(tmp_path)
    break_runs(root)
    proc = run_release(root)
    assert proc.returncode == 1
    assert "RELEASE FAILED" in proc.stderr
    missing = [fault for fault, message in RUN_FAULTS.items() if message not in proc.stderr]
    assert not missing, f"not reported: {missing}\n{proc.stderr}"
    _published_nothing(root)


def _paste(nb: nbformat.NotebookNode, after: str, cell: nbformat.NotebookNode) -> None:
    """Insert ``cell`` after the cell with id ``after``."""
    index = next(i for i, c in enumerate(nb.cells) if c.id == after)
    nb.cells.insert(index + 1, cell)


def test_a_single_solution_line_in_any_visible_cell_stops_the_release(tmp_path, monkeypatch):
    """One line of a solution, pasted into a given code or Markdown cell of its own notebook or
    of another, with its comment or without, is refused with the line, where it comes from and
    how to allow it; no notebook runs."""
    root = make_course(tmp_path)
    paths, (nb1, nb2) = _solutions(root)
    pastes = [  # notebook, after cell, the pasted cell, what the report says
        (nb1, "cell-8", new_code_cell('def loud(word):\n    return word.upper() + "!"  # as shout'),
         '1_sums cell 9: solution or hidden-test line left: \'return word.upper() + "!"\' '
         "(a line of 2_words shout)"),
        (nb1, "cell-9", new_markdown_cell("Compare with:\n\n    return a + b\n"),
         "1_sums cell 11: solution or hidden-test line left: 'return a + b' "
         "(a line of 1_sums add)"),
        (nb2, "cell-5", new_code_cell("def total(a, b):\n    product = a * b  # a product\n"
                                      "    return product"),
         "2_words cell 7: solution or hidden-test line left: 'product = a * b' "
         "(a line of 1_sums mul)"),
        (nb2, "cell-2", new_markdown_cell("Hint: `product = a * b`, as in part 1."),
         "2_words cell 3: solution or hidden-test line left: 'product = a * b'"),
    ]  # fmt: skip
    for nb, after, cell, _ in reversed(pastes):
        _paste(nb, after, cell)
    for nb, path in zip((nb1, nb2), paths, strict=True):
        nbformat.write(nb, path)
    tried = _no_notebook_runs(monkeypatch)
    with pytest.raises(release.ReleaseError) as err:
        release.release(config.load(root), jobs=1, log=lambda *a: None)
    report = str(err.value)
    assert report.startswith("release stopped before running any notebook: 4 problem(s)"), report
    for *_, message in pastes:
        assert message in report, message + "\n" + report
    assert "add the line to [release] allowed_copies in course.toml" in report
    assert tried == []
    _published_nothing(root)


def _leaks(sources: dict, released: dict, allowed: tuple[str, ...] = ()) -> list[str]:
    return leaks.check_no_secrets(sources, released, allowed)


def test_lines_given_code_also_holds_trivial_lines_and_allowed_copies_pass():
    """A solution line is not a leak when the given code of two notebooks or more holds it (an
    idiom), when it is trivial (short, an import, a bare name, a call without arguments, a
    signature), or when [release] allowed_copies names it or its region's first line."""
    answer = (
        "def f(x):\n    ### BEGIN SOLUTION\n    import math\n    hidden = torch.tanh(x @ weight)\n"
        "    with torch.no_grad():\n    optimizer.zero_grad()\n    h = x\n"
        "    def helper(y, z):\n    return hidden\n    ### END SOLUTION"
    )
    given = new_code_cell("with torch.no_grad():\n    pass")
    sources = {"a": _nb(_solution("f", answer), given), "b": _nb(given)}
    released = {
        "a": _nb(new_code_cell("def f(x):\n    raise NotImplementedError()"), given),
        "b": _nb(
            new_code_cell("import math\noptimizer.zero_grad()\nh = x\ndef helper(y, z):"),
            new_markdown_cell("`return hidden`, then `with torch.no_grad():`"),
            given,
        ),
    }
    assert _leaks(sources, released) == []
    leaked = copy.deepcopy(released)
    leaked["b"].cells.append(new_code_cell("hidden  =  torch.tanh(x @ weight)  # as f does"))
    assert _leaks(sources, leaked) == [
        "b cell 3: solution or hidden-test line left: 'hidden = torch.tanh(x @ weight)' (a "
        "line of a f); if that is on purpose, add the line to [release] allowed_copies in "
        "course.toml"
    ]
    for allowed in ("hidden = torch.tanh(x @ weight)  # shown in b", "import math"):
        assert _leaks(sources, leaked, (allowed,)) == [], allowed  # the line, the region


def test_points_and_lint_stop_the_release_before_anything_runs(tmp_path):
    root = make_course(tmp_path)
    toml = root / "course.toml"
    text = toml.read_text()
    assert "2_words = { autograded = 2, manual = 0 }" in text
    text = text.replace("2_words = { autograded = 2, manual = 0 }\n", "")
    toml.write_text(text.replace("1_sums = { autograded = 2, manual = 1 }",
                                 "1_sums = { autograded = 2, manual = 1.5 }"))  # fmt: skip
    path = root / "solutions" / "a3" / "2_words.ipynb"
    nb = nbformat.read(path, as_version=4)
    nb.cells.append(new_code_cell("import itertools\nx=1"))  # unused import, unformatted
    nbformat.write(nb, path)
    start = time.perf_counter()
    proc = run_release(root)
    seconds = time.perf_counter() - start
    assert proc.returncode == 1, proc.stdout + proc.stderr
    for message in (
        "release stopped before running anything: 4 problem(s)",
        "2_words: course.toml fixes no points for this notebook: add the line "
        "`2_words = { autograded = 2, manual = 0 }` under [release.points]",
        "1_sums: its written answers add up to 1 points, the handout gives them 1.5 "
        "([release.points] 1_sums in course.toml)",
        "lint: `ruff check",
        "F401",
        "lint: `ruff format --check",
        "would be reformatted",
    ):
        assert message in proc.stderr, message + "\n" + proc.stderr
    assert "generating the student version" not in proc.stdout  # nbgrader never ran
    assert (
        not (root / "autograder" / "class" / "release").exists()
        and not (root / "assignments").exists()
    )
    assert seconds < 30, f"{seconds:.0f} s: the cheap checks should take seconds"


def test_handout_points_must_be_autograded_and_manual_numbers(tmp_path):
    base = (FIXTURE / "course.toml").read_text()
    for bad in ("1_sums = { autograded = 2 }", '1_sums = { autograded = "2", manual = 1 }',
                "1_sums = { autograded = 2, manual = -1 }", "1_sums = 3"):  # fmt: skip
        (tmp_path / "course.toml").write_text(
            base.replace("1_sums = { autograded = 2, manual = 1 }", bad)
        )
        with pytest.raises(config.ConfigError, match=r"\[release.points\] 1_sums must be"):
            config.load(tmp_path)


def _history(root: Path) -> intake.History:
    return intake.History.load(root / "autograder" / "judges" / "a3.history.json")


def test_a_notebook_of_an_earlier_release_is_not_tampered(tiny_release, tmp_path, monkeypatch):
    """A TA rewords test_add's docstring after the release; students who downloaded the first
    release are not flagged, one who edited a test still is."""
    root = tmp_path / "course"
    shutil.copytree(tiny_release[0], root)
    assert len(_history(root).releases) == 1  # the first release recorded
    first = notebooks.read(root / "assignments" / "a3" / "1_sums.ipynb")
    path = root / "solutions" / "a3" / "1_sums.ipynb"
    nb = notebooks.read(path)
    test_add = next(c for c in nb.cells if spec.grade_id(c) == "test_add")
    old_doc = test_add.source.split("\n")[0]
    test_add.source = test_add.source.replace(old_doc, '"""add adds two integers (reworded)."""')
    notebooks.write(nb, path)
    # The release again: the notebook runs are test_release's other tests' business.
    monkeypatch.setattr(releaseruns, "run_checks", lambda *args, **kwargs: [])
    course = config.load(root)
    release.release(course, jobs=1, log=lambda *a: None)
    release.release(course, jobs=1, log=lambda *a: None)  # nothing new: nothing recorded
    history = _history(root)
    assert len(history.releases) == 2
    cells = [r["notebooks"]["1_sums"] for r in history.releases]
    assert cells[0]["test_add"]["source"] != cells[1]["test_add"]["source"]
    assert cells[0]["test_mul"] == cells[1]["test_mul"]

    gdir = nbgrader_dir.real(course)
    released = {n: notebooks.read(gdir.release / f"{n}.ipynb") for n in ("1_sums", "2_words")}
    specs = {n: Spec.from_json((gdir.judges / f"{n}.json").read_text()) for n in released}

    def hand_in(student: str, nb) -> intake.NotebookIntake:
        folder = gdir.student_dir(gdir.submitted, student)
        folder.mkdir(parents=True)
        notebooks.write(nb, folder / "1_sums.ipynb")
        seen, staged = intake.read_student(gdir, student, released, specs, scan=False)
        graded = next(c for c in staged["1_sums"].cells if spec.grade_id(c) == "test_add")
        assert graded.source == specs["1_sums"].tests["test_add"].graded_source  # today's test
        return seen.notebooks["1_sums"]

    earlier = hand_in("s-earlier", first)
    assert "tampered" not in earlier.flags, earlier.notes
    assert any("test_add" in n and "earlier release" in n for n in earlier.notes), earlier.notes
    assert "tampered" not in hand_in("s-today", released["1_sums"]).flags
    edited = copy.deepcopy(first)
    for cell in edited.cells:
        if spec.grade_id(cell) == "test_mul":
            cell.source += "\nassert True  # a student's edit"
    flagged = hand_in("s-edited", edited)
    assert "tampered" in flagged.flags and "edited locked cell test_mul" in flagged.notes


def _runs(monkeypatch) -> list[list[str]]:
    """Record the notebooks each release runs (their checks pass)."""
    calls: list[list[str]] = []

    def record(course, sources, *args, **kwargs):
        calls.append(sorted(sources))
        return []

    monkeypatch.setattr(releaseruns, "run_checks", record)
    return calls


def _edit_markdown(root: Path, name: str, text: str) -> None:
    path = root / "solutions" / "a3" / f"{name}.ipynb"
    nb = notebooks.read(path)
    nb.cells[0].source += "\n\n" + text
    notebooks.write(nb, path)


def test_only_the_notebooks_changed_since_the_last_release_run_again(
    tiny_release, tmp_path, monkeypatch
):
    """The last release recorded what it verified; an unchanged notebook is not run again, a
    changed one is, and a change to what every notebook depends on runs them all."""
    root = tmp_path / "course"
    shutil.copytree(tiny_release[0], root)
    history = json.loads((root / "autograder" / "judges" / "a3.history.json").read_text())
    assert sorted(history["verified"]["notebooks"]) == ["1_sums", "2_words"]
    course = config.load(root)
    calls = _runs(monkeypatch)
    printed: list[str] = []
    release.release(course, jobs=1, log=printed.append)
    assert calls == [[]]  # nothing changed: nothing runs, and it is published
    assert "unchanged since the last release, not run again: 1_sums, 2_words" in printed
    _edit_markdown(root, "2_words", "An edited introduction.")
    release.release(course, jobs=1, log=printed.append)
    assert calls[-1] == ["2_words"]
    assert "An edited introduction." in (root / "assignments/a3/2_words.ipynb").read_text()
    now = json.loads((root / "autograder" / "judges" / "a3.history.json").read_text())
    verified = {n: r["digest"] for n, r in now["verified"]["notebooks"].items()}
    before = {n: r["digest"] for n, r in history["verified"]["notebooks"].items()}
    assert verified["1_sums"] == before["1_sums"] and verified["2_words"] != before["2_words"]
    monkeypatch.setattr(releasehistory, "dependencies_digest", lambda course: "course_lib changed")
    release.release(course, jobs=1, log=printed.append)
    assert calls[-1] == ["1_sums", "2_words"]
    assert any("course_lib, the grader's judge code or the environment" in p for p in printed)


def test_plan_runs_picks_changed_named_or_every_notebook():
    last = releasehistory.Verified("deps", {"a": {"digest": "1"}, "b": {"digest": "2"}})
    names, digests = ["a", "b", "c"], {"a": "1", "b": "changed", "c": "new"}
    plan = releasehistory.plan_runs
    assert plan(names, digests, "deps", last) == (["b", "c"], ["a"], [])
    assert plan(names, digests, "other", last) == (names, [], [])
    assert plan(names, digests, "deps", last, everything=True) == (names, [], [])
    assert plan(names, digests, "deps", last, only=("a",)) == (["a"], [], ["b", "c"])
    assert plan(names, digests, "other", last, only=("c",)) == (["c"], [], ["a", "b"])


def test_make_release_notebook_runs_only_the_named_ones(
    tiny_release, tmp_path, monkeypatch, capsys
):
    """`make release NOTEBOOK=...` (--notebook) runs the named notebooks only, changed or not;
    it publishes only when every other notebook is unchanged since the last release."""
    from autograder.__main__ import main

    root = tmp_path / "course"
    shutil.copytree(tiny_release[0], root)
    calls = _runs(monkeypatch)
    assert main(["--root", str(root), "release", "--notebook", "1_sums"]) == 0
    assert calls == [["1_sums"]]
    _edit_markdown(root, "2_words", "Edited, not run.")
    capsys.readouterr()
    assert main(["--root", str(root), "release", "--notebook", "1_sums"]) == 1
    assert calls[-1] == ["1_sums"]
    assert "1_sums passed every check; nothing published: 2_words changed" in (
        capsys.readouterr().err
    )
    assert "Edited, not run." not in (root / "assignments/a3/2_words.ipynb").read_text()
    with pytest.raises(release.ReleaseError, match="no such notebook in .*: 3_x"):
        release.release(config.load(root), jobs=1, log=lambda *a: None, only=("3_x",))
    assert main(["--root", str(root), "release", "--notebook", "2_words", "1_sums"]) == 0
    assert calls[-1] == ["1_sums", "2_words"]


def test_the_committed_history_records_the_committed_release():
    """`make release` appends the release to autograder/judges/a3.history.json: commit both."""
    history = _history(ROOT)
    assert history.releases, "no release recorded in autograder/judges/a3.history.json"
    committed = {p.stem: notebooks.read(p) for p in (ROOT / "assignments" / "a3").glob("*.ipynb")}
    record = json.loads(json.dumps(intake.release_record(committed)))
    assert history.releases[-1]["notebooks"] == record, (
        "assignments/a3 is not the last release recorded in autograder/judges/a3.history.json"
    )


# ---------------------------------------------------------------------------------------------
# The checks on hand-made notebooks (no execution).


def _nb(*cells) -> nbformat.NotebookNode:
    return new_notebook(cells=list(cells))


def _solution(gid: str, source: str) -> nbformat.NotebookNode:
    meta = {"nbgrader": {"grade_id": gid, "solution": True, "grade": False, "locked": False}}
    return new_code_cell(source, metadata=meta)


def test_secret_lines_ignore_public_and_short_lines():
    source = _nb(
        new_code_cell("super().__init__()  # given"),
        _solution(
            "f",
            "def f(x):\n    ### BEGIN SOLUTION\n    super().__init__()  # given\n"
            "    hidden_state = torch.tanh(x @ weight)\n    return x\n    ### END SOLUTION",
        ),
    )
    assert leaks.secret_lines(source) == {"hidden_state = torch.tanh(x @ weight)"}
    leaked = _nb(new_code_cell("hidden_state = torch.tanh(x @ weight)"))
    assert leaks.check_no_secrets({"n": source}, {"n": leaked})
    assert not leaks.check_no_secrets({"n": source}, {"n": _nb(new_code_cell("return x"))})


def test_blank_run_allows_only_stub_errors_after_the_first_solution():
    from autograder.course.spec import TestVerdict

    def error(ename):
        return [new_output("error", ename=ename, evalue="", traceback=[])]

    test = {"grade_id": "t", "grade": True, "locked": True, "points": 1, "solution": False}
    given = new_code_cell("x = f(1)", outputs=error("NameError"))
    early = new_code_cell("import torch", outputs=error("NameError"))
    fails = new_code_cell(
        "assert f(1)", metadata={"nbgrader": test}, outputs=error("AssertionError")
    )
    nb = _nb(early, _solution("f", "def f(x):\n    raise NotImplementedError()"), given, fails)
    free = {"description": "free", "points": 0.5, "passed": True, "message": ""}
    lost = {"description": "lost", "points": 0.5, "passed": False, "message": "why"}
    verdicts = {"t": TestVerdict("t", 1.0, [lost, free])}
    problems = releaseruns.check_blank_run("n", nb, verdicts)
    assert problems == [
        "n (blank) cell 0: given code raised NameError: ",
        "n (blank) t: 'free' passes on the blank notebook (a free point)",
    ]
    assert releaseruns.check_solution_run("n", _nb(given), verdicts) == [
        "n (solution) cell 0: raised NameError: ",
        "n (solution) t: the judge fails 'lost': why",
    ]


def test_solution_run_refuses_stderr_in_graded_cells_only():
    """nbgrader's Validate fails a graded cell that writes to stderr (a warning), so the release
    does too (tests/course/test_setup_cells.py runs the real Validate on one notebook)."""

    def warning(name):
        return [new_output("stream", name=name, text="UserWarning: careful\n")]

    test = {"grade_id": "t", "grade": True, "locked": True, "points": 1, "solution": False}
    graded = new_code_cell("f(1)", metadata={"nbgrader": test}, outputs=warning("stderr"))
    given = new_code_cell("g()", outputs=warning("stderr"))
    printed = new_code_cell("f(2)", metadata={"nbgrader": test}, outputs=warning("stdout"))
    assert releaseruns.check_solution_run("n", _nb(given, graded, printed), {}) == [
        "n (solution) t: writes to stderr (a warning?), so nbgrader's Validate fails it"
    ]


def test_student_copy_must_hold_notebooks_only(tmp_path):
    (tmp_path / "a3").mkdir()
    (tmp_path / "a3" / "1_x.ipynb").write_text("{}")
    (tmp_path / "a3" / "gradebook.db").write_text("")
    assert releasechecks.check_student_copy(["1_x"], tmp_path / "a3") == [
        f"{tmp_path / 'a3'}: unexpected file in the student copy: gradebook.db"
    ]


def test_placeholder_repositories_are_known():
    from autograder.course import config

    course = config.load(ROOT)
    for repo, placeholder in [
        ("example-org/a3-nmt-bert", True),
        ("your-org/course", True),
        ("examples-r-us/x", True),
        ("uni-nlp/a3-nmt-bert", False),
    ]:
        assert config.Course(**{**course.__dict__, "github_repo": repo}).placeholder_repo is (
            placeholder
        ), repo


def test_student_readme_names_the_bundled_model():
    from course_lib.bert import BUNDLED_MODEL_REQUIREMENT

    assert release.BUNDLED_MODEL == BUNDLED_MODEL_REQUIREMENT


def test_stamping_checks_badges_and_setup():
    from autograder.course import config

    course = config.load(ROOT)
    url = course.colab_url("1_x")
    good = _nb(new_markdown_cell(f"[badge]({url})"), new_code_cell(course.install_requirement))
    assert releasechecks.check_stamped(course, {"1_x": good}) == []
    extra = course.install_requirement.replace("course-lib", "course-lib[bert]")
    good = _nb(new_markdown_cell(f"[badge]({url})"), new_code_cell(extra))
    assert releasechecks.check_stamped(course, {"1_x": good}) == []
    bad = _nb(new_markdown_cell(f"[badge]({course.colab_url('2_y')}) {{{{BRANCH}}}}"))
    assert len(releasechecks.check_stamped(course, {"1_x": bad})) == 3


# ---------------------------------------------------------------------------------------------
# The repository's own notebooks.


@pytest.mark.slow
@pytest.mark.long
def test_real_release_passes_and_assignments_are_up_to_date(tmp_path):
    root = make_course(tmp_path, source=ROOT)
    proc = run_release(root, "--draft")  # course.toml names a placeholder repository
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "DRAFT release" in proc.stdout
    # the committed student notebooks and judge specs are what this release made of solutions/
    stale = release.stale_release(config.load(ROOT), nbgrader_dir.real(config.load(root)))
    assert not stale, f"not what `make release` makes of solutions/ (run it): {stale}"


def test_release_kernels_talk_through_their_own_socket_files(tmp_path):
    """Parallel release checks once lost a kernel to a TCP port taken by another starting at the
    same moment ("Address already in use"); their kernels now listen on Unix sockets of their
    own run, outside the notebook's working folder (which starts empty)."""
    from autograder.kernels.execute import execute_in_child

    probe = (
        "import os\n"
        "from ipykernel.kernelapp import IPKernelApp\n"
        "app = IPKernelApp.instance()\n"
        "print(app.transport, os.path.exists(f'{app.ip}-{app.shell_port}'), os.listdir('.'))"
    )
    src, dst = tmp_path / "in.ipynb", tmp_path / "out.ipynb"
    nbformat.write(new_notebook(cells=[new_code_cell(probe)]), src)
    assert execute_in_child(src, dst, timeout=60) == ""
    outputs = nbformat.read(dst, as_version=4).cells[0].outputs
    assert [o.get("text") for o in outputs] == ["ipc True []\n"]
