"""The class's intake (``autograder/handin/intake.py``, ``intake.intake_class``): every student
read and staged within a deadline of their own, an unusable student id refused, and a
fingerprint of what is graded that changes when the hand-in or the time limit does."""

from __future__ import annotations

import time

import nbformat

from autograder.course import config
from autograder.handin import intake
from autograder.reports import ownrun
from helpers import course_sources, make_course

NOTEBOOKS = ("1_sums", "2_words")


def _class(tmp_path, students):
    """A course whose ``students`` each handed in the solutions; its course and directory."""
    root = make_course(tmp_path / "course")
    src, gdir = course_sources(root)
    for student in students:
        folder = gdir.submitted / student / "a3"
        folder.mkdir(parents=True)
        for name in NOTEBOOKS:
            (folder / f"{name}.ipynb").write_text(nbformat.writes(src.solved(name)))
    return config.load(root), gdir


def test_one_students_intake_has_a_deadline(tmp_path, monkeypatch):
    """A hand-in whose intake never ends (here: reading its own outputs) fails that student
    alone, at the deadline; the next student's intake goes on."""
    course, gdir = _class(tmp_path, ("slow", "ann"))
    real = ownrun.attach

    def attach(nb, path, spec):
        while "slow" in str(path):  # a hand-in that costs without end
            time.sleep(0.01)
        return real(nb, path, spec)

    monkeypatch.setattr(ownrun, "attach", attach)
    monkeypatch.setattr(intake, "INTAKE_SECONDS", 2)
    start = time.perf_counter()
    taken, _ = intake.intake_class(course, gdir, ["slow", "ann"], course.grade.cell_timeout)
    assert time.perf_counter() - start < 60
    slow = intake.StudentIntake.from_dict(taken["slow"][1])
    assert all("failed" in entry.flags for entry in slow.notebooks.values())
    assert "took over 2 s" in slow.notebooks["1_sums"].notes[0]
    ann = intake.StudentIntake.from_dict(taken["ann"][1])
    assert all(entry.staged and not entry.flags for entry in ann.notebooks.values())


def test_unusable_ids_are_refused_and_the_fingerprint_follows_what_is_graded(tmp_path):
    """A student id grading cannot use is refused, nothing of it staged; the others are staged,
    and their fingerprint is the same for the same hand-in and time limit (so grading skips
    them), another when the time limit or the staged notebooks change."""
    course, gdir = _class(tmp_path, ("ann", "-rf"))
    taken, refused = intake.intake_class(course, gdir, ["ann", "-rf"], 30)
    assert refused == {"-rf": intake.UNUSABLE_ID}
    assert list(taken) == ["ann"]
    assert not (gdir.intake / "-rf").exists()
    assert sorted(p.name for p in (gdir.intake / "ann" / "a3").iterdir()) == [
        f"{name}.ipynb" for name in NOTEBOOKS
    ]
    fingerprint, seen = taken["ann"]
    assert intake.StudentIntake.from_dict(seen).notebooks["1_sums"].staged
    assert intake.intake_class(course, gdir, ["ann"], 30)[0]["ann"][0] == fingerprint
    assert intake.intake_class(course, gdir, ["ann"], 31)[0]["ann"][0] != fingerprint
    (gdir.submitted / "ann" / "a3" / "2_words.ipynb").unlink()
    assert intake.intake_class(course, gdir, ["ann"], 30)[0]["ann"][0] != fingerprint


def test_refused_ids_are_those_grading_cannot_use():
    """``make grade`` and ``make feedback`` refuse the same ids, with the same words."""
    students = ["ann", "-rf", "..", "b.o_b@x+1", "with space", "Ann2"]
    assert intake.refused_ids(students) == {
        "-rf": intake.UNUSABLE_ID,
        "..": intake.UNUSABLE_ID,
        "with space": intake.UNUSABLE_ID,
    }
