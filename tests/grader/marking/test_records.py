"""One record per student run (``autograder/marking/records.py``): a file per student, written
alone; a record that cannot be read means grading that student again. What earlier versions kept
elsewhere (the single ``grading-state.json``; the real class in ``autograder/`` itself rather
than ``autograder/class/``) is moved once, and a class graded before is not graded again."""

from __future__ import annotations

import json
import shutil

from autograder.course import config, demo, nbgrader_dir, notebooks
from autograder.course.nbgrader_dir import GradingDir
from autograder.marking import records
from autograder.marking.records import Records, StudentRun
from helpers import autograder, course_sources, graded_tiny_demo, grades, make_course


def _run(tag: str, done: bool = True) -> StudentRun:
    return StudentRun(tag, {"notebooks": {}}, {"done": done, "notebooks": {}}, seconds=1.5)


def test_a_record_per_student_written_alone(tmp_path):
    gdir = GradingDir(tmp_path, "a3")
    book = Records(gdir)
    book.put("ann", _run("a"))
    book.put("bob", _run("b", done=False))
    ann = book.path("ann")
    assert ann == tmp_path / "records" / "a3" / "ann.json"
    stamp = ann.stat()
    book.put("bob", _run("b2"))  # bob's run ends: ann's file is not written
    assert (ann.stat().st_ino, ann.stat().st_mtime_ns) == (stamp.st_ino, stamp.st_mtime_ns)
    again = Records(gdir)
    assert again.get("ann") == _run("a") and again.get("ann").complete
    assert again.get("bob").fingerprint == "b2"
    assert again.get("carol") is None
    book.drop("bob")
    assert Records(gdir).get("bob") is None and not list(tmp_path.rglob("*.tmp"))


def test_a_record_that_cannot_be_read_is_no_record(tmp_path, capsys):
    """Unreadable, truncated, of another version or shape: the student is graded again (no
    record), with a line that says which file was ignored; an id grading refuses reads no
    file at all."""
    gdir = GradingDir(tmp_path, "a3")
    book = Records(gdir)
    book.put("ann", _run("a"))
    good = book.path("ann").read_text()
    bad = {
        "truncated": good[: len(good) // 2],
        "old": json.dumps({"version": 1, "run": json.loads(good)["run"]}),
        "shape": json.dumps({"version": records.VERSION, "run": {"fingerprint": "x", "oops": 1}}),
        "list": "[1, 2]",
    }
    for student, text in bad.items():
        book.path(student).write_text(text)
        assert book.get(student) is None, student
    printed = capsys.readouterr().out
    assert "truncated.json" in printed and "shape.json" in printed and "list.json" in printed
    (tmp_path / "records" / "secret.json").write_text(good)
    assert book.get("../secret") is None  # not a student id: never a path outside records/


def test_grading_state_of_earlier_versions_moves_to_records_once(tmp_path):
    """Every student of a version-2 ``grading-state.json`` gets a record (one already there is
    kept), and the file is removed; a version-1 or unreadable one is removed with no record
    (those students were always graded again)."""
    gdir = GradingDir(tmp_path, "a3")
    Records(gdir).put("bob", _run("bob-newer"))
    legacy = tmp_path / records.LEGACY
    runs = {"ann": _run("ann").__dict__, "bob": _run("bob-older").__dict__, "../x": {}}
    legacy.write_text(json.dumps({"version": 2, "students": {**runs, "../x": runs["ann"]}}))
    book = Records(gdir)
    assert not legacy.exists()
    assert book.get("ann") == _run("ann") and book.get("bob").fingerprint == "bob-newer"
    assert sorted(p.name for p in gdir.records.iterdir()) == ["ann.json", "bob.json"]
    for text in (json.dumps({"version": 1, "students": runs}), "{not json"):
        shutil.rmtree(gdir.records, ignore_errors=True)
        legacy.write_text(text)
        book = Records(gdir)
        assert not legacy.exists() and book.get("ann") is None


def test_a_class_graded_before_records_is_not_graded_again(tmp_path):
    """An instructor who updates the grader mid-term: the class's ``grading-state.json`` of
    the last version becomes records, and ``make grade`` grades no one again (same grades)."""
    root, _ = graded_tiny_demo(tmp_path / "course")
    gdir = GradingDir(root / "autograder" / "demo", "a3")
    before = grades(root)
    students = {p.stem: json.loads(p.read_text())["run"] for p in gdir.records.iterdir()}
    assert len(students) == 9
    shutil.rmtree(gdir.records)
    legacy = {"version": 2, "students": students}
    (gdir.root / records.LEGACY).write_text(json.dumps(legacy))
    out = autograder(root, "grade").stdout
    assert "all 9 student(s) unchanged since last time: nothing to grade" in out
    assert grades(root) == before
    assert not (gdir.root / records.LEGACY).exists() and len(list(gdir.records.iterdir())) == 9


def test_the_class_kept_in_autograder_itself_moves_into_class_once(tmp_path):
    """Versions before ``autograder/class/`` kept the real class in ``autograder/``: the next
    command moves each entry that ``class/`` does not have yet (nothing committed beside them),
    and moves nothing the second time."""
    course = config.load(make_course(tmp_path))
    grader = course.grader_dir
    old = {"gradebook.db": b"SQLite format 3\x00", "submitted/ann/a3/1_sums.ipynb": b"{}",
           "release/.a3-source.sha256": b"abc\n", "records/a3/ann.json": b"{}"}  # fmt: skip
    for name, data in old.items():
        notebooks.write_bytes(grader / name, data)
    committed = {"nbgrader_config.py", "judges/a3/1_sums.json", "roster.csv", "out/grades.csv"}
    for name in committed - {"nbgrader_config.py"}:
        notebooks.write_bytes(grader / name, b"kept")
    notebooks.write_bytes(course.class_dir / "logs" / "new.log", b"newer")
    notebooks.write_bytes(grader / "logs" / "old.log", b"older")  # class/ has logs/: stays
    gdir = nbgrader_dir.real(course)
    assert gdir.root == course.class_dir
    for name, data in old.items():
        assert (course.class_dir / name).read_bytes() == data and not (grader / name).exists()
    assert all((grader / name).exists() for name in committed)
    assert (grader / "logs" / "old.log").exists() and not (
        course.class_dir / "logs/old.log"
    ).exists()
    assert nbgrader_dir.move_legacy_class(course) == []


def test_a_class_graded_before_the_move_is_not_graded_again(tmp_path):
    """An instructor who updates the grader mid-term: the class graded in ``autograder/``
    moves into ``autograder/class/`` and ``make grade`` grades no one again (same grades)."""
    root = make_course(tmp_path / "course")
    src, gdir = course_sources(root)
    for filename, data in demo.full(src).items():
        notebooks.write_bytes(gdir.student_dir(gdir.submitted, "ann") / filename, data)
    autograder(root, "grade")
    before = grades(root)
    grader = root / "autograder"
    for entry in gdir.root.iterdir():  # the layout before autograder/class/
        if entry.name not in ("nbgrader_config.py", "judges"):
            shutil.move(entry, grader / entry.name)
    shutil.rmtree(gdir.root)
    out = autograder(root, "grade").stdout
    assert "moved the class's" in out and "all 1 student(s) unchanged since last time" in out
    assert grades(root) == before
    assert (gdir.root / "gradebook.db").exists() and not (grader / "gradebook.db").exists()
