"""The repair of a handed-in notebook's tampered cells, so that what the release asked for is
graded (the intake, ``intake.py``, calls :func:`repair` for every notebook it stages;
``release.py`` puts the graded forms into the notebooks it checks).

:func:`repair` takes two steps, both in place on the student's notebook (an nbformat 4
``NotebookNode``), then resets its metadata and runs the advisory scan (``tamper.scan``, its
findings flagged ``review``):

- :func:`check_and_restore` compares its nbgrader cells with the released notebook's, cell by
  cell: metadata lost by copying the notebook into a new one is given back from the content (a
  note), a duplicated grade id is kept by one cell, changed metadata is reset and a deleted test,
  locked code cell or written answer is put back at its released place (tampering, unless an
  earlier release had the cell so: :class:`Earlier`, the notebook's records in the release
  history, ``intake.History``);
- :func:`install_graded_forms` puts back the source of every locked and test cell, a test in
  its graded form (the judge spec's), and the type of an answer whose cell type was changed.

The student's own cells are never changed: only the cells nbgrader owns.
"""

from __future__ import annotations

import copy
import hashlib
from dataclasses import dataclass, field
from typing import Protocol

import nbformat
from nbformat import NotebookNode

from autograder.course import spec
from autograder.course.spec import normalised
from autograder.handin import tamper
from autograder.reports.rows import REVIEW, REVIEW_NOTE

KEYS = ("grade", "solution", "locked", "points")  # nbgrader metadata a student cannot change
MAX_FINDINGS = 5  # findings of the scan listed in a notebook's notes


def cell_record(cell: NotebookNode) -> dict:
    """What a release fixes of an nbgrader cell: its type, its nbgrader metadata (``KEYS``)
    and, for a test or locked code cell, the SHA-256 of its source (lines right-stripped)."""
    record = {"type": cell.cell_type, "nbgrader": {k: spec.meta(cell).get(k) for k in KEYS}}
    if spec.is_protected(cell):
        record["source"] = hashlib.sha256(normalised(cell.source).encode()).hexdigest()
    return record


@dataclass(frozen=True)
class Earlier:
    """One notebook's cells in every recorded release (grade id -> :func:`cell_record`)."""

    releases: tuple[dict[str, dict], ...] = ()

    def accepts(self, gid: str, cell: NotebookNode) -> bool:
        """Whether ``cell`` is cell ``gid`` as a recorded release had it (type, metadata and,
        for a test or locked cell, source)."""
        mine = cell_record(cell)
        for cells in self.releases:
            theirs = cells.get(gid)
            if theirs and all(
                theirs.get(k) == mine.get(k) for k in ("type", "nbgrader", "source") if k in theirs
            ):
                return True
        return False

    def lacked(self, gid: str) -> bool:
        """Whether a recorded release of the notebook had no cell ``gid`` (added since)."""
        return any(gid not in cells for cells in self.releases)


@dataclass
class _Findings:
    """What :func:`check_and_restore` found so far: tampering, notes, and the grade ids of the
    cells as an earlier release had them (``older``: repaired, not tampering)."""

    earlier: Earlier
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    older: list[str] = field(default_factory=list)

    def judge(self, gid: str, cell: NotebookNode, problem: str) -> None:
        """``problem`` found in cell ``gid``: tampering unless an earlier release had it so."""
        if self.earlier.accepts(gid, cell):
            self.older.append(gid)
        else:
            self.problems.append(problem)


class Entry(Protocol):
    """What :func:`repair` marks: one notebook's ``intake.NotebookIntake``."""

    notes: list[str]
    staged: bool

    def flag(self, name: str, note: str | None = None) -> None: ...


def repair(
    entry: Entry,
    nb: NotebookNode,
    released: NotebookNode,
    nb_spec,
    earlier: Earlier,
    scan: bool,
) -> None:
    """The intake's repair step, in place: ``nb``'s tampered cells restored
    (:func:`check_and_restore`: flags ``tampered`` and notes), its locked and test cells in
    their graded form (:func:`install_graded_forms`, ``nb_spec``: the notebook's
    ``spec.Spec``), its metadata the release's; the student's own cells as written, which the
    advisory scan (``tamper.scan``) only reads (its findings flag ``review``, at most
    :data:`MAX_FINDINGS` of them noted). ``entry`` is marked staged."""
    problems, notes = check_and_restore(nb, released, earlier)
    for problem in problems:
        entry.flag("tampered", problem)
    entry.notes += notes
    install_graded_forms(nb, released, nb_spec)
    nb.metadata = copy.deepcopy(released.metadata)
    findings = tamper.scan(nb, released) if scan else []
    for finding in findings[:MAX_FINDINGS]:
        entry.flag(REVIEW, REVIEW_NOTE + finding.note)
    if len(findings) > MAX_FINDINGS:
        entry.notes.append(REVIEW_NOTE + f"and {len(findings) - MAX_FINDINGS} more")
    entry.staged = True


def check_and_restore(
    nb: NotebookNode, released: NotebookNode, earlier: Earlier = Earlier()
) -> tuple[list[str], list[str]]:
    """Compare ``nb`` with the released notebook and repair it in place so that what the
    release asked for is graded. Return (tampering found, notes). A cell as an earlier
    release had it (``earlier``: the notebook's records in the release history) is not
    tampering: it is repaired the same way, with a note. Repairs:

    - cells that lost their nbgrader metadata (a notebook copied into a new one) get it back:
      a test or locked cell when its source is unchanged, an answer when it sits between the
      same two cells as in the release (a note, not tampering);
    - of cells sharing a grade id, the one matching the release (else the last) keeps it;
    - nbgrader metadata changed by the student is reset to the release's, and a grade id the
      release does not have is removed, and so is metadata without a grade id;
    - a deleted test, locked code cell or written answer is put back at its released place.

    The source of every locked and test cell is then put back by :func:`install_graded_forms`.
    Each step is one pass over the cells (a few for the cells to put back)."""
    ours = {spec.grade_id(c): c for c in released.cells if spec.grade_id(c)}
    found = _Findings(earlier)
    found.notes += _give_back_metadata(nb, released, ours)
    found.problems += _keep_one_of_copies(nb, ours)
    for index, cell in enumerate(nb.cells):
        _reset_metadata(index, cell, ours, found)
    _put_back_deleted(nb, ours, found)
    if found.older:
        found.notes.append(
            f"cells {', '.join(found.older)} are as an earlier release had them: the current "
            "release's were graded"
        )
    return found.problems, found.notes


def _give_back_metadata(
    nb: NotebookNode, released: NotebookNode, ours: dict[str, NotebookNode]
) -> list[str]:
    """Give the released metadata back to the cells of ``nb`` that lost it (:class:`_Twins`:
    locked and test cells first); return a note for each."""
    present = {spec.grade_id(c) for c in nb.cells}
    lost = [gid for gid in ours if gid not in present]
    if not lost:
        return []
    notes = []
    twins = _Twins(nb, released)
    for gid in sorted(lost, key=lambda g: not spec.is_protected(ours[g])):
        twin = twins.find(ours[gid])
        if twin is not None:
            twin.metadata["nbgrader"] = copy.deepcopy(spec.meta(ours[gid]))
            notes.append(f"cell {gid} had lost its nbgrader metadata: given back")
    return notes


def _keep_one_of_copies(nb: NotebookNode, ours: dict[str, NotebookNode]) -> list[str]:
    """Of the cells of ``nb`` sharing a grade id, let the one matching the release (else the
    last) keep its metadata; return a problem for each grade id so duplicated."""
    copies: dict[str, list[NotebookNode]] = {}
    for cell in nb.cells:
        gid = spec.grade_id(cell)
        if gid is not None:
            copies.setdefault(gid, []).append(cell)
    problems = []
    for gid, cells in copies.items():
        if len(cells) > 1:
            problems.append(f"duplicated cell {gid}")
            keep = next((c for c in cells if gid in ours and _same(c, ours[gid])), cells[-1])
            for c in cells:
                if c is not keep:
                    del c.metadata["nbgrader"]
    return problems


def _reset_metadata(
    index: int, cell: NotebookNode, ours: dict[str, NotebookNode], found: _Findings
) -> None:
    """Check cell ``index`` of the student's notebook against the release: metadata without a
    grade id or with one the release lacks is removed, changed metadata reset to the release's,
    an edited locked or test cell found (its source is put back by :func:`install_graded_forms`)."""
    gid = spec.grade_id(cell)
    if gid is None:
        if "nbgrader" in cell.metadata:  # "locked" without an id: nbgrader ignores it,
            del cell.metadata["nbgrader"]  # the scan reads it (a student's cell)
            found.notes.append(f"cell {index} had nbgrader metadata without a grade id: removed")
        return
    if gid not in ours:
        found.judge(gid, cell, f"cell {gid} is not in the released notebook")
        del cell.metadata["nbgrader"]
        return
    mine, theirs = spec.meta(cell), spec.meta(ours[gid])
    if any(mine.get(k) != theirs.get(k) for k in KEYS) or cell.cell_type != ours[gid].cell_type:
        found.judge(gid, cell, f"changed the nbgrader metadata of cell {gid}")
        cell.metadata["nbgrader"] = copy.deepcopy(theirs)
    elif spec.is_protected(ours[gid]) and not _same(cell, ours[gid]):
        found.judge(gid, cell, f"edited locked cell {gid}")


def _put_back_deleted(nb: NotebookNode, ours: dict[str, NotebookNode], found: _Findings) -> None:
    """Put every deleted test, locked code cell and written answer back after the cell that
    precedes it in the release (tampering unless a recorded release had no such cell)."""
    present = {spec.grade_id(c) for c in nb.cells}
    previous: str | None = None
    for gid, cell in ours.items():
        if gid not in present and (spec.is_protected(cell) or spec.is_grade(cell)):
            if found.earlier.lacked(gid):
                found.older.append(gid)
            else:
                found.problems.append(f"deleted cell {gid}")
            _insert_after(nb, previous, copy.deepcopy(cell))
        previous = gid


class _Twins:
    """Finds, among the cells of ``nb`` without nbgrader metadata, the one that is a given
    cell of the release: the same source for a locked cell; for an answer, the one between
    the same two neighbours as in the release."""

    def __init__(self, nb: NotebookNode, released: NotebookNode):
        self.nb, self.released = nb, released
        self.bare = {id(c) for c in nb.cells if not spec.meta(c)}
        self.by_source: dict[tuple[str, str], NotebookNode] = {}
        for c in nb.cells:
            if id(c) in self.bare:
                self.by_source.setdefault((c.cell_type, normalised(c.source)), c)
        self.position = {id(c): i for i, c in enumerate(released.cells)}

    def find(self, cell: NotebookNode) -> NotebookNode | None:
        if spec.is_protected(cell):
            return self.by_source.get((cell.cell_type, normalised(cell.source)))
        i = self.position[id(cell)]
        if i == 0 or i + 1 >= len(self.released.cells):
            return None
        before, after = self.released.cells[i - 1], self.released.cells[i + 1]
        cells = self.nb.cells
        for k in range(1, len(cells) - 1):
            here = cells[k]
            if id(here) not in self.bare or here.cell_type != cell.cell_type:
                continue
            if _same(cells[k - 1], before) and (
                _same(cells[k + 1], after)
                or spec.grade_id(cells[k + 1]) == (spec.grade_id(after) or False)
            ):
                return here
        return None


def install_graded_forms(nb: NotebookNode, released: NotebookNode, nb_spec) -> None:
    """Put back, in place, what the student cannot change, from trusted sources: every locked
    cell becomes the release's cell, every test cell its *graded form* (``nb_spec``: the notebook's
    ``spec.Spec``: the test's docstring; the visible checks are for students), and
    an answer whose cell type was changed gets its type back. Call after
    :func:`check_and_restore` (which puts back deleted cells and resets metadata)."""
    ours = spec.cells_by_id(released)
    for index, cell in enumerate(nb.cells):
        gid = spec.grade_id(cell)
        theirs = ours.get(gid) if gid is not None else None
        if theirs is None:
            continue
        if spec.is_protected(theirs):
            new = nbformat.from_dict(copy.deepcopy(theirs))
            if spec.is_test(theirs):
                new.source = nb_spec.tests[gid].graded_source
            if "id" in cell:
                new.id = cell.id
            else:
                new.pop("id", None)
            if new.cell_type == "code":
                new.outputs, new.execution_count = [], None
            nb.cells[index] = new
        elif cell.cell_type != theirs.cell_type:
            new = copy.deepcopy(theirs)
            new.source = cell.source
            if "id" in cell:
                new.id = cell.id
            if new.cell_type == "code":
                new.outputs, new.execution_count = [], None
            nb.cells[index] = new


def _same(cell: NotebookNode, other: NotebookNode) -> bool:
    return cell.cell_type == other.cell_type and normalised(cell.source) == normalised(other.source)


def _insert_after(nb: NotebookNode, grade_id: str | None, cell: NotebookNode) -> None:
    """Insert ``cell`` right after the cell named ``grade_id`` (and any cells already put back
    after it), or first when there is none."""
    index = 0
    if grade_id is not None:
        for i, c in enumerate(nb.cells):
            if spec.grade_id(c) == grade_id:
                index = i + 1
        while index < len(nb.cells) and nb.cells[index].get("metadata", {}).get(
            "autograder_restored"
        ):
            index += 1
    cell.metadata["autograder_restored"] = True
    cell.pop("id", None)
    if nb.get("nbformat_minor", 0) >= 5:  # cell ids exist from nbformat 4.5 on
        taken = {c.get("id") for c in nb.cells}
        cell.id = next(
            f"restored-{i}" for i in range(len(taken) + 1) if f"restored-{i}" not in taken
        )
    if cell.cell_type == "code":
        cell.outputs, cell.execution_count = [], None
    nb.cells.insert(index, cell)
