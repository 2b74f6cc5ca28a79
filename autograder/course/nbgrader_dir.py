"""The nbgrader course directories and the nbgrader commands run in them.

There are two, both generated (gitignored) beside the grader's code: the real class in
``autograder/class/`` and the demo class in ``autograder/demo/`` (:func:`class_dir`: the one
graded, the demo class when nobody handed anything in, :func:`list_students`). Each has an
``nbgrader_config.py`` that loads the course's committed ``autograder/nbgrader_config.py`` with
that folder as nbgrader's course directory. ``make release`` publishes the judge specs of the
release into the committed ``autograder/judges/a/`` (and the release history beside them,
``autograder/judges/a.history.json``). Each course directory holds, for assignment ``a``::

    source/a/*.ipynb                   the solutions with the course's repository stamped in,
                                       without their instructor-only cells
    judges/a/*.json                    each notebook's tests, graded forms and judge cells
    release/a/*.ipynb                  nbgrader's student version of source/
    submitted/<student>/a/*.ipynb      submissions as handed in (read, never modified)
    intake/<student>/a/*.ipynb         submissions as graded (see ``intake.py``)
    autograded/, feedback/             nbgrader's graded notebooks and HTML feedback
    gradebook.db, backups/             nbgrader's gradebook and its timestamped copies
    records/a/<student>.json           what the last ``grade`` found per student (``records.py``)

Every nbgrader command runs in a child process (``python -m autograder.course.nbgrader_app``) with
the virtual environment's ``bin`` on PATH: nbgrader runs a bare ``alembic`` when it creates a
gradebook.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from autograder.course import notebooks
from autograder.course.config import REPO_ROOT, Course

KEEP_BACKUPS = 20
# The nbgrader settings of a course directory made from the class's (the demo class, a grading
# shard, the canary): the course's own nbgrader_config.py with that folder as the directory.
DERIVED_CONFIG = '''"""nbgrader settings of {what} (written by the autograder): the course's
settings ({course_config}) with this folder as the course directory."""
import os

here = os.path.dirname(os.path.abspath(__file__))
load_subconfig(os.path.join(here, {course_config!r}))  # noqa: F821
c.CourseDirectory.root = here  # noqa: F821
'''


def write_derived_config(root: Path, course_config: Path, what: str) -> None:
    """Write ``root/nbgrader_config.py`` (:data:`DERIVED_CONFIG`): the settings in
    ``course_config`` with ``root`` as the course directory; ``what``: whose they are."""
    text = DERIVED_CONFIG.format(what=what, course_config=os.path.relpath(course_config, root))
    target = root / "nbgrader_config.py"
    if not target.exists() or target.read_text() != text:
        notebooks.write_bytes(target, text.encode())


# A student's folder name in submitted/ that grading accepts (nbgrader's student id).
STUDENT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@+-]{0,99}")


@dataclass(frozen=True)
class GradingDir:
    """An nbgrader course directory and the assignment graded in it."""

    root: Path
    assignment: str
    demo: bool = False
    # The release history the intake accepts earlier releases' cells from (intake.history_path):
    # the course's committed one for the real class and its shards; None: root's judges/.
    history: Path | None = None

    @property
    def source(self) -> Path:
        return self.root / "source" / self.assignment

    @property
    def release(self) -> Path:
        return self.root / "release" / self.assignment

    @property
    def submitted(self) -> Path:
        return self.root / "submitted"

    @property
    def intake(self) -> Path:
        return self.root / "intake"

    @property
    def autograded(self) -> Path:
        return self.root / "autograded"

    @property
    def feedback(self) -> Path:
        return self.root / "feedback"

    @property
    def gradebook(self) -> Path:
        return self.root / "gradebook.db"

    @property
    def db_url(self) -> str:
        return gradebook_url(self.gradebook)

    @property
    def backups(self) -> Path:
        return self.root / "backups"

    @property
    def records(self) -> Path:
        """One record per student of the last grading run (``records.py``)."""
        return self.root / "records" / self.assignment

    @property
    def judges(self) -> Path:
        """The judge specs of the assignment's notebooks (``spec.Spec``, one JSON each)."""
        return self.root / "judges" / self.assignment

    @property
    def source_stamp(self) -> Path:
        """Hash of the source notebooks nbgrader last generated the assignment from."""
        return self.root / "release" / f".{self.assignment}-source.sha256"

    def student_dir(self, step: Path, student: str) -> Path:
        return step / student / self.assignment


def real(course: Course) -> GradingDir:
    """The real class's course directory, ``autograder/class/`` (what an earlier version kept
    in ``autograder/`` itself is moved there first: :func:`move_legacy_class`)."""
    move_legacy_class(course)
    history = course.grader_dir / "judges" / f"{course.assignment}.history.json"
    return GradingDir(course.class_dir, course.assignment, history=history)


# What the real class's course directory held when it was autograder/ itself (before 2026-11-27).
LEGACY_CLASS = (
    "submitted", "intake", "autograded", "feedback", "downloaded", "records", "backups", "logs",
    "source", "release", "gradebook.db", "grading-state.json", ".grading.lock",
)  # fmt: skip


def move_legacy_class(course: Course) -> list[str]:
    """Move the real class's files from ``autograder/`` (where versions before the data
    split kept them) into ``autograder/class/``, each that is not there yet: a class graded
    before the update keeps its submissions, gradebook (manual grades included) and records,
    and is not graded again. Returns what was moved (nothing, once done)."""
    moved = []
    for name in LEGACY_CLASS:
        old, new = course.grader_dir / name, course.class_dir / name
        if (old.exists() or old.is_symlink()) and not (new.exists() or new.is_symlink()):
            new.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.replace(old, new)
            except FileNotFoundError:  # another command moved it first
                continue
            moved.append(name)
    if moved:
        print(f"moved the class's {', '.join(moved)} into {course.class_dir}")
    return moved


def demo(course: Course) -> GradingDir:
    return GradingDir(course.demo_dir, course.assignment, demo=True)


def list_students(gdir: GradingDir) -> list[str]:
    """Every folder in ``submitted/`` that holds anything (not hidden ones: ``make collect``
    stages into ``.collect-*``)."""
    if not gdir.submitted.is_dir():
        return []
    return sorted(
        p.name
        for p in gdir.submitted.iterdir()
        if p.is_dir() and not p.name.startswith(".") and any(p.iterdir())
    )


def class_dir(course: Course, demo_class: bool | None = None) -> GradingDir:
    """The course directory of the class to grade: the demo class's when ``demo_class``, or
    when it is None and nobody handed anything in."""
    real_dir = real(course)
    use_demo = demo_class if demo_class is not None else not list_students(real_dir)
    return demo(course) if use_demo else real_dir


# Parallel workers write to one SQLite gradebook. A connection that finds it locked waits up to
# this long for the other writer (SQLite's default, 5 s, was short under load: a worker lost an
# honest student's notebook to "database is locked").
BUSY_SECONDS = 120


def gradebook_url(path: Path) -> str:
    """The SQLAlchemy URL of the gradebook file ``path`` (waits :data:`BUSY_SECONDS` for a lock)."""
    return f"sqlite:///{path}?timeout={BUSY_SECONDS}"


def child_env(threads: int | None = None) -> dict[str, str]:
    """The environment of grading child processes: quick mode, the venv's bin on PATH (for
    ``alembic``), this package importable, and ``threads`` math threads per process."""
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    env["COURSE_QUICK"] = "1"
    env.setdefault("MPLBACKEND", "Agg")
    env["TOKENIZERS_PARALLELISM"] = "false"
    if threads:
        for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
            env[var] = str(threads)
    return env


def load_config(root: Path):
    """The nbgrader config of the course directory ``root`` (its ``nbgrader_config.py``)."""
    from traitlets.config.loader import Config, PyFileConfigLoader

    cfg = Config()
    cfg.merge(PyFileConfigLoader("nbgrader_config.py", path=str(root)).load_config())
    return cfg


def nbgrader(gdir: GradingDir, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    """Run ``nbgrader ARGS`` in ``gdir`` (its config applies); raise with its log on failure."""
    cmd = [sys.executable, "-m", "autograder.course.nbgrader_app", *args]
    proc = subprocess.run(cmd, cwd=gdir.root, env=child_env(), capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise RuntimeError(
            f"`nbgrader {' '.join(args)}` failed in {gdir.root} (exit {proc.returncode}):\n"
            f"{proc.stdout[-3000:]}{proc.stderr[-5000:]}"
        )
    return proc


def source_hash(paths: list[Path]) -> str:
    digest = hashlib.sha256()
    for path in sorted(paths):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def prepare_source(course: Course, gdir: GradingDir) -> list[str]:
    """Copy the solution notebooks into ``gdir``'s nbgrader source, with the course's repository
    and branch stamped into the ``{{GITHUB_REPO}}``/``{{BRANCH}}`` placeholders and without
    their instructor-only cells (judges, reference answers); write each notebook's judge spec
    to ``gdir.judges`` (see ``spec.py``). Only notebooks are copied (never the results or
    checkpoints a solution run leaves). Return their names."""
    from autograder.course.spec import spec_of, without_instructor_cells

    names = course.notebooks()
    if not names:
        raise FileNotFoundError(f"no notebooks in {course.solutions_dir}")
    gdir.source.mkdir(parents=True, exist_ok=True)
    gdir.judges.mkdir(parents=True, exist_ok=True)
    if gdir.root in (course.class_dir, course.demo_dir):
        what = "the demo class" if gdir.demo else "the class"
        write_derived_config(gdir.root, course.grader_dir / "nbgrader_config.py", what)
    for folder, suffix in ((gdir.source, ".ipynb"), (gdir.judges, ".json")):
        for stale in folder.iterdir():
            if stale.is_dir():
                shutil.rmtree(stale)
            elif stale.stem not in names or stale.suffix != suffix:
                stale.unlink()
    for name in names:
        nb = stamped_solution(course, name)
        spec = spec_of(nb, name)
        _write_if_changed(gdir.judges / f"{name}.json", (spec.to_json() + "\n").encode())
        data = (notebooks.nbformat.writes(without_instructor_cells(nb)) + "\n").encode()
        _write_if_changed(gdir.source / f"{name}.ipynb", data)
    return names


def stamped_solution(course: Course, name: str) -> notebooks.NotebookNode:
    """The solution notebook ``name`` with the course's repository and branch stamped in."""
    nb = notebooks.read(course.solutions_dir / f"{name}.ipynb")
    for cell in nb.cells:
        cell.source = course.stamp(cell.source)
    return nb


def _write_if_changed(target: Path, data: bytes) -> None:
    if not target.exists() or target.read_bytes() != data:
        notebooks.write_bytes(target, data)


def backup_gradebook(gdir: GradingDir, reason: str) -> Path | None:
    """Copy the gradebook to ``backups/gradebook-<time>-<reason>.db`` (SQLite's online backup,
    consistent even mid-write); keep the newest ``KEEP_BACKUPS``. None if there is none yet."""
    if not gdir.gradebook.exists():
        return None
    gdir.backups.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    target = gdir.backups / f"gradebook-{stamp}-{reason}.db"
    n = 1
    while target.exists():
        n += 1
        target = gdir.backups / f"gradebook-{stamp}-{reason}-{n}.db"
    src = sqlite3.connect(f"file:{gdir.gradebook}?mode=ro", uri=True)
    dst = sqlite3.connect(target)
    try:
        src.backup(dst)
    finally:
        dst.close()
        src.close()
    for old in sorted(gdir.backups.glob("gradebook-*.db"))[:-KEEP_BACKUPS]:
        old.unlink()
    return target


def _assignment_in_gradebook(gdir: GradingDir, names: list[str]) -> bool:
    if not gdir.gradebook.exists():
        return False
    con = sqlite3.connect(f"file:{gdir.gradebook}?mode=ro", uri=True)
    try:
        rows = con.execute(
            "SELECT notebook.name FROM notebook JOIN assignment "
            "ON notebook.assignment_id = assignment.id WHERE assignment.name = ?",
            (gdir.assignment,),
        ).fetchall()
    except sqlite3.Error:
        return False
    finally:
        con.close()
    return sorted(r[0] for r in rows) == sorted(names)


def generate_assignment(course: Course, gdir: GradingDir, force: bool = False) -> bool:
    """Stamp the source and run ``nbgrader generate_assignment`` (student version in
    ``release/``, source cells and hidden tests in the gradebook) unless nothing changed since
    the last run. Backs the gradebook up first. Return whether nbgrader ran."""
    names = prepare_source(course, gdir)
    digest = source_hash(
        [gdir.source / f"{n}.ipynb" for n in names] + [gdir.judges / f"{n}.json" for n in names]
    )
    up_to_date = (
        gdir.source_stamp.exists()
        and gdir.source_stamp.read_text().strip() == digest
        and all((gdir.release / f"{n}.ipynb").exists() for n in names)
        and _assignment_in_gradebook(gdir, names)
    )
    if up_to_date and not force:
        return False
    backup_gradebook(gdir, "generate")
    gdir.source_stamp.unlink(missing_ok=True)
    nbgrader(gdir, "generate_assignment", gdir.assignment, "--force")
    notebooks.write_bytes(gdir.source_stamp, (digest + "\n").encode())
    return True


def formgrade_command(gdir: GradingDir, *options: str) -> list[str]:
    """The command ``make formgrade`` runs: JupyterLab in ``gdir`` with nbgrader's formgrader,
    its own pages escaped (``formgrade_server.py``)."""
    cmd = [
        sys.executable,
        "-m",
        "autograder.reports.formgrade_server",
        f"--ServerApp.root_dir={gdir.root}",
    ]
    if hasattr(os, "geteuid") and os.geteuid() == 0:  # containers often run as root
        cmd.append("--allow-root")
    return [*cmd, *options]


def formgrade(course: Course, demo_class: bool = False) -> int:
    """Start JupyterLab in the course directory, where nbgrader's formgrader (Nbgrader >
    Formgrader) grades the written answers. Blocks until JupyterLab is stopped."""
    gdir = demo(course) if demo_class else real(course)
    generate_assignment(course, gdir)
    print(f"formgrader for {gdir.root}: in JupyterLab, Nbgrader > Formgrader (or open /formgrader)")
    env = child_env()
    env.pop("COURSE_QUICK")
    return subprocess.call(formgrade_command(gdir), cwd=gdir.root, env=env)
