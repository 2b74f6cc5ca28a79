"""Sharded grading for clusters: ``make grade SHARD=i/N`` on N machines, then ``make merge``.

A shard is one of N disjoint parts of the class, numbered ``0`` to ``N-1`` (as Slurm's
``--array=0-<N-1>`` and Kubernetes' ``JOB_COMPLETION_INDEX`` number their tasks):

- **which students**: student ``s`` belongs to shard ``sha256(s) mod N`` (the first 8 bytes of
  the digest, big-endian). Deterministic, the same on every machine, and independent of the
  number of students: a student handed in late lands in the same shard as before, so running
  a shard again grades only what changed. Shards are balanced on average, not exactly (for
  10,000 students in 64 shards: 156 each, give or take 12);
- **where**: each shard grades in an nbgrader course directory of its own,
  ``autograder/out/shards/<i>-of-<N>/`` (the demo class: ``autograder/out/shards/demo/...``):
  its own gradebook (SQLite must not be shared between machines), intake, graded notebooks,
  feedback, records (``records.py``) and logs, and its own reports in ``out/`` (grades.csv,
  summary.txt). It reads the submissions from the class's ``autograder/class/submitted/``
  (read only; the demo class is generated in each shard). ``shard.json`` says what the shard graded;
  it is written last, so a shard without it did not finish;
- **merge** (``python -m autograder merge``, ``make merge``): checks that shards ``0..N-1`` are
  all there, finished, made from the same assignment and time limit, and disjoint; copies each
  shard's gradebook entries (nbgrader's API: students, submissions, grades, comments), graded
  notebooks, feedback and records into the class's own course directory, then writes one
  ``grades.csv`` and report through ``report.write_reports``, from the same rows a single
  ``make grade`` would have made. A manual score a grader already gave in the class's gradebook
  is kept, as ``make grade`` keeps it.

Everything is on a file system that all shards and the merge share (a cluster's home or
project folder, a Kubernetes volume): ``deploy/slurm-grade.sh``, ``deploy/grade-job.yaml``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import shutil
import sqlite3
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from autograder.course import demo, nbgrader_dir, notebooks
from autograder.course.config import Course
from autograder.course.nbgrader_dir import GradingDir
from autograder.marking import grading
from autograder.marking.records import Records
from autograder.reports import report
from autograder.reports.rows import Row, class_rows

MANIFEST = "shard.json"
MANIFEST_VERSION = 1
FOLDER = re.compile(r"(\d+)-of-(\d+)")


class ShardError(RuntimeError):
    """A shard specification or a set of shards that cannot be graded or merged."""


@dataclass(frozen=True)
class Shard:
    """Shard ``index`` of ``count`` (``0 <= index < count``)."""

    index: int
    count: int

    @classmethod
    def parse(cls, text: str) -> Shard:
        """``"i/N"`` as ``make grade SHARD=i/N`` gives it."""
        found = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text)
        if not found:
            raise ShardError(f"SHARD={text!r}: write i/N, e.g. 0/4 (shards 0 to N-1)")
        index, count = int(found.group(1)), int(found.group(2))
        if count < 1 or index >= count:
            raise ShardError(
                f"SHARD={text}: shards of {count} are numbered 0 to {count - 1} "
                "(as Slurm's --array=0-<N-1> and Kubernetes' JOB_COMPLETION_INDEX)"
            )
        return cls(index, count)

    def owns(self, student: str) -> bool:
        return shard_of(student, self.count) == self.index

    @property
    def name(self) -> str:
        """The shard's folder name: ``<i>-of-<N>``."""
        return f"{self.index}-of-{self.count}"

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def shard_of(student: str, count: int) -> int:
    """The shard (of ``count``) that grades ``student``: a hash of the id, nothing else."""
    digest = hashlib.sha256(student.encode("utf-8", "surrogateescape")).digest()
    return int.from_bytes(digest[:8], "big") % count


@dataclass(frozen=True)
class ShardDir(GradingDir):
    """A shard's course directory; ``inbox`` is the class's ``submitted/`` it reads (None: its
    own, where the demo class is generated)."""

    inbox: Path | None = None

    @property
    def submitted(self) -> Path:
        return self.inbox or self.root / "submitted"


def shards_root(course: Course, demo_class: bool) -> Path:
    """Where the shards of the real class (or of the demo class) are."""
    root = course.out_dir / "shards"
    return root / "demo" if demo_class else root


def prepare(course: Course, gdir: GradingDir, shard: Shard) -> tuple[Course, ShardDir]:
    """The course (reports in the shard's ``out/``) and course directory that grade ``shard``
    of the class in ``gdir``; writes the shard's nbgrader config."""
    root = shards_root(course, gdir.demo) / shard.name
    root.mkdir(parents=True, exist_ok=True)
    main_config = course.grader_dir / "nbgrader_config.py"
    nbgrader_dir.write_derived_config(root, main_config, f"grading shard {shard.name}")
    (root / MANIFEST).unlink(missing_ok=True)  # written again when this run finishes
    inbox = None if gdir.demo else gdir.submitted
    sdir = ShardDir(root, gdir.assignment, demo=gdir.demo, history=gdir.history, inbox=inbox)
    return dataclasses.replace(course, output_dir=root / "out"), sdir


def grade(
    course: Course, shard: Shard, demo_class: bool | None = None, log=print, **how
) -> grading.GradeResult:
    """``grading.grade`` (``how``: its ``jobs``, ``cell_timeout``, ``regrade`` and
    ``students``) for the students of ``shard`` only, in its own course directory with its own
    reports and manifest (``make merge`` combines the shards)."""
    course, sdir = prepare(course, nbgrader_dir.class_dir(course, demo_class), shard)
    plan = grading.make_plan(course, sdir, shard=shard, **how)
    grading.announce(course, plan, log)
    with grading.exclusive(plan.gdir):
        result = grading.grade_plan(course, plan, log)
        if not result.canary:
            write_manifest(course, plan, result)
        return result


def write_manifest(course: Course, plan: grading.Plan, result: grading.GradeResult) -> Path:
    """``shard.json``: what the shard graded, for ``merge`` (written last, atomically)."""
    gdir, shard = plan.gdir, plan.shard
    assert shard is not None
    records = Records(gdir)
    unrecorded = {s for s in {r.student for r in result.rows} if records.get(s) is None}
    problems = {}  # students with no record: why (an unusable id)
    for row in result.rows:
        if row.student in unrecorded and row.notes:
            problems.setdefault(row.student, row.notes[0])
    data = {
        "version": MANIFEST_VERSION,
        "index": shard.index,
        "count": shard.count,
        "demo": plan.gdir.demo,
        "assignment": gdir.assignment,
        "assignment_hash": gdir.source_stamp.read_text().strip(),
        "cell_timeout": plan.cell_timeout,
        "students": sorted({r.student for r in result.rows}),
        "problems": problems,
        "graded": result.graded,
        "incomplete": result.incomplete,
        "seconds": result.seconds,
        "finished": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    path = gdir.root / MANIFEST
    notebooks.write_bytes(path, (json.dumps(data, indent=1) + "\n").encode())
    return path


# --- merge ------------------------------------------------------------------------------------


@dataclass
class MergeResult:
    """What ``merge`` did."""

    gdir: GradingDir
    rows: list[Row]
    shards: int
    incomplete: list[str]  # students a shard did not grade to the end
    unassigned: list[str]  # students handed in that no shard graded


def find_shards(course: Course, demo_class: bool, count: int | None = None) -> dict[int, dict]:
    """The finished shards of one set (``count`` of them: the only set there is when None), by
    index, as their manifests; ShardError when any is missing or they disagree."""
    root = shards_root(course, demo_class)
    found: dict[int, dict[int, Path]] = {}
    for folder in sorted(root.iterdir()) if root.is_dir() else []:
        name = FOLDER.fullmatch(folder.name)
        if name and folder.is_dir():
            found.setdefault(int(name.group(2)), {})[int(name.group(1))] = folder
    if not found:
        raise ShardError(f"no shards in {root}: run make grade SHARD=i/N first")
    if count is None:
        if len(found) > 1:
            sets = ", ".join(f"{n}" for n in sorted(found))
            raise ShardError(f"shards of several sizes in {root} ({sets}): say which (SHARDS=N)")
        count = next(iter(found))
    folders = found.get(count, {})
    manifests: dict[int, dict] = {}
    missing = []
    for index in range(count):
        path = folders.get(index, root / f"{index}-of-{count}") / MANIFEST
        try:
            manifests[index] = json.loads(path.read_text())
        except (OSError, ValueError):
            missing.append(f"{index}/{count}")
    if missing:
        raise ShardError(
            f"shard(s) {', '.join(missing)} not finished (no {MANIFEST} in {root}): "
            "run make grade SHARD=i/N for each, then merge again"
        )
    first = manifests[0]
    owners: dict[str, int] = {}
    for index, data in manifests.items():
        for key in ("version", "assignment", "assignment_hash", "cell_timeout", "demo"):
            if data.get(key) != first.get(key):
                raise ShardError(
                    f"shards 0/{count} and {index}/{count} differ in {key} "
                    f"({first.get(key)!r} vs {data.get(key)!r}): grade them again alike"
                )
        for student in data["students"]:
            if student in owners or shard_of(student, count) != index:
                raise ShardError(f"student {student!r} is in the wrong shard ({index}/{count})")
            owners[student] = index
    return manifests


def merge(
    course: Course, count: int | None = None, demo_class: bool | None = None, log=print
) -> MergeResult:
    """Combine the finished shards into the class's course directory and write one report
    (see the module docstring). ``demo_class`` None: the demo class when no real submission
    exists, as ``grade`` decides."""
    gdir = nbgrader_dir.class_dir(course, demo_class)
    use_demo = gdir.demo
    manifests = find_shards(course, use_demo, count)
    count = len(manifests)
    root = shards_root(course, use_demo)
    dirs = {
        i: ShardDir(root / f"{i}-of-{count}", course.assignment, demo=use_demo) for i in manifests
    }
    log(f"merging {count} shard(s) of {grading.class_title(gdir)} into {gdir.root}")
    with grading.exclusive(gdir):
        if nbgrader_dir.generate_assignment(course, gdir):
            log("  nbgrader generate_assignment: assignment (re)loaded into the gradebook")
        stamp = gdir.source_stamp.read_text().strip()
        if manifests[0]["assignment_hash"] != stamp:
            raise ShardError(
                "the shards graded another version of the assignment than solutions/ holds "
                "now: grade the shards again"
            )
        if use_demo:
            demo.build(course, gdir)  # as `make grade` leaves it: the class's submissions
        backup = nbgrader_dir.backup_gradebook(gdir, "merge")
        if backup:
            log(f"  gradebook backed up to {backup}")
        problems, incomplete = _copy_shards(course, gdir, dirs, manifests, log)
        everyone = sorted({s for data in manifests.values() for s in data["students"]})
        unassigned = (
            [] if use_demo else sorted(set(nbgrader_dir.list_students(gdir)) - set(everyone))
        )
        for student in unassigned:
            problems[student] = (
                f"not graded: no shard of {count} graded this student (handed in after the "
                f"shards ran?): run make grade SHARD={shard_of(student, count)}/{count}, "
                "then make merge"
            )
        everyone = sorted(set(everyone) | set(unassigned))
        limit = manifests[0]["cell_timeout"]
        rows = class_rows(course, gdir, everyone, limit, problems, Records(gdir))
        title = f"{grading.class_title(gdir)} (merged from {count} shards)"
        report.write_reports(course, gdir, rows, title, grading.sandbox_lines(course), log)
    if unassigned:
        log(f"  not in any shard: {', '.join(unassigned)}")
    if incomplete:
        log(f"  not graded to the end: {', '.join(sorted(incomplete))}: run their shards again")
    return MergeResult(gdir, rows, count, sorted(incomplete), unassigned)


def _copy_shards(
    course: Course,
    gdir: GradingDir,
    dirs: dict[int, ShardDir],
    manifests: dict[int, dict],
    log=print,
) -> tuple[dict[str, str], list[str]]:
    """Copy each shard's (``dirs``: index -> its folder) gradebook entries, graded notebooks,
    feedback and records into ``gdir``; return what the shards' ``manifests`` say: the
    problems by student, and the students not graded to the end."""
    records = Records(gdir)
    problems: dict[str, str] = {}
    incomplete: list[str] = []
    for index, data in sorted(manifests.items()):
        sdir = dirs[index]
        students = data["students"]
        copy_gradebook(sdir.gradebook, gdir.gradebook, course.assignment, students)
        shard_records = Records(sdir)
        for student in students:
            copy_student_files(sdir, gdir, student)
            records.copy_from(shard_records, student)
        problems.update(data.get("problems", {}))
        incomplete += data.get("incomplete", [])
        seconds, finished = data.get("seconds", 0), data.get("finished")
        log(f"  shard {index}/{len(manifests)}: {len(students)} student(s), graded in "
            f"{seconds:.0f} s, finished {finished}")  # fmt: skip
    return problems, incomplete


def copy_student_files(src: GradingDir, dst: GradingDir, student: str) -> None:
    """Replace ``student``'s graded notebooks and feedback in ``dst`` by the shard's."""
    for step in ("autograded", "feedback"):
        source = src.student_dir(getattr(src, step), student)
        target = dst.student_dir(getattr(dst, step), student)
        if target.exists():
            shutil.rmtree(target)
        if source.is_dir():
            shutil.copytree(source, target)


def copy_gradebook(src: Path, dst: Path, assignment: str, students: list[str]) -> None:
    """Copy ``students``' submissions of ``assignment`` from the gradebook ``src`` into ``dst``
    (which holds the same assignment, generated from the same source): the rows nbgrader's
    ``add_submission`` makes (submission, notebooks, grades, comments) with their scores,
    flags and comments, matched by notebook and cell name (ids differ between gradebooks).
    A manual score or comment a grader already gave in ``dst`` is kept. Plain SQL on nbgrader's
    schema (0.9): its API loads each cell lazily, 0.1-0.4 s per student."""
    con = sqlite3.connect(f"file:{dst}", uri=True)
    try:
        con.execute("ATTACH DATABASE ? AS src", (f"file:{src}?mode=ro",))
        _copy_rows(con, assignment, set(students))
        con.commit()  # once: a merge that stops is run again (the gradebook was backed up)
    finally:
        con.close()


def _copy_rows(con: sqlite3.Connection, assignment: str, students: set[str]) -> None:
    """The copy of :func:`copy_gradebook`, table by table (each read once: nbgrader's indexes
    do not serve lookups by submission): submissions, their notebooks, then grades and
    comments."""
    theirs, their_nbs, their_cells = _ids(con, "src", assignment)
    ours, our_nbs, our_cells = _ids(con, "main", assignment)
    cell = {cid: our_cells[key] for key, cid in their_cells.items()}  # their cell -> ours
    nb_of = {nid: our_nbs[name] for name, nid in their_nbs.items()}  # their notebook -> ours
    subs = _copy_submissions(con, theirs, ours, students)
    sns = _copy_submitted_notebooks(con, ours, subs, nb_of)
    _copy_scores(con, sns, cell)


def _ids(
    con: sqlite3.Connection, db: str, assignment: str
) -> tuple[str, dict[str, str], dict[tuple[str, str, str], str]]:
    """In the gradebook ``db`` (``main`` or ``src``): the id of ``assignment``, its notebooks'
    (name -> id) and their cells' ((notebook, cell, type) -> id)."""
    found = con.execute(f"SELECT id FROM {db}.assignment WHERE name = ?", (assignment,))
    row = found.fetchone()
    if row is None:
        raise ShardError(f"assignment {assignment!r} missing from a gradebook")
    nbs = dict(con.execute(f"SELECT name, id FROM {db}.notebook WHERE assignment_id = ?", row))
    cells = con.execute(
        f"SELECT n.name, c.name, c.type, c.id FROM {db}.base_cell c "
        f"JOIN {db}.notebook n ON c.notebook_id = n.id WHERE n.assignment_id = ?",
        row,
    )
    return row[0], nbs, {(nb, name, kind): cid for nb, name, kind, cid in cells}


def _copy_submissions(
    con: sqlite3.Connection, theirs: str, ours: str, students: set[str]
) -> dict[str, str]:
    """``students``' submissions of the assignment (``theirs`` in ``src``, ``ours`` in
    ``main``), and the students themselves; return their submission's id -> ours (a student's
    existing submission in ``main`` keeps its id)."""
    existing = dict(
        con.execute(
            "SELECT student_id, id FROM main.submitted_assignment WHERE assignment_id = ?", (ours,)
        )
    )
    subs = {}  # their submission -> ours
    for sid, student, stamp, extension in con.execute(
        "SELECT id, student_id, timestamp, extension FROM src.submitted_assignment "
        "WHERE assignment_id = ?",
        (theirs,),
    ).fetchall():
        if student not in students:
            continue
        subs[sid] = existing.get(student) or uuid.uuid4().hex
        con.execute(
            "INSERT OR IGNORE INTO main.student SELECT * FROM src.student WHERE id = ?", (student,)
        )
        con.execute(
            "INSERT INTO main.submitted_assignment (id, assignment_id, student_id, timestamp, "
            "extension) VALUES (?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET "
            "timestamp = excluded.timestamp, extension = excluded.extension",
            (subs[sid], ours, student, stamp, extension),
        )
    return subs


def _copy_submitted_notebooks(
    con: sqlite3.Connection, ours: str, subs: dict[str, str], nb_of: dict[str, str]
) -> dict[str, str]:
    """The submitted notebooks of the submissions ``subs`` (theirs -> ours; ``nb_of``: their
    notebook -> ours) with their flags and penalties; return their id -> ours."""
    our_sns = {
        (sub, nid): snid
        for snid, sub, nid in con.execute(
            "SELECT s.id, s.assignment_id, s.notebook_id FROM main.submitted_notebook s "
            "JOIN main.submitted_assignment a ON s.assignment_id = a.id WHERE a.assignment_id = ?",
            (ours,),
        )
    }
    sns = {}  # their submitted notebook -> ours
    rows = []
    for snid, sid, nid, flagged, penalty in con.execute(
        "SELECT id, assignment_id, notebook_id, flagged, late_submission_penalty "
        "FROM src.submitted_notebook"
    ).fetchall():
        if sid in subs:
            key = (subs[sid], nb_of[nid])
            sns[snid] = our_sns.get(key) or uuid.uuid4().hex
            rows.append((sns[snid], *key, flagged, penalty))
    con.executemany(
        "INSERT INTO main.submitted_notebook (id, assignment_id, notebook_id, flagged, "
        "late_submission_penalty) VALUES (?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET "
        "flagged = excluded.flagged, late_submission_penalty = excluded.late_submission_penalty",
        rows,
    )
    return sns


def _copy_scores(con: sqlite3.Connection, sns: dict[str, str], cell: dict[str, str]) -> None:
    """The grades and comments of the submitted notebooks ``sns`` (theirs -> ours; ``cell``:
    their cell -> ours): the autograder's replace ours, a grader's manual ones in ``main``
    are kept."""
    for table, fields, manual in (
        ("grade", ("auto_score", "needs_manual_grade"), ("manual_score", "extra_credit")),
        ("comment", ("auto_comment",), ("manual_comment",)),
    ):
        names = ("id", "notebook_id", "cell_id", *fields, *manual)
        kept = [f"{f} = coalesce({table}.{f}, excluded.{f})" for f in manual]  # a grader's
        update = ", ".join([f"{f} = excluded.{f}" for f in fields] + kept)
        found = con.execute(
            f"SELECT notebook_id, cell_id, {', '.join((*fields, *manual))} FROM src.{table}"
        ).fetchall()
        con.executemany(
            f"INSERT INTO main.{table} ({', '.join(names)}) "
            f"VALUES ({', '.join('?' * len(names))}) "
            f"ON CONFLICT (cell_id, notebook_id) DO UPDATE SET {update}",
            [
                (uuid.uuid4().hex, sns[snid], cell[cid], *values)
                for snid, cid, *values in found
                if snid in sns
            ],
        )
