"""The rows of a grading run (``autograder/reports/rows.py``): one student's record (the
intake as read and the worker's result, ``records.StudentRun``) joined with the gradebook's
scores into one row per notebook, without the reports stage importing the intake or marking."""

from __future__ import annotations

from autograder.course.gradebook import CellGrade
from autograder.course.spec import GradedCell, Spec
from autograder.handin.intake import NotebookIntake, StudentIntake
from autograder.marking.records import StudentRun
from autograder.reports.rows import RERUN_NOTE, rows_for

SPECS = {
    "1_x": Spec("1_x", {}, (), graded=(GradedCell("t1", 2.0, True), GradedCell("w1", 1.0, False))),
    "2_y": Spec("2_y", {}, (), graded=(GradedCell("t2", 1.0, True),)),
    "5_z": Spec("5_z", {}, (), graded=(GradedCell("t5", 2.0, True),)),
}
CHECKS = [
    {"passed": True, "description": "shape", "points": 1.0, "message": ""},
    {"passed": False, "description": "masking", "points": 0.5, "message": "row 2 not masked"},
]


def record(killed: bool = False) -> StudentRun:
    """ann's record: 1_x graded (twice, one check lost, one cell stopped), 2_y staged and not
    graded, 5_z (extra credit) not handed in."""
    taken = StudentIntake(
        "ann",
        {
            "1_x": NotebookIntake("1_x", "1_x.ipynb", True, [], []),
            "2_y": NotebookIntake("2_y", "2_y-1.ipynb", True, ["renamed"], ["as 2_y-1.ipynb"]),
            "5_z": NotebookIntake("5_z", "", False, ["missing"], []),
        },
        notes=["two files for 2_y: the newest graded"],
    )
    done = {
        "graded": True,
        "seconds": 4.5,
        "rerun": True,
        "timeouts": ["cell 3"],
        "verdicts": {"t1": {"checks": CHECKS}},
        "first_error": {"cell": "3", "words": "NameError"},
        "skipped": [4],
    }
    worker = {"notebooks": {"1_x": done, "2_y": {"error": "nbgrader stopped"}}}
    return StudentRun("f", taken.to_dict(), worker, killed=killed)


SCORES = {
    ("ann", "1_x"): [
        CellGrade("t1", 1.5, 2.0, auto=True, needs_manual=False),
        CellGrade("w1", 0.0, 1.0, auto=False, needs_manual=True),
    ]
}


def test_a_record_joined_with_the_gradebook():
    """Each notebook's row carries the intake's file, flags and notes, the worker's verdicts
    and seconds, the checks lost, the timeouts, the rerun's note and the gradebook's points;
    the student's own intake notes go on the first row."""
    one, two, five = rows_for("ann", record(), SPECS, SCORES, 30, extra=("5_z",))
    assert (one.file, one.seconds, one.autograded, one.manual) == ("1_x.ipynb", 4.5, 1.5, 0.0)
    assert (one.autograded_max, one.manual_max) == (2.0, 1.0)
    assert one.cells == {"t1": (1.5, 2.0), "w1": (0.0, 1.0)}
    assert one.flags == ["timeout", "needs-manual"]
    assert one.notes == ["stopped after 30 s: cell 3", RERUN_NOTE,
                         "two files for 2_y: the newest graded"]  # fmt: skip
    assert one.lost == [("t1", "masking", 0.5, "row 2 not masked")]
    assert one.verdicts == {"t1": {"checks": CHECKS}} and one.skipped == [4]
    assert one.first_error == {"cell": "3", "words": "NameError"}
    assert two.flags == ["renamed", "failed"]
    assert two.notes == ["as 2_y-1.ipynb", "nbgrader stopped"]
    assert (two.file, two.autograded, two.verdicts) == ("2_y-1.ipynb", 0.0, {})
    assert five.extra and five.flags == ["missing"] and not one.extra


def test_a_student_stopped_by_their_time_limit():
    """A notebook staged and not graded when the student's time limit stopped the worker:
    failed and timeout, the limit named."""
    _, two, _ = rows_for("ann", record(killed=True), SPECS, SCORES, 30)
    assert two.flags == ["renamed", "failed", "timeout"]
    assert two.notes[-1] == "grading stopped: the student's time limit ran out"


def test_no_record_fails_every_notebook_with_the_reason():
    rows = rows_for("bob", None, SPECS, {}, 30, problem="student id not usable")
    assert [r.flags for r in rows] == [["failed"]] * 3
    assert [r.notes for r in rows] == [["student id not usable"]] * 3
    assert rows_for("bob", None, SPECS, {}, 30)[0].notes == ["not graded"]
