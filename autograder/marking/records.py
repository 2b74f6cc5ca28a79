"""One record per student run: what grading one student found, in ``records/<assignment>/``.

The gradebook keeps what nbgrader's formgrader needs (each graded cell's score, and the grades
and comments TAs give there), and the graded notebook what the formgrader shows. Everything
else one run of ``grade`` learnt about a student is their record, ``<student>.json``: the
intake (which file was graded, its flags and notes, ``intake.StudentIntake``), the worker's
result (per notebook: graded or not and why, timeouts, every check's verdict, the first error,
the cells not run: see ``worker.py``), whether the student's time limit stopped it, and the
fingerprint of what was graded (unchanged: not graded again). The reports are the records
joined with the gradebook's scores (``rows.rows_for``).

A record is written atomically when its student's run is decided and again when it ends, so a
crash keeps every other student's, and writing one costs that student alone: the single
``grading-state.json`` of earlier versions was rewritten whole after every student (for 10,000
students, a 330 MB file written 10,000 times). A course directory that still has one is moved
to records once, on first use (``Records._migrate``). A record that cannot be read, or of another
:data:`VERSION`, is as no record: that student is graded again.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from autograder.course import notebooks
from autograder.course.nbgrader_dir import STUDENT_ID, GradingDir
from autograder.handin.intake import StudentIntake

VERSION = 2  # 2: scores from the judge (a record of version 1 is graded again)
LEGACY = "grading-state.json"  # every student's run in one file (versions 1 and 2)
# What reading a record (or the legacy file) raises when it is not one: ignored, graded again.
UNREADABLE = (OSError, ValueError, TypeError, AttributeError, KeyError)


@dataclass
class StudentRun:
    """What grading one student did: their record (module docstring)."""

    fingerprint: str
    intake: dict
    worker: dict = field(default_factory=dict)  # the worker's result file (see worker.py)
    killed: bool = False
    exit_code: int | None = None
    seconds: float = 0.0

    @property
    def taken(self) -> StudentIntake:
        """The intake as read: ``intake`` (its data, as recorded) as ``intake.StudentIntake``."""
        return StudentIntake.from_dict(self.intake)

    @property
    def complete(self) -> bool:
        """Graded to a final verdict: the worker finished, or the student's time limit stopped
        it (grading again would stop it again). Otherwise the next run grades them again."""
        return bool(self.worker.get("done")) or self.killed


class Records:
    """The records of one course directory's assignment (module docstring)."""

    def __init__(self, gdir: GradingDir):
        self.folder = gdir.records
        self._migrate(gdir.root / LEGACY)

    def path(self, student: str) -> Path:
        return self.folder / f"{student}.json"

    def get(self, student: str) -> StudentRun | None:
        """``student``'s last run, or None (never graded, an id grading refuses, or a record
        that cannot be read)."""
        if not STUDENT_ID.fullmatch(student):
            return None
        try:
            data = json.loads(self.path(student).read_bytes())
            if data.get("version") == VERSION:
                return StudentRun(**data["run"])
        except FileNotFoundError:
            return None
        except UNREADABLE as err:
            print(f"ignoring the unreadable record {self.path(student)}: {err}")
        return None

    def put(self, student: str, run: StudentRun) -> None:
        """Write ``student``'s record (atomically)."""
        data = {"version": VERSION, "student": student, "run": run.__dict__}
        notebooks.write_bytes(self.path(student), json.dumps(data, indent=1).encode())

    def drop(self, student: str) -> None:
        self.path(student).unlink(missing_ok=True)

    def copy_from(self, other: Records, student: str) -> None:
        """Make ``student``'s record the one in ``other`` (none there: none here)."""
        run = other.get(student)
        if run is None:
            self.drop(student)
        else:
            self.put(student, run)

    def _migrate(self, legacy: Path) -> None:
        """Move a ``grading-state.json`` (every student in one file) to one record per
        student, once: a student who already has a record keeps it; the file is removed when
        done (one that cannot be read, or of version 1, is removed too: its students are
        graded again, as they were before)."""
        if not legacy.is_file():
            return
        try:
            data = json.loads(legacy.read_bytes())
            students = data["students"] if data.get("version") == VERSION else {}
            runs = {student: StudentRun(**run) for student, run in students.items()}
        except UNREADABLE as err:
            print(f"ignoring the unreadable {legacy}: {err}")
            runs = {}
        for student, run in runs.items():
            if STUDENT_ID.fullmatch(student) and not self.path(student).exists():
                self.put(student, run)
        legacy.unlink(missing_ok=True)
