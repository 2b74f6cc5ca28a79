"""Reading one student's submission before anything runs: what will be graded, and flags.

The files handed in, ``submitted/<student>/<a>/*.ipynb``, are never modified. For each
assignment notebook the intake decides which file (if any) is graded, and writes that file,
repaired, to ``intake/<student>/<a>/<notebook>.ipynb``, where nbgrader picks it up:

- a file that is not valid JSON or not a notebook cannot be graded: ``failed``;
- a file under another name (``Copy of 1_gru.ipynb``) is matched to its assignment notebook by
  content (the grade ids and locked cells it shares with each released notebook) when exactly
  one notebook matches, and flagged ``renamed`` either way. Canvas's own resubmission names are
  not renamings: ``1_gru-1.ipynb``, ``1_gru-2.ipynb`` are ``1_gru.ipynb`` handed in again, read
  as ``1_gru`` with no flag (the latest one, when several are there; the others noted);
- a test or locked code cell that was edited or deleted, nbgrader metadata that was changed
  or duplicated, is flagged ``tampered`` and repaired (``restore.py``) so that what the
  release asked for is graded: deleted cells are put back at their place, metadata reset, the
  source of locked and test cells put back (tests in their graded form). Metadata lost by
  copying the notebook into a new one is given back from the content (a note, not a flag);
- a cell as an earlier release of the term had it (a test whose docstring changed after
  students downloaded the notebook) is not tampering: ``release.py`` records the locked and
  test cells of every release in ``judges/<a>.history.json`` (:class:`History`), and a cell
  that matches its record in any of them is repaired the same way, with a note, no flag;
- the student's own code is staged exactly as written: the advisory scan (``tamper.py``) only
  reads it, and what it notes (code that reaches the kernel or the grading machinery) is flagged
  ``review`` with notes for the instructor (``rows.REVIEW_NOTE``), never shown to the student
  and never worth a point;
- no usable file: ``missing``.

:func:`read_student` in three steps: match the files to the notebooks (:func:`read_handin`),
choose the one graded (:func:`choose`), repair it (``restore.repair``). Shape of the result: a
:class:`StudentIntake` with one :class:`NotebookIntake` per assignment notebook;
``to_dict``/``from_dict`` give the JSON stored in each student's record (``records.py``).
:func:`intake_class` reads and stages a whole class for ``make grade``, each student within a
deadline (:data:`INTAKE_SECONDS`: past it, only that student fails), and fingerprints what
each student will have graded.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import shutil
import signal
import threading
from dataclasses import asdict, dataclass, field
from pathlib import Path

import nbformat
from nbformat import NotebookNode

from autograder.course import notebooks
from autograder.course.config import Course
from autograder.course.nbgrader_dir import STUDENT_ID, GradingDir
from autograder.course.spec import (
    cells_by_id,
    grade_id,
    is_locked,
    is_solution,
    normalised,
    read_specs,
)
from autograder.handin.collect import LMS_FILE
from autograder.handin.restore import Earlier, cell_record, repair
from autograder.reports import ownrun

MATCH_THRESHOLD = 0.5  # share of a released notebook's cells a renamed file must contain
MAX_NOTEBOOK_BYTES = 50_000_000
MAX_CELLS = 2_000  # the assignment's notebooks have about 50
MAX_FILES = 20  # notebooks of one student read (more is not an assignment)


@dataclass
class NotebookIntake:
    """What the intake decided for one assignment notebook of one student."""

    notebook: str
    file: str = ""  # the submitted file that is graded ("" if none)
    staged: bool = False  # written to intake/ for nbgrader
    flags: list[str] = field(default_factory=list)  # missing failed renamed tampered review
    notes: list[str] = field(default_factory=list)

    def flag(self, name: str, note: str | None = None) -> None:
        if name not in self.flags:
            self.flags.append(name)
        if note:
            self.notes.append(note)


@dataclass
class StudentIntake:
    """One student's submission as read; ``fingerprint`` hashes what nbgrader will grade."""

    student: str
    notebooks: dict[str, NotebookIntake]
    fingerprint: str = ""
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> StudentIntake:
        nbs = {k: NotebookIntake(**v) for k, v in data["notebooks"].items()}
        return cls(data["student"], nbs, data.get("fingerprint", ""), data.get("notes", []))


def parse(data: bytes) -> tuple[NotebookNode | None, str]:
    """The notebook in ``data`` (repaired when that is possible), or None and why not.

    Outputs and execution counts are dropped before anything else (grading clears them);
    a notebook of more than ``MAX_CELLS`` cells is refused; invalid or repeated cell ids are
    replaced, and metadata nbformat finds invalid is dropped."""
    if len(data) > MAX_NOTEBOOK_BYTES:
        return None, f"larger than {MAX_NOTEBOOK_BYTES // 1_000_000} MB"
    try:
        raw = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as err:
        return None, f"not a valid notebook ({type(err).__name__}: {str(err)[:200]})"
    if not isinstance(raw, dict):
        return None, "not a valid notebook (not a JSON object)"
    cells = raw.get("cells")
    if isinstance(cells, list):
        if len(cells) > MAX_CELLS:
            return (
                None,
                f"has {len(cells)} cells, more than the {MAX_CELLS} cells the autograder reads",
            )
        for cell in cells:
            if isinstance(cell, dict) and cell.get("cell_type") == "code":
                cell["outputs"], cell["execution_count"] = [], None
        _repair_ids(raw)
    try:  # nbformat joins sources given as lists of lines, and converts older formats
        nb = nbformat.reads(json.dumps(raw), as_version=4)
    except Exception as err:  # an old or broken notebook format nbformat cannot convert
        return None, f"not a valid notebook ({type(err).__name__}: {str(err)[:200]})"
    if not isinstance(nb.get("cells"), list) or len(nb.cells) > MAX_CELLS:
        return None, "not a valid notebook (no cells, or too many)"
    try:
        nbformat.validate(nb)
    except nbformat.ValidationError:
        try:  # invalid metadata is dropped
            _, repaired = nbformat.validator.normalize(nb, strip_invalid_metadata=True)
            nb = nbformat.from_dict(repaired)
            nbformat.validate(nb)
        except Exception as err:
            return None, f"not a valid notebook ({str(err).splitlines()[0][:200]})"
    return nb, ""


_CELL_ID = re.compile(r"[a-zA-Z0-9_-]{1,64}")


def _repair_ids(raw: dict) -> None:
    """Give every cell of a raw nbformat 4.5+ notebook a valid id, unique in the notebook
    (a missing, invalid or repeated id would make the whole notebook invalid)."""
    if raw.get("nbformat") != 4 or int(raw.get("nbformat_minor", 0) or 0) < 5:
        return
    seen: set[str] = set()
    fresh = 0
    for cell in raw["cells"]:
        if not isinstance(cell, dict):
            continue
        cid = cell.get("id")
        if not (isinstance(cid, str) and _CELL_ID.fullmatch(cid)) or cid in seen:
            while f"cell-{fresh}" in seen:
                fresh += 1
            cid = f"cell-{fresh}"
            cell["id"] = cid
        seen.add(cid)


def similarity(nb: NotebookNode, released: NotebookNode) -> float:
    """Share of ``released``'s identifying content found in ``nb``: its grade ids, or the
    sources of its locked and markdown cells (for a notebook whose metadata was lost)."""
    ids = {grade_id(c) for c in released.cells} - {None}
    have_ids = {grade_id(c) for c in nb.cells}
    texts = {
        normalised(c.source)
        for c in released.cells
        if (is_locked(c) or c.cell_type == "markdown") and not is_solution(c)
    } - {""}
    have_texts = {normalised(c.source) for c in nb.cells}
    by_id = len(ids & have_ids) / len(ids) if ids else 0.0
    by_text = len(texts & have_texts) / len(texts) if texts else 0.0
    return max(by_id, by_text)


def best_match(nb: NotebookNode, released: dict[str, NotebookNode]) -> str | None:
    """The assignment notebook ``nb`` is a copy of, when exactly one matches best."""
    scores = sorted(((similarity(nb, r), name) for name, r in released.items()), reverse=True)
    if not scores or scores[0][0] < MATCH_THRESHOLD:
        return None
    if len(scores) > 1 and scores[1][0] >= scores[0][0]:
        return None
    return scores[0][1]


RESUBMITTED = re.compile(r"(?P<name>.+)-(?P<attempt>[1-9][0-9]{0,3})")  # Canvas: 1_gru-1


def resubmission(stem: str, names) -> tuple[str, int]:
    """The notebook a file's ``stem`` names and which of its submissions it is: Canvas names a
    file handed in again ``<name>-1``, ``<name>-2``, ... (0: the name itself, or no notebook's)."""
    found = RESUBMITTED.fullmatch(stem)
    if stem not in names and found and found["name"] in names:
        return found["name"], int(found["attempt"])
    return stem, 0


def latest_submissions(files: list[Path], names: list[str]) -> tuple[list[Path], list[str]]:
    """``files`` but the earlier submissions of a notebook handed in again (``1_gru.ipynb``
    and ``1_gru-1.ipynb``: the highest number is the latest), and a note for each left out."""
    latest: dict[str, tuple[int, Path]] = {}
    for path in files:
        stem, attempt = resubmission(path.stem, names)
        if stem in names and attempt >= latest.get(stem, (-1, path))[0]:
            latest[stem] = (attempt, path)
    kept = [p for p in files if latest.get(resubmission(p.stem, names)[0], (0, p))[1] == p]
    notes = [
        f"{p.name}: {latest[resubmission(p.stem, names)[0]][1].name} is later, graded instead"
        for p in files
        if p not in kept
    ]
    return kept, notes


def late_files(folder: Path) -> set[str]:
    """The files of ``folder`` that the LMS marked late (``make collect`` writes their names
    into ``collect.LMS_FILE``); none when there is no such record or it is not one."""
    path = folder / LMS_FILE
    try:
        if path.is_symlink() or path.stat().st_size > 65_536:
            return set()
        late = json.loads(path.read_bytes()).get("late", [])
    except (OSError, ValueError, AttributeError):
        return set()
    return {f for f in late if isinstance(f, str)} if isinstance(late, list) else set()


def name_match(filename: str, names: list[str]) -> str | None:
    """The assignment notebook whose name appears in ``filename``, when exactly one does."""
    hits = [n for n in names if n in filename]
    return hits[0] if len(hits) == 1 else None


HISTORY_VERSION = 1


def history_path(gdir: GradingDir) -> Path:
    """The release history of ``gdir``'s class: the course's committed
    ``autograder/judges/<a>.history.json`` for the real class and its shards
    (``GradingDir.history``), otherwise ``judges/<a>.history.json`` in ``gdir``."""
    return gdir.history or gdir.root / "judges" / f"{gdir.assignment}.history.json"


def release_record(released: dict[str, NotebookNode]) -> dict[str, dict[str, dict]]:
    """The record of one release: notebook -> grade id -> ``restore.cell_record``."""
    return {
        name: {gid: cell_record(c) for gid, c in cells_by_id(nb).items()}
        for name, nb in sorted(released.items())
    }


@dataclass(frozen=True)
class History:
    """Every recorded release of the assignment (``release.py`` appends one per distinct
    release to :func:`history_path`): ``[{"date": ..., "notebooks": release_record(...)}]``."""

    releases: tuple[dict, ...] = ()

    @classmethod
    def load(cls, path: Path) -> History:
        """The history in ``path`` (none recorded when there is no file)."""
        if not path.exists():
            return cls()
        try:
            releases = tuple(json.loads(path.read_text())["releases"])
            if all(isinstance(r["notebooks"], dict) for r in releases):
                return cls(releases)
        except (ValueError, KeyError, TypeError):
            pass
        raise ValueError(f"{path} is not a release history (make release writes it)")

    def of(self, notebook: str) -> Earlier:
        """The records of ``notebook`` in the releases that had it (``restore.Earlier``)."""
        found = [r["notebooks"][notebook] for r in self.releases if notebook in r["notebooks"]]
        return Earlier(tuple(found))


def submitted_files(folder: Path) -> list[Path]:
    """The notebooks handed in (checkpoint copies and hidden files skipped)."""
    if not folder.is_dir():
        return []
    return sorted(
        p for p in folder.glob("*.ipynb") if p.is_file() and not p.name.startswith((".", "~"))
    )


@dataclass
class Handin:
    """One student's files as read and matched (:func:`read_handin`), before any is chosen."""

    folder: Path  # submitted/<student>/<a>/
    canonical: dict[str, str]  # file name -> the name it stands for (1_gru-1.ipynb: 1_gru)
    exact: dict[str, NotebookNode] = field(default_factory=dict)  # notebook -> its own file
    others: dict[str, NotebookNode] = field(default_factory=dict)  # file -> under another name
    unreadable: dict[str, str] = field(default_factory=dict)  # file -> why it cannot be graded
    matched: dict[str, list[str]] = field(default_factory=dict)  # notebook -> files like it

    def own_file(self, name: str) -> str:
        """The file handed in under notebook ``name``'s own name (or a resubmission of it)."""
        return next((f for f, stem in self.canonical.items() if stem == name), f"{name}.ipynb")


def read_handin(folder: Path, released: dict[str, NotebookNode], notes: list[str]) -> Handin:
    """The match step: read the notebooks in ``folder`` (at most ``MAX_FILES``, the latest
    of a notebook handed in again) and match each file of no notebook's name to the released
    notebook it is a copy of (:func:`best_match`); what is left out is noted in ``notes``."""
    names = list(released)
    files, earlier = latest_submissions(submitted_files(folder), names)
    notes += earlier
    handin = Handin(folder, {p.name: resubmission(p.stem, names)[0] for p in files})
    for path in _at_most(files, handin.canonical, released, notes):
        nb, why = parse(path.read_bytes())
        if nb is None:
            handin.unreadable[path.name] = why
        elif handin.canonical[path.name] in released:
            handin.exact[handin.canonical[path.name]] = nb
        else:
            handin.others[path.name] = nb
    if not folder.is_dir():
        notes.append(f"no folder {folder.name}/ in the submission")
    handin.matched = {n: [] for n in names}
    for filename, nb in handin.others.items():
        target = best_match(nb, released)
        if target is None:
            notes.append(f"{filename} matches no assignment notebook: not graded")
        else:
            handin.matched[target].append(filename)
    return handin


def _at_most(
    files: list[Path], canonical: dict[str, str], released: dict, notes: list[str]
) -> list[Path]:
    """``files`` cut to ``MAX_FILES`` (those of a notebook's name first), with a note."""
    if len(files) <= MAX_FILES:
        return files
    notes.append(
        f"{len(files)} notebooks handed in: only {MAX_FILES} read "
        f"({', '.join(p.name for p in files[MAX_FILES:][:5])} ... not graded)"
    )
    exact_names = [p for p in files if canonical[p.name] in released]
    rest = [p for p in files if canonical[p.name] not in released]
    return exact_names + rest[: MAX_FILES - len(exact_names)]


def choose(
    entry: NotebookIntake, handin: Handin, names: list[str], optional: tuple[str, ...]
) -> NotebookNode | None:
    """The choose step: the file graded as ``entry``'s notebook (None: none), with its flags:
    its own file, else a single copy matched by content (``renamed``), else ``failed`` when the
    file meant is unreadable, else ``missing`` (a note for an extra-credit notebook)."""
    name = entry.notebook
    copies = handin.matched[name]
    own = handin.own_file(name)
    if name in handin.exact:
        entry.file = own
        if copies:
            entry.flag("renamed", f"also handed in {', '.join(copies)} (not graded)")
        return handin.exact[name]
    if own in handin.unreadable:
        entry.file = own
        entry.flag("failed", f"{own} is {handin.unreadable.pop(own)}")
    elif len(copies) == 1:
        entry.file = copies[0]
        entry.flag("renamed", f"graded {copies[0]} as {name}.ipynb (matched by content)")
        return handin.others[copies[0]]
    elif len(copies) > 1:
        entry.flag("missing")
        entry.flag("renamed", f"{' and '.join(copies)} all look like {name}: none graded")
    else:
        guess = [f for f in handin.unreadable if name_match(f, names) == name]
        if len(guess) == 1:
            entry.file = guess[0]
            entry.flag("renamed")
            entry.flag("failed", f"{guess[0]} is {handin.unreadable.pop(guess[0])}")
        elif name in optional:
            entry.notes.append("extra credit: not handed in")
        else:
            entry.flag("missing", f"no {name}.ipynb handed in")
    return None


def read_student(
    gdir: GradingDir,
    student: str,
    released: dict[str, NotebookNode],
    specs: dict,
    scan: bool = True,
    optional: tuple[str, ...] = (),
    history: History | None = None,
) -> tuple[StudentIntake, dict[str, NotebookNode]]:
    """Decide what of ``student``'s submission is graded; return the intake and the notebooks
    to stage (by assignment notebook name): repaired, their locked and test cells put back in
    their graded form (``specs``: ``spec.Spec`` by notebook name); the student's own cells are
    left as written (``scan``: the advisory scan's findings become ``review`` notes). A notebook
    of ``optional`` (extra credit) that was not handed in gets a note, not the ``missing`` flag.
    A cell as an earlier release had it is not tampering (``history``: by default the one at
    :func:`history_path`). Writes nothing. Three steps: :func:`read_handin` (match),
    :func:`choose`, ``restore.repair``."""
    if history is None:
        history = History.load(history_path(gdir))
    names = list(released)
    result = StudentIntake(student, {n: NotebookIntake(n) for n in names})
    handin = read_handin(gdir.student_dir(gdir.submitted, student), released, result.notes)
    chosen: dict[str, NotebookNode] = {}
    for name in names:
        nb = choose(result.notebooks[name], handin, names, optional)
        if nb is not None:
            chosen[name] = nb
    result.notes += [f"{f} is {why}: not graded" for f, why in handin.unreadable.items()]
    late = late_files(handin.folder)
    for entry in result.notebooks.values():
        if entry.file in late:
            entry.flag("late", f"{entry.file} was handed in late (the LMS marked it LATE)")
    for name, nb in chosen.items():
        entry = result.notebooks[name]
        repair(entry, nb, released[name], specs[name], history.of(name), scan)
    return result, chosen


def stage(gdir: GradingDir, intake: StudentIntake, chosen: dict[str, NotebookNode]) -> str:
    """Write the notebooks to grade to ``intake/<student>/<a>/`` (replacing what was there) and
    return their fingerprint. A ``timestamp.txt`` handed in is kept for late penalties."""
    target = gdir.student_dir(gdir.intake, intake.student)
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    digest = hashlib.sha256()
    for name in sorted(chosen):
        data = (nbformat.writes(chosen[name]) + "\n").encode()
        notebooks.write_bytes(target / f"{name}.ipynb", data)
        digest.update(name.encode() + b"\0" + data + b"\0")
    timestamp = gdir.student_dir(gdir.submitted, intake.student) / "timestamp.txt"
    if timestamp.is_file() and valid_timestamp(timestamp):
        shutil.copy2(timestamp, target / "timestamp.txt")
        digest.update(timestamp.read_bytes())
    return digest.hexdigest()


def valid_timestamp(path: Path) -> bool:
    """Whether ``path`` holds one date and time (nbgrader's late penalties read it; anything
    else would stop nbgrader from grading the student)."""
    from dateutil.parser import parse as parse_date

    data = path.read_bytes()[:200]
    try:
        parse_date(data.decode("ascii").strip())
    except (UnicodeDecodeError, ValueError, OverflowError):
        return False
    return len(data) < 100


INTAKE_SECONDS = 60  # one student's intake (a second or two): past it, that student fails
UNUSABLE_ID = "student id (folder name) not usable: letters, digits, ._@+- only"


class IntakeTimeout(Exception):
    """One student's intake ran past :data:`INTAKE_SECONDS`."""


@contextlib.contextmanager
def intake_deadline(seconds: float):
    """Raise :class:`IntakeTimeout` in the block after ``seconds`` (SIGALRM: in the main
    thread only; elsewhere no limit, and the intake's bounds keep it linear)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(signum, frame):
        raise IntakeTimeout

    before = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, before)


def timed_out(student: str, names: list[str]) -> StudentIntake:
    """The intake of a student whose intake ran past :data:`INTAKE_SECONDS`: nothing graded,
    every notebook ``failed`` (only this student's grade pays)."""
    seen = StudentIntake(student, {n: NotebookIntake(n) for n in names})
    for entry in seen.notebooks.values():
        entry.flag("failed", f"reading the submission took over {INTAKE_SECONDS} s: not graded")
    return seen


def refused_ids(students: list[str]) -> dict[str, str]:
    """The ids of ``students`` that grading refuses (not ``nbgrader_dir.STUDENT_ID``), each
    with why (:data:`UNUSABLE_ID`): ``make grade`` and ``make feedback`` list them alike."""
    return {s: UNUSABLE_ID for s in students if not STUDENT_ID.fullmatch(s)}


def _fingerprint(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


def intake_class(
    course: Course, gdir: GradingDir, chosen: list[str], cell_timeout: int
) -> tuple[dict[str, tuple[str, dict]], dict[str, str]]:
    """Intake and stage every student of ``chosen`` in ``gdir`` (``grading.py``'s step 2),
    each within :data:`INTAKE_SECONDS`, their own outputs of tagged cells attached, bounded
    (``ownrun.attach``). Returns, by student, the fingerprint of what grading will grade (the
    assignment, ``cell_timeout`` and the staged notebooks) and the intake
    (``StudentIntake.to_dict``), and the ids grading refuses (:func:`refused_ids`)."""
    names = course.notebooks()
    released = {n: notebooks.read(gdir.release / f"{n}.ipynb") for n in names}
    judges = read_specs(gdir.judges, names)
    assignment_hash = gdir.source_stamp.read_text().strip()
    taken: dict[str, tuple[str, dict]] = {}
    refused = refused_ids(chosen)
    for student in chosen:
        if student in refused:
            continue
        try:  # a deadline per student: one hand-in can only cost its own grade
            with intake_deadline(INTAKE_SECONDS):
                seen, staged = read_student(
                    gdir,
                    student,
                    released,
                    judges,
                    scan=course.grade.tamper_scan,
                    optional=course.grade.extra_credit,
                )
                handed_in = gdir.student_dir(gdir.submitted, student)
                for name, nb in staged.items():  # own outputs of tagged cells: bounded only
                    ownrun.attach(nb, handed_in / seen.notebooks[name].file, judges[name])
        except IntakeTimeout:
            seen, staged = timed_out(student, names), {}
        seen.fingerprint = stage(gdir, seen, staged)
        fingerprint = _fingerprint(assignment_hash, str(cell_timeout), seen.fingerprint)
        taken[student] = (fingerprint, seen.to_dict())
    return taken, refused
