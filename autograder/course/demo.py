"""The demo class: nine kinds of students, generated from the solutions and the release.

``make grade`` grades it when ``autograder/class/submitted/`` is empty (a fresh clone), and the
tests assert its grades. With the assignment's notebooks ``nb0, nb1, ...`` (sorted), "solved"
meaning the solution code put into the released notebook and the written answers filled in:

    s1-full          every notebook solved
    s2-blank         the released notebooks, untouched (stubs)
    s3-partial       in each notebook, the first half of its solution cells solved (rounded
                     up in nb0, nb2, ..., down in nb1, nb3, ...), the rest left as stubs; no
                     written answers. So a notebook with one solution cell is solved in nb0
                     and blank in nb1, and one with several is partly solved
    s4-raises        nb0: its first solution cell raises at the top, the others are stubs;
                     the other notebooks solved
    s5-loop          nb0: its first solution cell loops forever at the top, the others are
                     stubs; the other notebooks solved
    s6-tampered      nb0 solved, but its first test cell edited to check nothing; others solved
    s7-deleted       nb0 solved, but all its test cells deleted; others solved
    s8-renamed       nb0 solved but handed in as "Copy of nb0.ipynb"; others solved
    s9-invalid-json  nb0 cut in half (not valid JSON); the last regular notebook not handed in
                     (when there are two or more); the others solved
    s10-no-extra     the regular notebooks solved, none of extra credit handed in (only when
                     the assignment has extra credit, ``[grade] extra_credit``): loses nothing

The submissions are written to the demo course directory's ``submitted/`` (gitignored).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass

import nbformat
from nbformat import NotebookNode

from autograder.course import notebooks, spec
from autograder.course.config import Course
from autograder.course.nbgrader_dir import GradingDir

RAISES = 'raise RuntimeError("demo student: this cell crashes before defining anything")\n'
LOOPS = "while True:  # demo student: an infinite loop\n    pass\n"
NO_CHECK = '"""Checks nothing (the demo student emptied this test)."""\n'


@dataclass(frozen=True)
class DemoStudent:
    student_id: str
    description: str


@dataclass(frozen=True)
class Sources:
    """The stamped solution and released notebooks of the demo course, by name (sorted)."""

    source: dict[str, NotebookNode]
    released: dict[str, NotebookNode]
    optional: tuple[str, ...] = ()  # the notebooks of extra credit

    @property
    def names(self) -> list[str]:
        return list(self.released)

    @property
    def regular(self) -> list[str]:
        return [n for n in self.names if n not in self.optional]

    def solution_cells(self, name: str) -> list[str]:
        """Grade ids of the code cells a student completes, in notebook order."""
        return [
            spec.grade_id(c)
            for c in self.released[name].cells
            if spec.is_solution(c) and c.cell_type == "code"
        ]

    def solved(
        self, name: str, cells: list[str] | None = None, answers: bool = True
    ) -> NotebookNode:
        """The released notebook with the solution of ``cells`` (default all) put in, and the
        written answers too when ``answers``."""
        nb = nbformat.from_dict(self.released[name])
        source = spec.cells_by_id(self.source[name])
        todo = set(self.solution_cells(name) if cells is None else cells)
        for cell in nb.cells:
            gid = spec.grade_id(cell)
            if not spec.is_solution(cell) or gid not in source:
                continue
            if gid in todo or (answers and cell.cell_type == "markdown"):
                cell.source = spec.without_markers(source[gid].source)
        return nb


Files = dict[str, bytes]


def _dump(nb: NotebookNode) -> bytes:
    return (nbformat.writes(nb) + "\n").encode()


def _all(
    src: Sources, first: NotebookNode | bytes | None = None, name0: str | None = None
) -> Files:
    """Every notebook solved, except the first, replaced by ``first`` (saved as ``name0``)."""
    files = {f"{n}.ipynb": _dump(src.solved(n)) for n in src.names}
    if first is not None:
        del files[f"{src.names[0]}.ipynb"]
        data = first if isinstance(first, bytes) else _dump(first)
        files[name0 or f"{src.names[0]}.ipynb"] = data
    return files


def _broken_first_cell(src: Sources, prefix: str) -> NotebookNode:
    """nb0 with only its first solution cell filled, behind ``prefix`` (the rest stubs)."""
    name = src.names[0]
    first = src.solution_cells(name)[:1]
    nb = src.solved(name, cells=first, answers=False)
    for cell in nb.cells:
        if spec.grade_id(cell) in first:
            cell.source = prefix + cell.source
    return nb


def full(src: Sources) -> Files:
    return _all(src)


def blank(src: Sources) -> Files:
    return {f"{n}.ipynb": _dump(src.released[n]) for n in src.names}


def partial(src: Sources) -> Files:
    files = {}
    for i, n in enumerate(src.names):
        cells = src.solution_cells(n)
        files[f"{n}.ipynb"] = _dump(
            src.solved(n, cells=cells[: partial_count(i, len(cells))], answers=False)
        )
    return files


def partial_count(index: int, cells: int) -> int:
    """How many of its ``cells`` solution cells s3-partial solves in notebook ``index``."""
    return (cells + 1) // 2 if index % 2 == 0 else cells // 2


def raises(src: Sources) -> Files:
    return _all(src, _broken_first_cell(src, RAISES))


def loop(src: Sources) -> Files:
    return _all(src, _broken_first_cell(src, LOOPS))


def tampered(src: Sources) -> Files:
    nb = src.solved(src.names[0])
    test = next(c for c in nb.cells if spec.is_test(c))
    test.source = NO_CHECK
    return _all(src, nb)


def deleted(src: Sources) -> Files:
    nb = src.solved(src.names[0])
    nb.cells = [c for c in nb.cells if not spec.is_test(c)]
    return _all(src, nb)


def renamed(src: Sources) -> Files:
    return _all(src, src.solved(src.names[0]), name0=f"Copy of {src.names[0]}.ipynb")


def invalid_json(src: Sources) -> Files:
    data = _dump(src.solved(src.names[0]))
    files = _all(src, data[: len(data) // 2])
    if len(src.regular) > 1:
        del files[f"{src.regular[-1]}.ipynb"]
    return files


def no_extra(src: Sources) -> Files:
    return {f"{n}.ipynb": _dump(src.solved(n)) for n in src.regular}


STUDENTS: list[tuple[DemoStudent, Callable[[Sources], Files]]] = [
    (DemoStudent("s1-full", "every notebook solved"), full),
    (DemoStudent("s2-blank", "the released notebooks, untouched"), blank),
    (DemoStudent("s3-partial", "first half of each notebook's solution cells"), partial),
    (DemoStudent("s4-raises", "first notebook: its code raises"), raises),
    (DemoStudent("s5-loop", "first notebook: an infinite loop"), loop),
    (DemoStudent("s6-tampered", "first notebook: a test cell edited"), tampered),
    (DemoStudent("s7-deleted", "first notebook: its test cells deleted"), deleted),
    (DemoStudent("s8-renamed", "first notebook handed in as 'Copy of ...'"), renamed),
    (
        DemoStudent("s9-invalid-json", "first notebook not valid JSON, last one missing"),
        invalid_json,
    ),
]
NO_EXTRA = (DemoStudent("s10-no-extra", "the regular notebooks solved, no extra credit"), no_extra)


def students(optional: tuple[str, ...]) -> list[tuple[DemoStudent, Callable[[Sources], Files]]]:
    """The demo class of an assignment whose notebooks ``optional`` are extra credit."""
    return [*STUDENTS, NO_EXTRA] if optional else list(STUDENTS)


def build(course: Course, gdir: GradingDir) -> list[DemoStudent]:
    """Write the demo class into ``gdir.submitted`` (replacing it) from ``gdir``'s source and
    release (``nbgrader_dir.generate_assignment`` must have run)."""
    names = course.notebooks()
    optional = tuple(n for n in course.grade.extra_credit if n in names)
    src = Sources(
        source={n: notebooks.read(gdir.source / f"{n}.ipynb") for n in names},
        released={n: notebooks.read(gdir.release / f"{n}.ipynb") for n in names},
        optional=optional,
    )
    if gdir.submitted.exists():
        shutil.rmtree(gdir.submitted)
    chosen = students(optional)
    for student, make in chosen:
        folder = gdir.student_dir(gdir.submitted, student.student_id)
        for filename, data in make(src).items():
            notebooks.write_bytes(folder / filename, data)
    return [s for s, _ in chosen]
