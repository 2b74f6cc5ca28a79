"""`make grade` end to end: the real nbgrader grades the demo class, odd submissions, a crash
mid-run and an LMS zip, in temporary copies of a course.

The tiny course in tests/fixtures/course (two notebooks that import nothing heavy, so the edge
cases run fast, with exact expected grades): its demo class (the README's `make grade`), odd
submissions, the canary. Each class is graded once per module (module-scoped fixtures). The
repository's own notebooks: ``tests/scenarios/test_grade_real.py``.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import nbformat
import pytest

from autograder.course import config, nbgrader_dir, notebooks
from autograder.course.spec import GradedCell, Spec, grade_id, spec_of
from autograder.handin import intake
from autograder.marking import launcher, worker
from autograder.reports import ownrun
from helpers import (
    ENV,
    FIXTURE,
    ROOT,
    autograder,
    course_sources,
    gradebook_rows,
    graded_tiny_demo,
    grades,
    make_course,
    student_record,
)


def test_a_new_gradebook_holds_nbgraders_schema_revision(tmp_path):
    """``nbgrader_app`` reads the schema's newest revision in its own process (nbgrader starts
    ``alembic heads`` for it, ~3 s): the same revision, and the gradebook holds it."""
    from nbgrader.dbutil import _temp_alembic_ini

    from autograder.course import nbgrader_app

    with _temp_alembic_ini(f"sqlite:///{tmp_path / 'scratch.db'}") as ini:
        heads = subprocess.run(
            ["alembic", "-c", ini, "heads"], env=ENV, capture_output=True, text=True, check=True
        )
    head = heads.stdout.split()[0]
    assert nbgrader_app.alembic_head() == head
    course = config.load(make_course(tmp_path / "course"))
    gdir = nbgrader_dir.real(course)
    assert nbgrader_dir.generate_assignment(course, gdir)
    with sqlite3.connect(gdir.gradebook) as con:
        assert con.execute("SELECT version_num FROM alembic_version").fetchall() == [(head,)]


# ---------------------------------------------------------------------------------------------
# The tiny course's demo class: exact grades.

FIXTURE_EXPECTED = {  # student: {notebook: (points, flags)}; 1_sums is worth 2 + 1 manual
    "s1-full": {"1_sums": (2, "needs-manual"), "2_words": (2, "ok")},
    "s2-blank": {"1_sums": (0, "ok"), "2_words": (0, "ok")},
    "s3-partial": {"1_sums": (1, "ok"), "2_words": (0, "ok")},
    "s4-raises": {"1_sums": (0, "ok"), "2_words": (2, "ok")},
    "s5-loop": {"1_sums": (0, "timeout"), "2_words": (2, "ok")},
    "s6-tampered": {"1_sums": (2, "tampered;needs-manual"), "2_words": (2, "ok")},
    "s7-deleted": {"1_sums": (2, "tampered;needs-manual"), "2_words": (2, "ok")},
    "s8-renamed": {"1_sums": (2, "renamed;needs-manual"), "2_words": (2, "ok")},
    "s9-invalid-json": {"1_sums": (0, "failed"), "2_words": (0, "missing")},
}


@pytest.fixture(scope="module")
def tiny_demo(tmp_path_factory):
    return graded_tiny_demo(tmp_path_factory.mktemp("tiny-demo") / "course")


def test_tiny_demo_class_grades(tiny_demo):
    root, out = tiny_demo
    rows = grades(root)
    assert "DEMO class" in out and "totals (% of the maximum" in out
    got = {(s, n): (float(r["autograded"]), r["flags"]) for (s, n), r in rows.items()}
    assert got == flatten(FIXTURE_EXPECTED)
    assert {r["max"] for (_, n), r in rows.items() if n == "1_sums"} == {"3"}
    cells = rows[("s3-partial", "1_sums")]["cells"]
    assert cells == "test_add=1/1 test_mul=0/1 why_commutative=0/1"
    assert "Copy of 1_sums.ipynb" in rows[("s8-renamed", "1_sums")]["file"]
    assert "deleted cell test_add" in rows[("s7-deleted", "1_sums")]["notes"]
    assert "not a valid notebook" in rows[("s9-invalid-json", "1_sums")]["notes"]


def test_tiny_demo_feedback_and_backups(tiny_demo):
    root, _ = tiny_demo
    demo_dir = root / "autograder" / "demo"
    feedback = demo_dir / "feedback" / "s1-full" / "a3"
    assert {p.name for p in feedback.iterdir()} == {"1_sums.html", "2_words.html", "index.html"}
    page = (demo_dir / "feedback" / "s9-invalid-json" / "a3" / "index.html").read_text()
    assert "could not be graded" in page and "0 / 5" in page
    assert list((demo_dir / "backups").glob("gradebook-*.db"))
    assert (root / "autograder" / "out" / "summary.txt").read_text().count("s1-full") == 1
    # the submissions as handed in are never modified
    assert sorted(p.name for p in (demo_dir / "submitted" / "s8-renamed" / "a3").iterdir()) == [
        "2_words.ipynb",
        "Copy of 1_sums.ipynb",
    ]


def test_tiny_demo_rerun_is_idempotent(tiny_demo):
    root, _ = tiny_demo
    demo_dir = root / "autograder" / "demo"
    before_csv = (root / "autograder" / "out" / "grades.csv").read_text()
    before_db = gradebook_rows(demo_dir)
    out = autograder(root, "grade").stdout
    assert "nothing to grade" in out
    assert (root / "autograder" / "out" / "grades.csv").read_text() == before_csv
    assert gradebook_rows(demo_dir) == before_db


def test_tiny_demo_graded_twice_same_grade(tiny_demo):
    root, _ = tiny_demo
    before = grades(root)
    out = autograder(
        root, "grade", "--regrade", "--student", "s3-partial", "--student", "s7-deleted"
    ).stdout
    assert "grading 2 student(s)" in out
    assert grades(root) == before


# ---------------------------------------------------------------------------------------------
# Odd submissions from real (non-demo) students, a worker killed by the student time limit.

EDGE_TOML = (
    (FIXTURE / "course.toml")
    .read_text()
    .replace("student_timeout = 120", "student_timeout = 60")
    .replace("cell_timeout = 20", "cell_timeout = 10")
)


def flatten(expected: dict) -> dict[tuple[str, str], tuple[float, str]]:
    return {(s, n): (float(p), f) for s, nbs in expected.items() for n, (p, f) in nbs.items()}


def _dump(nb) -> bytes:
    return nbformat.writes(nb).encode()


def write_edge_class(root: Path) -> None:
    src, gdir = course_sources(root)
    full1, full2 = _dump(src.solved("1_sums")), _dump(src.solved("2_words"))

    def hand_in(student: str, files: dict[str, bytes]) -> None:
        folder = gdir.submitted / student / "a3"
        folder.mkdir(parents=True)
        for name, data in files.items():
            (folder / name).write_bytes(data)

    hand_in("e1-two-copies", {"Copy of 1_sums.ipynb": full1, "1_sums (1).ipynb": full1,
                              "2_words.ipynb": full2})  # fmt: skip
    hand_in("e2-copy-and-original", {"1_sums.ipynb": _dump(src.released["1_sums"]),
                                     "1_sums v2.ipynb": full1, "2_words.ipynb": full2})  # fmt: skip
    bare = src.solved("1_sums")
    for cell in bare.cells:
        cell.metadata.pop("nbgrader", None)
    hand_in("e3-no-metadata", {"my work.ipynb": _dump(bare), "2_words.ipynb": full2})
    hand_in("e4-garbage", {"1_sums.ipynb": b"", "2_words.ipynb": b'{"hello": 1}',
                           "notes.txt": b"hi"})  # fmt: skip
    hand_in("bad*id", {"1_sums.ipynb": full1, "2_words.ipynb": full2})
    meta = src.solved("1_sums")
    for cell in meta.cells:
        if grade_id(cell) == "test_add":
            cell.metadata.nbgrader["points"] = 5
        if grade_id(cell) == "test_mul":
            cell.metadata.nbgrader["grade"] = False
    hand_in("e5-metadata", {"1_sums.ipynb": _dump(meta), "2_words.ipynb": full2})
    dup = src.solved("1_sums")
    test = next(c for c in dup.cells if grade_id(c) == "test_add")
    fake = nbformat.from_dict(test)
    fake.source, fake.id = "pass", "fake"
    dup.cells.insert(0, fake)
    hand_in("e6-duplicate", {"1_sums.ipynb": _dump(dup), "2_words.ipynb": full2})
    stuck = src.solved("1_sums")
    for cell in stuck.cells:
        if grade_id(cell) == "add":
            cell.source = (
                "import time\n\nwhile True:  # deaf to interrupts (KeyboardInterrupt)\n"
                "    try:\n        time.sleep(0.1)\n    except KeyboardInterrupt:\n"
                "        pass\n" + cell.source
            )
    hand_in("e7-stuck", {"1_sums.ipynb": _dump(stuck), "2_words.ipynb": full2})
    hand_in("e8-full", {"1_sums.ipynb": full1, "2_words.ipynb": full2})
    raw = json.loads(full1)  # the cell ids of a notebook edited by another tool
    raw["nbformat_minor"] = 5
    for i, cell in enumerate(raw["cells"]):
        cell["id"] = "bad id!" if i % 2 else "same"
    hand_in("e9-bad-ids", {"1_sums.ipynb": json.dumps(raw).encode(), "2_words.ipynb": full2})
    hand_in("e10-many-cells", {"1_sums.ipynb": many_cells(80_000), "2_words.ipynb": full2})


EDGE_EXPECTED = {  # student: {notebook: (autograded points, flags)}
    "bad*id": {"1_sums": (0, "failed"), "2_words": (0, "failed")},
    "e1-two-copies": {"1_sums": (0, "missing;renamed"), "2_words": (2, "ok")},
    "e2-copy-and-original": {"1_sums": (0, "renamed"), "2_words": (2, "ok")},
    "e3-no-metadata": {"1_sums": (2, "renamed;needs-manual"), "2_words": (2, "ok")},
    "e4-garbage": {"1_sums": (0, "failed"), "2_words": (0, "failed")},
    "e5-metadata": {"1_sums": (2, "tampered;needs-manual"), "2_words": (2, "ok")},
    "e6-duplicate": {"1_sums": (2, "tampered;needs-manual"), "2_words": (2, "ok")},
    "e7-stuck": {"1_sums": (0, "failed;timeout"), "2_words": (0, "failed;timeout")},
    "e8-full": {"1_sums": (2, "needs-manual"), "2_words": (2, "ok")},
    "e9-bad-ids": {"1_sums": (2, "needs-manual"), "2_words": (2, "ok")},
    "e10-many-cells": {"1_sums": (0, "failed"), "2_words": (2, "ok")},
}


@pytest.fixture(scope="module")
def edge_class(tmp_path_factory):
    root = make_course(tmp_path_factory.mktemp("edge"), toml=EDGE_TOML)
    write_edge_class(root)
    (root / "tmp").mkdir()  # the grader's temporary folder (see test_killed_worker_...)
    proc = autograder(root, "grade", "--jobs", "2", env={**ENV, "TMPDIR": str(root / "tmp")})
    return root, proc.stdout


def test_edge_class_grades(edge_class):
    root, out = edge_class
    rows = grades(root)
    got = {(s, n): (float(r["autograded"]), r["flags"]) for (s, n), r in rows.items()}
    assert got == flatten(EDGE_EXPECTED)
    assert "submissions in" in out and "DEMO" not in out
    notes = {k: r["notes"] for k, r in rows.items()}
    assert "all look like 1_sums" in notes[("e1-two-copies", "1_sums")]
    assert "also handed in 1_sums v2.ipynb" in notes[("e2-copy-and-original", "1_sums")]
    assert "lost its nbgrader metadata" in notes[("e3-no-metadata", "1_sums")]
    assert "notes.txt" not in notes[("e4-garbage", "1_sums")]  # not a notebook: ignored
    assert "changed the nbgrader metadata of cell test_add" in notes[("e5-metadata", "1_sums")]
    assert "duplicated cell test_add" in notes[("e6-duplicate", "1_sums")]
    assert "time limit ran out" in notes[("e7-stuck", "1_sums")]
    assert "student id" in notes[("bad*id", "1_sums")]
    assert rows[("e5-metadata", "1_sums")]["max"] == "3"  # the released points, not the edit
    assert "more than the 2000 cells" in notes[("e10-many-cells", "1_sums")]


def test_killed_worker_leaves_no_kernel_behind(edge_class):
    import psutil

    root, _ = edge_class
    left = []
    for proc in psutil.process_iter(["cwd"]):
        try:
            if proc.info["cwd"] and proc.info["cwd"].startswith(str(root)):
                left.append(proc)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    assert not left, f"processes still running in the course: {left}"
    # nor its temporary files: e7-stuck's worker was killed at the time limit
    assert not list((root / "tmp").iterdir())


def test_crash_mid_run_keeps_earlier_grades(edge_class):
    """Kill `grade` (and everything it started) once a student is done: the gradebook stays
    sound, the old report stays, and the next run finishes the job with the same grades."""
    import psutil

    root, _ = edge_class
    gdir = root / "autograder" / "class"
    before = grades(root)
    targets = ["e8-full", "e5-metadata", "e2-copy-and-original"]
    cmd = [sys.executable, "-m", "autograder", "--root", str(root), "grade", "--regrade"]
    cmd += ["--jobs", "1"] + [arg for t in targets for arg in ("--student", t)]
    scratch = root / "tmp-crash"  # what the killed workers leave (their parent cannot clean up)
    scratch.mkdir()
    env = {**ENV, "TMPDIR": str(scratch)}
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL)
    restarted = finished = False  # the new run first clears its students' last runs
    deadline = time.time() + 600
    while time.time() < deadline and not finished and proc.poll() is None:
        time.sleep(0.2)
        runs = [student_record(gdir, t) for t in targets]
        workers = [run["worker"] for run in runs if run]
        restarted = restarted or any(not w for w in workers)
        finished = restarted and any(w.get("done") for w in workers)
    assert proc.poll() is None, "grade finished before it could be killed"
    procs = psutil.Process(proc.pid).children(recursive=True) + [psutil.Process(proc.pid)]
    for p in procs:
        p.send_signal(signal.SIGKILL)
    psutil.wait_procs(procs, timeout=20)
    proc.wait()
    assert finished, "no student finished before the deadline"
    assert gradebook_rows(gdir)  # integrity_check passes
    assert grades(root) == before  # the report of the last complete run is untouched
    out = autograder(root, "grade").stdout
    assert grades(root) == before
    assert "unchanged since last time" in out


def test_collect_lms_zip(tmp_path):
    root = make_course(tmp_path / "course")
    src, _ = course_sources(root)
    archive = tmp_path / "download.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("doejane_123_456_1_sums.ipynb", _dump(src.solved("1_sums")))
        zf.writestr("doejane_123_456_2_words.ipynb", _dump(src.solved("2_words")))
        zf.writestr("smithbob_LATE_124_457_1_sums-1.ipynb", _dump(src.released["1_sums"]))
        zf.writestr("somebody_else.ipynb", b"{}")
    out = autograder(root, "collect", str(archive)).stdout
    submitted = root / "autograder" / "class" / "submitted"
    assert sorted(str(p.relative_to(submitted)) for p in submitted.rglob("*.ipynb")) == [
        "doejane/a3/1_sums.ipynb",
        "doejane/a3/2_words.ipynb",
        "smithbob/a3/1_sums-1.ipynb",
    ]
    assert "collected 2 student(s)" in out and "somebody_else.ipynb" in out
    # collecting again backs the submissions up first
    autograder(root, "collect", str(archive))
    assert list(
        (root / "autograder" / "class" / "backups").glob("submitted-*/doejane/a3/1_sums.ipynb")
    )


# ---------------------------------------------------------------------------------------------
# Intake on its own (no nbgrader run).


def test_intake_matches_by_content_only_when_unambiguous():
    a = nbformat.v4.new_notebook()
    b = nbformat.v4.new_notebook()
    for nb, tag in ((a, "a"), (b, "b")):
        nb.cells = [
            nbformat.v4.new_markdown_cell(f"# part {tag}"),
            nbformat.v4.new_code_cell(
                f"assert {tag}", metadata={"nbgrader": {"grade_id": f"t_{tag}", "locked": True}}
            ),
        ]
    assert intake.best_match(a, {"a": a, "b": b}) == "a"
    assert intake.best_match(nbformat.v4.new_notebook(), {"a": a, "b": b}) is None
    both = nbformat.v4.new_notebook(cells=a.cells + b.cells)
    assert intake.best_match(both, {"a": a, "b": b}) is None  # a tie is not a match
    assert intake.parse(b"not json")[0] is None
    assert intake.parse(nbformat.writes(a).encode())[0] is not None


def test_intake_reads_twenty_files_and_names_an_unreadable_copy(tmp_path):
    """Past ``MAX_FILES`` the files of a notebook's own name are read first, the rest noted;
    an unreadable file whose name holds one notebook's name is that notebook, ``failed``."""
    released = {}
    for tag in ("sums", "words"):
        released[tag] = nbformat.v4.new_notebook(
            cells=[
                nbformat.v4.new_code_cell(
                    f"assert {tag}", metadata={"nbgrader": {"grade_id": f"t_{tag}", "locked": True}}
                )
            ]  # fmt: skip
        )
    gdir = nbgrader_dir.GradingDir(tmp_path, "a3")
    folder = gdir.student_dir(gdir.submitted, "s1")
    folder.mkdir(parents=True)
    (folder / "my sums.ipynb").write_bytes(b"garbage")
    (folder / "words.ipynb").write_text(nbformat.writes(released["words"]))
    for i in range(25):
        (folder / f"x{i:02}.ipynb").write_text(nbformat.writes(nbformat.v4.new_notebook()))
    specs = {name: spec_of(nb, name) for name, nb in released.items()}
    seen, staged = intake.read_student(
        gdir, "s1", released, specs, scan=False, history=intake.History()
    )
    sums, words = seen.notebooks["sums"], seen.notebooks["words"]
    assert (sums.file, sums.flags, words.file, words.flags) == (
        "my sums.ipynb",
        ["renamed", "failed"],
        "words.ipynb",
        [],
    )
    assert sums.notes[0].startswith("my sums.ipynb is not a valid notebook (")
    assert list(staged) == ["words"] and words.staged and not sums.staged
    assert seen.notes == [
        "27 notebooks handed in: only 20 read (x18.ipynb, x19.ipynb, x20.ipynb, x21.ipynb,"
        " x22.ipynb ... not graded)",
        *(f"x{i:02}.ipynb matches no assignment notebook: not graded" for i in range(18)),
    ]


def many_cells(count: int) -> bytes:
    """A notebook of ``count`` empty code cells (4 MB for 80,000)."""
    cell = {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
            "source": ""}  # fmt: skip
    nb = {"cells": [cell] * count, "metadata": {}, "nbformat": 4, "nbformat_minor": 4}
    return json.dumps(nb).encode()


def test_intake_refuses_a_huge_notebook_at_once():
    data = many_cells(80_000)
    assert len(data) > 4_000_000
    nb, why = intake.parse(data)
    assert nb is None and why == "has 80000 cells, more than the 2000 cells the autograder reads"


def test_intake_repairs_invalid_and_repeated_cell_ids():
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(str(i)) for i in range(4)])
    raw = json.loads(nbformat.writes(nb))
    for cell, cid in zip(raw["cells"], ["ok-1", "ok-1", "bad id!", ""], strict=True):
        cell["id"] = cid
    repaired, why = intake.parse(json.dumps(raw).encode())
    assert why == "" and [c.source for c in repaired.cells] == ["0", "1", "2", "3"]
    ids = [c.id for c in repaired.cells]
    assert ids[0] == "ok-1" and len(set(ids)) == 4
    nbformat.validate(repaired)


def test_intake_repairs_what_grading_does_not_need():
    raw = json.loads(nbformat.writes(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell()])))
    raw["cells"][0]["execution_count"] = "7"  # outputs are cleared before grading anyway
    assert intake.parse(json.dumps(raw).encode())[0] is not None
    raw["cells"][0]["source"] = 5  # no notebook has a number for source
    nb, why = intake.parse(json.dumps(raw).encode())
    assert nb is None and why.startswith("not a valid notebook")


def test_extra_credit_is_shown_apart():
    from autograder.reports import feedback, report
    from autograder.reports.rows import empty_row

    spec = Spec("1_x", {}, (), graded=(GradedCell("t", 2.0, True),))
    extra = Spec("5_x", {}, (), graded=(GradedCell("u", 1.0, True),))
    done = empty_row("ann", spec)
    done.autograded = 2.0
    bonus = empty_row("ann", extra, extra=True)
    bonus.autograded = 0.5
    skipped = empty_row("bob", spec)
    absent = empty_row("bob", extra, extra=True)
    absent.notes.append("extra credit: not handed in")
    rows = [done, bonus, skipped, absent]
    table = report.summary_table(rows).splitlines()
    assert table[1].split()[-2:] == ["2", "+1"]  # the maximums: 2 regular, 1 extra
    assert table[2].split()[-3:] == ["2/2", "+0.5", "ok"]
    assert table[3].split()[-3:] == ["0/2", "+0", "ok"]  # no flag for the absent extra
    assert "extra credit left out" in report.histogram(rows)
    page = feedback.student_page("ann", [done, bonus], {})
    assert "2 / 2" in page and "0.5</b> extra credit" in page
    assert [r.as_csv()["extra_credit"] for r in rows] == ["no", "yes", "no", "yes"]


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def test_a_busy_gradebook_makes_grading_wait_not_fail(tmp_path):
    """Parallel workers write to one SQLite gradebook: one that found it locked for longer than
    SQLite's default wait (5 s) failed the notebook it was grading ("database is locked": 0
    points for an honest student). Grading now waits for the lock."""
    root = make_course(tmp_path / "course")
    src, gdir = course_sources(root)
    folder = gdir.submitted / "ann" / "a3"
    folder.mkdir(parents=True)
    for name in ("1_sums", "2_words"):
        (folder / f"{name}.ipynb").write_bytes(_dump(src.solved(name)))
    cmd = [sys.executable, "-m", "autograder", "--root", str(root), "grade"]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=ENV, stdout=subprocess.PIPE, text=True)
    log = gdir.root / "logs" / "ann.json"
    deadline = time.time() + 300
    while proc.poll() is None and time.time() < deadline and "1_sums" not in _read(log):
        time.sleep(0.05)
    # ann's worker has started on 1_sums: another writer holds the gradebook for 12 s
    con = sqlite3.connect(gdir.gradebook, check_same_thread=False, isolation_level=None)
    con.execute("BEGIN EXCLUSIVE")
    time.sleep(12)
    con.rollback()
    con.close()
    out = proc.communicate(timeout=600)[0]
    assert proc.returncode == 0, out[-3000:]
    rows = grades(root)
    assert {n: (r["autograded"], r["flags"]) for (_, n), r in rows.items()} == {
        "1_sums": ("2", "needs-manual"),
        "2_words": ("2", "ok"),
    }


def test_only_the_gradebook_s_own_error_makes_a_student_wait_for_a_regrade():
    """A student stays unfinished (graded again) for a fault of the gradebook, told by SQLite's
    exception in the chain nbgrader raises, never by words a kernel could print."""
    import sqlalchemy.exc
    from nbgrader.converters.base import NbGraderException

    def raised(inner: BaseException) -> BaseException:
        try:
            try:
                raise inner
            except Exception:  # as nbgrader raises it: the context only, no "from"
                raise NbGraderException("There was an error accessing the database")  # noqa: B904
        except NbGraderException as err:
            return err

    locked = sqlite3.OperationalError("database is locked")
    assert worker.gradebook_fault(raised(locked))
    wrapped = sqlalchemy.exc.OperationalError("UPDATE grade", {}, locked)
    assert worker.gradebook_fault(raised(wrapped))
    # a student's words, however they reach the worker, are not the gradebook's error
    assert not worker.gradebook_fault(raised(RuntimeError("database is locked")))
    assert not worker.gradebook_fault(NbGraderException("OperationalError: database is locked"))
    assert not worker.gradebook_fault(None)
    looped = RuntimeError("a")
    looped.__context__ = RuntimeError("b")
    looped.__context__.__context__ = looped  # a chain that loops ends
    assert not worker.gradebook_fault(looped)


def test_a_grader_killed_outright_leaves_nothing_in_tmp_for_long(tmp_path, monkeypatch):
    """A grader killed with SIGKILL cannot remove its workers' temporary folders; the next
    grading run does, and only those of graders that no longer run."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    left = tmp_path / f"{launcher.SCRATCH}{dead.pid}-abc"
    running = tmp_path / f"{launcher.SCRATCH}{os.getpid()}-def"
    other = tmp_path / f"{launcher.SCRATCH}notapid-x"
    for folder in (left, running, other):
        (folder / "a3-sbx-1").mkdir(parents=True)
    assert launcher.sweep_scratch() == [left]
    assert not left.exists() and running.exists() and other.exists()


# ---------------------------------------------------------------------------------------------
# The canary, and the student's own outputs where grading does not run a cell.


def test_canary_stops_a_broken_course_then_grading_goes_on(tmp_path):
    root = make_course(tmp_path)
    src, gdir = course_sources(root)
    words = src.solved("2_words")
    printing = next(i for i, c in enumerate(words.cells) if c.source == 'print(shout("done"))')
    words.cells[printing].outputs = [
        nbformat.v4.new_output("stream", name="stdout", text="DONE! in ann's own run\n")
    ]
    folder = gdir.submitted / "ann" / "a3"
    folder.mkdir(parents=True)
    (folder / "1_sums.ipynb").write_bytes(_dump(src.solved("1_sums")))
    (folder / "2_words.ipynb").write_bytes(_dump(words))
    # the course breaks: a given cell that fails where grading runs it
    solution = root / "solutions" / "a3" / "2_words.ipynb"
    good = solution.read_bytes()
    broken = nbformat.reads(good.decode(), as_version=4)
    meta = {"grade": False, "solution": False, "locked": True, "grade_id": "given_broken",
            "schema_version": 3}  # fmt: skip
    broken.cells.insert(2, nbformat.v4.new_code_cell("raise OSError(5)", metadata={
        "nbgrader": meta}))  # fmt: skip
    solution.write_text(nbformat.writes(broken))
    env = {k: v for k, v in ENV.items() if k != "A3_CANARY_RECORDS"}  # its own canary
    cmd = [sys.executable, "-m", "autograder", "--root", str(root), "grade"]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "THE CANARY FAILED" in proc.stdout
    assert "2_words given_broken raised OSError" in proc.stdout
    assert not (root / "autograder" / "out" / "grades.csv").exists()
    assert student_record(gdir.root, "ann") is None
    # fixed: the canary passes and the student is graded
    solution.write_bytes(good)
    out = autograder(root, "grade", env=env).stdout
    assert "canary: full marks" in out
    row = grades(root)[("ann", "2_words")]
    assert (row["autograded"], row["flags"]) == ("2", "ok")
    graded = notebooks.read(gdir.autograded / "ann" / "a3" / "2_words.ipynb")
    (framed,) = graded.cells[printing].outputs  # not run: ann's own output, in the grader's frame
    own = framed.data["text/plain"].split("\n")[1:3]
    assert own == ["DONE! in ann's own run", f"[{ownrun.END}]"]
    run = student_record(gdir.root, "ann")["worker"]["notebooks"]["2_words"]
    assert run["skipped"] == [printing]
    # unchanged: neither the canary nor ann is graded again
    again = autograder(root, "grade", "--regrade", env=env).stdout
    assert "canary:" not in again and "ann" in again
