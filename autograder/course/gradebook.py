"""nbgrader's gradebook: the one reader of its scores and comments (grading, reports and
feedback pages), recording the judge's verdicts, zeroing notebooks that could not be graded.

nbgrader's own export shows a notebook that failed to grade and one that waits for manual
grading the same way (0 points); here each graded cell keeps its score, its maximum, whether
it is autograded (a code test) and whether it waits for a grader, and the flags come from what
the grading run saw (``grading.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class CellGrade:
    """The current grade of one graded cell of one student's notebook."""

    grade_id: str
    score: float  # the manual score when a grader gave one, else the autograder's
    max: float
    auto: bool  # a code test (else a written answer)
    needs_manual: bool
    manual: float | None = None  # the grader's score, None until one is given


@dataclass
class Marks:
    """One student's notebook in the gradebook: its graded cells (by grade id) and the
    graders' comments (cell grade id -> comment)."""

    cells: list[CellGrade] = field(default_factory=list)
    comments: dict[str, str] = field(default_factory=dict)

    def grade(self, grade_id: str) -> CellGrade | None:
        return next((c for c in self.cells if c.grade_id == grade_id), None)


Scores = dict[tuple[str, str], list[CellGrade]]  # (student, notebook) -> its graded cells


def submitted_notebooks(gb, assignment: str, students: list[str]):
    """``(student, notebook)`` for every notebook ``students`` have in the open gradebook ``gb``
    (nbgrader's ``SubmittedNotebook``); a student with no submission is skipped."""
    from nbgrader.api import MissingEntry

    for student in students:
        try:
            submission = gb.find_submission(assignment, student)
        except MissingEntry:
            continue
        for nb in submission.notebooks:
            yield student, nb


def read_marks(
    db_url: str, assignment: str, students: list[str], comments: bool = True
) -> dict[tuple[str, str], Marks]:
    """Every notebook ``students`` have in the gradebook: (student, notebook) -> its marks
    (without the graders' comments when ``comments`` is False: one query less a notebook)."""
    from nbgrader.api import Gradebook

    found: dict[tuple[str, str], Marks] = {}
    with Gradebook(db_url) as gb:
        for student, nb in submitted_notebooks(gb, assignment, students):
            cells = [
                CellGrade(
                    grade_id=g.name,
                    score=float(g.score or 0.0),
                    max=float(g.max_score or 0.0),
                    auto=g.cell_type == "code",
                    needs_manual=bool(g.needs_manual_grade),
                    manual=None if g.manual_score is None else float(g.manual_score),
                )
                for g in sorted(nb.grades, key=lambda g: g.name)
            ]
            said = {
                c.name: c.manual_comment.strip()
                for c in (nb.comments if comments else [])
                if c.manual_comment and c.manual_comment.strip()
            }
            found[(student, nb.name)] = Marks(cells, said)
    return found


def read_scores(db_url: str, assignment: str, students: list[str]) -> Scores:
    """The graded cells of every notebook ``students`` have in the gradebook."""
    marks = read_marks(db_url, assignment, students, comments=False)
    return {key: m.cells for key, m in marks.items()}


def zero_notebooks(db_url: str, assignment: str, student: str, names: list[str]) -> None:
    """Score every graded cell of ``names`` 0 for ``student``, as nbgrader does for a missing
    notebook (instead of leaving it looking like "needs manual grading"). A manual score a
    grader gave is kept, never lost, and marked for review. Creates the submission if needed."""
    from nbgrader.api import Gradebook, MissingEntry

    with Gradebook(db_url) as gb:
        gb.update_or_create_student(student)
        try:
            gb.find_submission(assignment, student)
        except MissingEntry:
            gb.add_submission(assignment, student)
        for name in names:
            try:
                nb = gb.find_submission_notebook(name, assignment, student)
            except MissingEntry:
                continue
            for grade in nb.grades:
                grade.auto_score = 0
                grade.needs_manual_grade = grade.manual_score is not None
        gb.db.commit()


def record_verdicts(db_url: str, assignment: str, student: str, notebook: str, verdicts) -> None:
    """Score every autograded test of ``notebook`` as the judge decided (``verdicts``: grade id
    -> ``spec.TestVerdict``), whatever nbgrader made of the cell's outputs; a test without a
    verdict scores 0. Written answers are left to their grader."""
    from nbgrader.api import Gradebook

    with Gradebook(db_url) as gb:
        nb = gb.find_submission_notebook(notebook, assignment, student)
        for grade in nb.grades:
            if grade.cell.cell_type != "code":
                continue
            verdict = verdicts.get(grade.name)
            grade.auto_score = verdict.score if verdict is not None else 0.0
            grade.needs_manual_grade = False
        gb.db.commit()
