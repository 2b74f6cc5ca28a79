"""Reading and writing notebooks, and what their nbgrader cell metadata means.

A cell's nbgrader metadata (``cell.metadata.nbgrader``) says what it is:

    solution: true                         a cell the student completes (code or written answer)
    grade: true, points: n                 a graded cell: a test (code) or a written answer
    locked: true                           students may not edit it (setup cell, tests)
    grade_id: str                          the cell's name, unique in its notebook

An *autograded test* is a graded code cell that is not a solution; a *written answer* is a
graded markdown solution cell, scored by hand in formgrader.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

import nbformat
from nbformat import NotebookNode

BEGIN_SOLUTION = "BEGIN SOLUTION"
END_SOLUTION = "END SOLUTION"
BEGIN_HIDDEN = "BEGIN HIDDEN TESTS"
END_HIDDEN = "END HIDDEN TESTS"
MARKERS = (BEGIN_SOLUTION, END_SOLUTION, BEGIN_HIDDEN, END_HIDDEN)

# The error a cell past its time limit shows: the name of nbclient's exception, as nbgrader
# writes it; grading's own notebook time limit and the release checks write the same.
TIMEOUT_ENAME = "CellTimeoutError"


def read(path: Path | str) -> NotebookNode:
    """The notebook at ``path`` (nbformat 4); raises on invalid JSON or schema."""
    nb = nbformat.read(str(path), as_version=4)
    nbformat.validate(nb)
    return nb


def write(nb: NotebookNode, path: Path | str) -> None:
    """Write ``nb`` to ``path`` atomically (a crash never leaves half a notebook)."""
    write_bytes(path, (nbformat.writes(nb) + "\n").encode())


def write_bytes(path: Path | str, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically: a temporary file in the same folder, then rename."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def meta(cell: NotebookNode) -> dict:
    """The cell's nbgrader metadata (empty for a plain cell)."""
    value = cell.get("metadata", {}).get("nbgrader", {})
    return value if isinstance(value, dict) else {}


def grade_id(cell: NotebookNode) -> str | None:
    return meta(cell).get("grade_id")


def is_solution(cell: NotebookNode) -> bool:
    return bool(meta(cell).get("solution"))


def is_grade(cell: NotebookNode) -> bool:
    return bool(meta(cell).get("grade"))


def is_locked(cell: NotebookNode) -> bool:
    return bool(meta(cell).get("locked"))


def is_test(cell: NotebookNode) -> bool:
    """An autograded test: a graded code cell that is not a solution."""
    return cell.cell_type == "code" and is_grade(cell) and not is_solution(cell)


def is_protected(cell: NotebookNode) -> bool:
    """A code cell the student must not change: a test or a locked cell (e.g. setup)."""
    return cell.cell_type == "code" and (is_test(cell) or is_locked(cell))


def points(cell: NotebookNode) -> float:
    return float(meta(cell).get("points", 0) or 0)


def cell_error(cell: NotebookNode, width: int = 300) -> str | None:
    """``ename: evalue`` of the first error a cell's outputs hold (at most ``width``
    characters), or None: how the release and the canary name what a cell raised."""
    for output in cell.get("outputs", []):
        if output.get("output_type") == "error":
            return f"{output.get('ename')}: {output.get('evalue')}"[:width]
    return None


def cells_by_id(nb: NotebookNode) -> dict[str, NotebookNode]:
    """The nbgrader cells of ``nb`` by grade id (the first one when an id repeats)."""
    found: dict[str, NotebookNode] = {}
    for cell in nb.cells:
        gid = grade_id(cell)
        if gid is not None and gid not in found:
            found[gid] = cell
    return found


def strip_outputs(nb: NotebookNode) -> NotebookNode:
    """Remove outputs and execution counts in place; return ``nb``."""
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
    return nb


def without_markers(source: str) -> str:
    """``source`` without its solution and hidden-test marker lines (the answer kept)."""
    return "\n".join(line for line in source.split("\n") if not any(m in line for m in MARKERS))


@dataclass(frozen=True)
class Regions:
    """A cell's lines by what a release does with them."""

    solutions: list[list[str]]  # each solution region (or a whole unmarked solution cell)
    hidden: list[str]  # hidden-test lines
    public: list[str]  # what the release keeps (marker lines excluded)


def regions(cell: NotebookNode) -> Regions:
    """Split ``cell``'s source into its solution regions, hidden tests and public lines."""
    lines = cell.source.split("\n")
    solutions: list[list[str]] = []
    hidden: list[str] = []
    public: list[str] = []
    inside: str | None = None
    for line in lines:
        if BEGIN_SOLUTION in line:
            inside = "solution"
            solutions.append([])
        elif BEGIN_HIDDEN in line:
            inside = "hidden"
        elif END_SOLUTION in line or END_HIDDEN in line:
            inside = None
        elif inside == "solution":
            solutions[-1].append(line)
        elif inside == "hidden":
            hidden.append(line)
        else:
            public.append(line)
    if is_solution(cell) and not any(BEGIN_SOLUTION in line for line in lines):
        solutions, public = [lines], []
    return Regions(solutions, hidden, public)


@dataclass(frozen=True)
class GradedCell:
    """One graded cell of an assignment notebook: a test (``auto``) or a written answer."""

    grade_id: str
    points: float
    auto: bool
