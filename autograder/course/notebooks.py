"""Reading and writing notebooks (atomically), and the regions of a cell's source that a
release keeps or removes. What a cell *is* (its nbgrader metadata and the course's tags) is
``spec.py``'s.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

import nbformat
from nbformat import NotebookNode

from autograder.course.spec import (
    BEGIN_HIDDEN,
    BEGIN_SOLUTION,
    END_HIDDEN,
    END_SOLUTION,
    is_solution,
)

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


def cell_error(cell: NotebookNode, width: int = 300) -> str | None:
    """``ename: evalue`` of the first error a cell's outputs hold (at most ``width``
    characters), or None: how the release and the canary name what a cell raised."""
    for output in cell.get("outputs", []):
        if output.get("output_type") == "error":
            return f"{output.get('ename')}: {output.get('evalue')}"[:width]
    return None


def strip_outputs(nb: NotebookNode) -> NotebookNode:
    """Remove outputs and execution counts in place; return ``nb``."""
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
    return nb


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
