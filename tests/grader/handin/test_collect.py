"""`make collect`: an LMS download is imported per student, and a hostile upload can only ever
cost its own student. Every attack is a zip crafted here with `zipfile`; the tests call
`autograder.handin.collect.collect` on a temporary copy of the tiny course (and once the real CLI)
and assert the files written (paths, modes, contents), the other students and the report."""

from __future__ import annotations

import csv
import io
import re
import stat
import struct
import subprocess
import sys
import time
import tracemalloc
import warnings
import zipfile
import zlib
from pathlib import Path

import nbformat
import pytest

from autograder.course import config, nbgrader_dir
from autograder.course.spec import spec_of
from autograder.handin import intake
from autograder.handin.collect import LMS_FILE, CollectError, ZipLimits, collect, match
from autograder.reports import report
from autograder.reports.rows import Row
from helpers import ENV, FIXTURE, ROOT, course_sources, make_course

MiB = 1024 * 1024
# The tiny course's pattern, also reading uploaded archives (as the repository's course.toml).
TOML = (FIXTURE / "course.toml").read_text().replace(r"\.ipynb)$", r"\.(?:ipynb|zip))$")


@pytest.fixture
def course(tmp_path) -> config.Course:
    assert r"\.(?:ipynb|zip))$" in TOML
    return config.load(make_course(tmp_path / "course", toml=TOML))


def submitted(course: config.Course) -> Path:
    return course.class_dir / "submitted"


def nb(tag: str) -> bytes:
    """A notebook's bytes, told apart by ``tag`` (collect never parses them)."""
    return f'{{"cells": [], "metadata": {{"tag": "{tag}"}}, "nbformat": 4}}'.encode()


def member(name: str, mode: int) -> zipfile.ZipInfo:
    """A member whose Unix mode (file type and permissions) is ``mode``."""
    info = zipfile.ZipInfo(name)
    info.create_system = 3
    info.external_attr = mode << 16
    return info


def make_zip(path: Path | io.BytesIO, members: list, mode: str = "w") -> Path | io.BytesIO:
    """Write ``members``, a list of (name or ZipInfo, bytes), to the zip ``path``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # duplicate names are on purpose
        with zipfile.ZipFile(path, mode, zipfile.ZIP_DEFLATED) as zf:
            for name, data in members:
                zf.writestr(name, data)
    return path


def zip_bytes(members: list) -> bytes:
    """A zip of ``members`` (as :func:`make_zip`), to upload inside the download."""
    return make_zip(io.BytesIO(), members).getvalue()


def make_bomb(path: Path, *names: str, size_mb: int = 1024) -> Path:
    """A zip whose members ``names`` each inflate ~1 KB per MiB into ``size_mb`` MiB of zeros
    (1 MB -> 1 GB by default), their headers declaring the true size and CRC. zipfile cannot
    add a ready deflate stream: the stream is stored, then the method, CRC and size patched."""
    zeros = bytes(MiB)
    comp = zlib.compressobj(9, zlib.DEFLATED, -15)
    block = comp.compress(zeros) + comp.flush(zlib.Z_FULL_FLUSH)  # same bytes every MiB
    crc = 0
    for _ in range(size_mb):
        crc = zlib.crc32(zeros, crc)
    stream = block * size_mb + comp.flush()
    with zipfile.ZipFile(path, "w") as zf:
        for name in names:
            zf.writestr(name, stream)
        local = [info.header_offset for info in zf.infolist()]
    data = bytearray(path.read_bytes())
    (entry,) = struct.unpack("<I", data[-6:-2])  # the central directory's offset
    central = []
    for _ in names:
        central.append(entry)
        entry += 46 + sum(struct.unpack("<3H", data[entry + 28 : entry + 34]))  # + its names
    for method_at in [at + 8 for at in local] + [at + 10 for at in central]:
        struct.pack_into("<H", data, method_at, zipfile.ZIP_DEFLATED)
        struct.pack_into("<I", data, method_at + 6, crc)
        struct.pack_into("<I", data, method_at + 14, size_mb * MiB)
    path.write_bytes(bytes(data))
    return path


def run(course: config.Course, archive: Path, **kw) -> tuple[list[str], str]:
    """(students changed, the log) of one ``collect``."""
    lines: list[str] = []
    changed = collect(course, archive, log=lines.append, **kw)
    return changed, "\n".join(lines)


def files(folder: Path) -> dict[str, tuple[int, bytes]]:
    """Every file under ``folder``: relative path -> (permission bits, content)."""
    return {
        str(p.relative_to(folder)): (stat.S_IMODE(p.lstat().st_mode), p.read_bytes())
        for p in sorted(folder.rglob("*"))
        if p.is_file() or p.is_symlink()
    }


def everything(root: Path) -> dict[str, tuple[int, bytes]]:
    """Every file of the course except the submissions and their backups."""
    keep = ("autograder/class/submitted", "autograder/class/backups")
    return {k: v for k, v in files(root).items() if not k.startswith(keep)}


def seed(course: config.Course, student: str, name: str, data: bytes) -> Path:
    """A submission from an earlier collect."""
    path = submitted(course) / student / "a3" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


# ---------------------------------------------------------------------------------------------
# What an honest download gives.


def test_collects_each_student_into_their_folder(course, tmp_path):
    archive = make_zip(
        tmp_path / "download.zip",
        [
            ("doejane_123_456_1_sums.ipynb", nb("jane 1")),
            ("doejane_123_456_2_words.ipynb", nb("jane 2")),
            ("smithbob_LATE_124_457_1_sums-1.ipynb", nb("bob 1")),
            (
                "leeann_125_458_work.zip",
                zip_bytes([("hw/", b""), ("hw/1_sums.ipynb", nb("ann 1"))]),
            ),
            ("somebody_else.ipynb", nb("no name")),
        ],
    )
    changed, log = run(course, archive)
    assert changed == ["doejane", "leeann", "smithbob"]
    assert files(submitted(course)) == {
        "doejane/a3/1_sums.ipynb": (0o644, nb("jane 1")),
        "doejane/a3/2_words.ipynb": (0o644, nb("jane 2")),
        "leeann/a3/1_sums.ipynb": (0o644, nb("ann 1")),
        "smithbob/a3/1_sums-1.ipynb": (0o644, nb("bob 1")),
        "smithbob/a3/lms.json": (0o644, b'{\n "late": [\n  "1_sums-1.ipynb"\n ]\n}\n'),
    }
    for folder in ("doejane", "doejane/a3", "leeann/a3", "smithbob/a3"):
        assert stat.S_IMODE((submitted(course) / folder).stat().st_mode) == 0o755
    assert log.splitlines() == [
        "collected 3 student(s) from download.zip:",
        "  doejane (changed): 1_sums.ipynb, 2_words.ipynb",
        "  leeann (changed): 1_sums.ipynb",
        "  smithbob (changed): 1_sums-1.ipynb (late: 1_sums-1.ipynb)",
        "skipped 2 member(s):",
        "  somebody_else.ipynb: name does not match [collect] pattern in course.toml",
        "  leeann_125_458_work.zip > hw/: a folder",
        "next: make grade",
    ]
    # the same download again: backed up first, nothing changed, nothing left behind
    changed, log = run(course, archive)
    assert changed == [] and "  doejane (unchanged): 1_sums.ipynb, 2_words.ipynb" in log
    (backup,) = (course.class_dir / "backups").glob("submitted-*")
    assert log.startswith(f"backed up {submitted(course)} to {backup}")
    assert files(backup) == files(submitted(course))
    assert sorted(p.name for p in submitted(course).iterdir()) == ["doejane", "leeann", "smithbob"]


def test_late_files_and_resubmissions_as_grading_reads_them(course, tmp_path):
    """Canvas's ``LATE_`` reaches grades.csv as the flag ``late`` of the notebook graded from
    that file (and only that one); Canvas's ``-1``, ``-2`` resubmission names are read as the
    notebook itself, not flagged ``renamed``; with two tries of one notebook the later counts."""
    src, _ = course_sources(course.root)
    solved = {name: nbformat.writes(src.solved(name)).encode() for name in src.released}
    archive = make_zip(
        tmp_path / "download.zip",
        [
            ("doejane_LATE_123_456_1_sums.ipynb", solved["1_sums"]),
            ("doejane_123_456_2_words.ipynb", solved["2_words"]),
            ("smithbob_124_457_1_sums-1.ipynb", solved["1_sums"]),
            ("smithbob_124_457_2_words-2.ipynb", solved["2_words"]),
            ("leeann_125_458_1_sums.ipynb", solved["1_sums"]),
            ("leeann_LATE_125_459_1_sums-2.ipynb", solved["1_sums"]),
        ],
    )
    _, log = run(course, archive)
    assert "  doejane (changed): 1_sums.ipynb, 2_words.ipynb (late: 1_sums.ipynb)" in log
    assert not (submitted(course) / "smithbob" / "a3" / LMS_FILE).exists()
    gdir = nbgrader_dir.real(course)
    specs = {name: spec_of(nb, name) for name, nb in src.released.items()}
    rows, seen = [], {}
    for student in ("doejane", "leeann", "smithbob"):
        found, _ = intake.read_student(gdir, student, src.released, specs, scan=False)
        seen[student] = found
        for name, entry in found.notebooks.items():
            rows.append(Row(student, name, flags=entry.flags, file=entry.file))
    entries = {(s, n): e for s, f in seen.items() for n, e in f.notebooks.items()}
    assert entries[("smithbob", "1_sums")].file == "1_sums-1.ipynb"
    assert entries[("smithbob", "2_words")].file == "2_words-2.ipynb"
    assert entries[("leeann", "1_sums")].file == "1_sums-2.ipynb"
    assert "1_sums.ipynb: 1_sums-2.ipynb is later, graded instead" in seen["leeann"].notes
    report.write_csv(rows, tmp_path / "grades.csv")
    with open(tmp_path / "grades.csv", newline="") as fh:
        flags = {(r["student"], r["notebook"]): r["flags"] for r in csv.DictReader(fh)}
    assert flags == {
        ("doejane", "1_sums"): "late",
        ("doejane", "2_words"): "ok",
        ("leeann", "1_sums"): "late",
        ("leeann", "2_words"): "missing",
        ("smithbob", "1_sums"): "ok",  # not renamed
        ("smithbob", "2_words"): "ok",
    }
    assert "L late" in report.flag_legend(("late",))


def test_the_patterns_late_group_or_a_late_piece_of_the_name():
    plain = re.compile((FIXTURE / "course.toml").read_text().split("pattern = '")[1].split("'")[0])
    grouped = re.compile(plain.pattern.replace("(?:LATE_)?", "(?P<late>LATE_)?"))
    assert "(?P<late>" in grouped.pattern
    for pattern in (plain, grouped):
        assert match(pattern, "doejane_LATE_1_2_1_sums.ipynb") == ("doejane", "1_sums.ipynb", True)
        assert match(pattern, "d/latejane_1_2_LATE_x.ipynb") == ("latejane", "LATE_x.ipynb", False)


def test_replaces_only_the_students_in_the_zip(course, tmp_path):
    seed(course, "doejane", "old.ipynb", nb("jane old"))
    seed(course, "smithbob", "1_sums.ipynb", nb("bob old"))
    kept = seed(course, "leeann", "1_sums.ipynb", nb("ann old"))
    before = kept.stat().st_mtime_ns
    archive = make_zip(
        tmp_path / "download.zip",
        [
            ("doejane_1_2_1_sums.ipynb", nb("jane new")),
            ("smithbob_3_4_1_sums.ipynb", nb("bob old")),  # as collected last time
            ("leeann_5_6_2_words.ipynb", b"x" * 2000),  # refused: too large
        ],
    )
    changed, log = run(course, archive, limits=ZipLimits(file_bytes=1000))
    assert changed == ["doejane"]
    assert files(submitted(course)) == {
        "doejane/a3/1_sums.ipynb": (0o644, nb("jane new")),  # old.ipynb is gone
        "leeann/a3/1_sums.ipynb": (0o644, nb("ann old")),
        "smithbob/a3/1_sums.ipynb": (0o644, nb("bob old")),
    }
    assert kept.stat().st_mtime_ns == before
    assert "nothing readable for leeann: their earlier files (if any) are kept" in log
    (backup,) = (course.class_dir / "backups").glob("submitted-*")
    assert (backup / "doejane" / "a3" / "old.ipynb").read_bytes() == nb("jane old")


# ---------------------------------------------------------------------------------------------
# The attacks: each costs only the attacker's own files.


def test_an_upload_cannot_name_another_student(course, tmp_path):
    bob = seed(course, "smithbob", "1_sums.ipynb", nb("bob"))
    root = course.root
    before = everything(root)
    nested = zip_bytes(
        [
            ("smithbob_3_4_1_sums.ipynb", nb("as bob")),  # a name the pattern would match
            ("../smithbob/a3/1_sums.ipynb", nb("climbs")),
            ("/tmp/abs/2_words.ipynb", nb("absolute")),
            ("newstudent_7_8_1_sums.ipynb", nb("creates")),
            ("deeper.zip", zip_bytes([("smithbob_3_4_2_words.ipynb", nb("deeper"))])),
            ("__MACOSX/._1_sums.ipynb", b"junk"),
            ("notes.txt", b"hello"),
        ]
    )
    archive = make_zip(tmp_path / "download.zip", [("doejane_1_2_work.zip", nested)])
    changed, log = run(course, archive)
    assert changed == ["doejane"]
    assert files(submitted(course)) == {
        "doejane/a3/1_sums.ipynb": (0o644, nb("climbs")),  # by base name, in her folder
        "doejane/a3/2_words.ipynb": (0o644, nb("absolute")),
        "doejane/a3/newstudent_7_8_1_sums.ipynb": (0o644, nb("creates")),
        "doejane/a3/smithbob_3_4_1_sums.ipynb": (0o644, nb("as bob")),
        "smithbob/a3/1_sums.ipynb": (0o644, nb("bob")),
    }
    assert bob.read_bytes() == nb("bob") and everything(root) == before
    assert not (tmp_path / "tmp").exists() and not Path("/tmp/abs/2_words.ipynb").exists()
    assert "  doejane_1_2_work.zip > deeper.zip: an archive inside an archive (not opened)" in log
    assert "  doejane_1_2_work.zip > __MACOSX/._1_sums.ipynb: file name '._1_sums.ipynb'" in log
    assert "  doejane_1_2_work.zip > notes.txt: not a notebook (.ipynb)" in log


def test_outer_members_that_break_the_rules_are_skipped(course, tmp_path):
    root = course.root
    before = everything(root)
    archive = make_zip(
        tmp_path / "download.zip",
        [
            ("../evil.ipynb", nb("evil")),
            ("../doejane_1_2_2_words.ipynb", nb("climbs")),
            ("/etc/doejane_1_2_2_words.ipynb", nb("absolute")),
            (".._1_2_1_sums.ipynb", nb("dot-dot student")),
            ("-rf_1_2_1_sums.ipynb", nb("dash student")),
            ("doejane_1_2_.hidden.ipynb", nb("hidden file")),
            ("doejane_1_2_" + "x" * 250 + ".ipynb", nb("long")),
            ("doejane_1_2_notes.txt", b"not a notebook"),
            (member("doejane_1_2_link.ipynb", stat.S_IFLNK | 0o777), b"/etc/passwd"),
            (member("doejane_1_2_dev.ipynb", stat.S_IFCHR | 0o666), b""),
            (member("doejane_1_2_dir.ipynb", stat.S_IFDIR | 0o755), b""),
            (member("doejane_1_2_1_sums.ipynb", stat.S_IFREG | 0o6777), nb("setuid")),
        ],
    )
    changed, log = run(course, archive)
    assert changed == ["doejane"]
    assert files(submitted(course)) == {"doejane/a3/1_sums.ipynb": (0o644, nb("setuid"))}
    assert sorted(p.name for p in submitted(course).iterdir()) == ["doejane"]
    assert everything(root) == before and not (tmp_path / "evil.ipynb").exists()
    unsafe = "unsafe path (absolute, '..' or backslashes)"
    for line in [
        "skipped 11 member(s):",
        f"  ../evil.ipynb: {unsafe}",
        f"  ../doejane_1_2_2_words.ipynb: {unsafe}",
        f"  /etc/doejane_1_2_2_words.ipynb: {unsafe}",
        "  .._1_2_1_sums.ipynb: student id '..' not usable: letters, digits, ._@+- only",
        "  -rf_1_2_1_sums.ipynb: student id '-rf' not usable",
        "  doejane_1_2_.hidden.ipynb: file name '.hidden.ipynb' not usable",
        "x.ipynb' not usable (a folder, hidden or too long)",
        "  doejane_1_2_notes.txt: name does not match [collect] pattern",
        "  doejane_1_2_link.ipynb: a symbolic link",
        "  doejane_1_2_dev.ipynb: a device or special file",
        "  doejane_1_2_dir.ipynb: a folder",
    ]:
        assert line in log


def test_a_zip_bomb_is_refused_quickly_in_little_memory(course, tmp_path):
    archive = make_bomb(tmp_path / "download.zip", "doejane_1_2_2_words.ipynb")
    inner = make_bomb(tmp_path / "inner.zip", "1_sums.ipynb")
    make_zip(
        archive,
        [
            ("doejane_1_2_1_sums.ipynb", nb("jane")),
            ("smithbob_3_4_work.zip", inner.read_bytes()),
            ("smithbob_3_4_2_words.ipynb", nb("bob")),
        ],
        mode="a",
    )
    assert archive.stat().st_size < 3 * MiB
    with zipfile.ZipFile(archive) as zf:  # what the headers declare
        assert zf.getinfo("doejane_1_2_2_words.ipynb").file_size == 1024 * MiB
    tracemalloc.start()
    start = time.perf_counter()
    try:
        changed, log = run(course, archive)
        seconds = time.perf_counter() - start
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    print(f"\n1 MB -> 1 GB bombs refused in {seconds:.2f} s, peak {peak / MiB:.1f} MiB traced")
    assert seconds < 15 and peak < 16 * MiB  # ~0.3 s and ~3 MiB here: reading stops at 50 MB
    assert changed == ["doejane", "smithbob"]
    assert files(submitted(course)) == {
        "doejane/a3/1_sums.ipynb": (0o644, nb("jane")),
        "smithbob/a3/2_words.ipynb": (0o644, nb("bob")),
    }
    assert "  doejane_1_2_2_words.ipynb: over 50 MB uncompressed (per file)" in log
    assert "  smithbob_3_4_work.zip > 1_sums.ipynb: over 50 MB uncompressed (per file)" in log
    assert not list(submitted(course).glob(".*"))  # nothing half-read left behind


def test_one_student_cannot_spend_the_budget_of_the_others(course, tmp_path):
    """A 2 MB upload of 41 files of 50 MB of zeros (over 2 GB, the old budget of the whole
    download) costs its student's budget only: the students after them are collected in full."""
    names = [f"{i:02}.ipynb" for i in range(41)]
    upload = make_bomb(tmp_path / "evil.zip", *names, size_mb=50).read_bytes()
    archive = make_zip(
        tmp_path / "download.zip",
        [
            ("evil_1_2_work.zip", upload),
            ("doejane_3_4_1_sums.ipynb", nb("jane 1")),
            ("doejane_3_4_2_words.ipynb", nb("jane 2")),
            (
                "smithbob_5_6_work.zip",
                zip_bytes([("1_sums.ipynb", nb("bob 1")), ("2_words.ipynb", nb("bob 2"))]),
            ),
        ],
    )
    assert len(upload) < 3 * MiB and archive.stat().st_size < 3 * MiB
    start = time.perf_counter()
    changed, log = run(course, archive)
    seconds = time.perf_counter() - start
    print(f"\n{len(upload):,} byte upload of 41 x 50 MB: collected in {seconds:.2f} s")
    assert seconds < 30  # ~1 s here: 300 MB inflated, 250 MB written
    assert changed == ["doejane", "evil", "smithbob"]
    assert files(submitted(course) / "doejane") == {
        "a3/1_sums.ipynb": (0o644, nb("jane 1")),
        "a3/2_words.ipynb": (0o644, nb("jane 2")),
    }
    assert files(submitted(course) / "smithbob") == {
        "a3/1_sums.ipynb": (0o644, nb("bob 1")),
        "a3/2_words.ipynb": (0o644, nb("bob 2")),
    }
    # evil's budget (300 MB) holds their 2 MB upload and five files; the sixth breaks it
    kept = sorted((submitted(course) / "evil" / "a3").iterdir())
    assert [p.name for p in kept] == names[:5]
    assert all(p.stat().st_size == 50 * MiB for p in kept)
    assert (submitted(course) / "evil" / "a3" / "00.ipynb").read_bytes() == bytes(50 * MiB)
    lines = log.splitlines()
    spent = "not read: the budget of 300 MB per student is spent"
    for line in [
        "  doejane (changed): 1_sums.ipynb, 2_words.ipynb",
        "  smithbob (changed): 1_sums.ipynb, 2_words.ipynb",
        "over the budget of 300 MB and 2,000 members per student (the rest skipped, see below):",
        "  evil: collected in part",
        "skipped 36 member(s):",
        "  evil_1_2_work.zip > 05.ipynb: over the budget of 300 MB uncompressed per student",
        *[f"  evil_1_2_work.zip > {name}: {spent}" for name in names[6:]],
    ]:
        assert line in lines
    assert "nothing readable" not in log and log.endswith("next: make grade")


def test_byte_budgets_are_per_student(course, tmp_path):
    seed(course, "late", "1_sums.ipynb", nb("late old"))
    archive = make_zip(
        tmp_path / "download.zip",
        [(f"big_1_2_{i}_sums.ipynb", b"x" * 400) for i in range(4)]
        + [(f"s{i}_1_2_1_sums.ipynb", b"x" * 400) for i in range(3)]
        + [("late_1_2_work.zip", zip_bytes([("1_sums.ipynb", b"y" * 2000)]))],
    )
    changed, log = run(course, archive, limits=ZipLimits(student_bytes=1000))
    assert changed == ["big", "s0", "s1", "s2"]
    assert sorted(files(submitted(course))) == [
        "big/a3/0_sums.ipynb",
        "big/a3/1_sums.ipynb",
        "late/a3/1_sums.ipynb",
        "s0/a3/1_sums.ipynb",
        "s1/a3/1_sums.ipynb",
        "s2/a3/1_sums.ipynb",
    ]
    assert (submitted(course) / "late/a3/1_sums.ipynb").read_bytes() == nb("late old")
    for line in [
        "over the budget of 1,000 bytes and 2,000 members per student (the rest skipped, see"
        " below):",
        "  big: collected in part",
        "  late: NOT COLLECTED: their earlier files (if any) are kept",
        "skipped 3 member(s):",
        "  big_1_2_2_sums.ipynb: over the budget of 1,000 bytes uncompressed per student",
        "  big_1_2_3_sums.ipynb: not read: the budget of 1,000 bytes per student is spent",
        "  late_1_2_work.zip > 1_sums.ipynb: over the budget of 1,000 bytes uncompressed per"
        " student",
    ]:
        assert line in log.splitlines()
    assert "nothing readable" not in log


def test_member_budgets_are_per_student(course, tmp_path):
    seed(course, "many", "1_sums.ipynb", nb("many old"))
    notebooks = [(f"{i}.ipynb", nb(str(i))) for i in range(8)]
    archive = make_zip(
        tmp_path / "download.zip",
        [(f"flood_1_2_{i}.ipynb", nb(f"flood {i}")) for i in range(7)]
        + [
            ("many_1_2_work.zip", zip_bytes(notebooks[:6])),  # more than a whole budget
            ("spammer_1_2_1_sums.ipynb", nb("spam")),
            ("spammer_1_2_work.zip", zip_bytes(notebooks[:5])),  # fits, but only in part
            ("doejane_3_4_work.zip", zip_bytes(notebooks[:4])),  # 5 members: the budget
            ("smithbob_5_6_1_sums.ipynb", nb("bob 1")),
            ("smithbob_5_6_2_words.ipynb", nb("bob 2")),
        ],
    )
    changed, log = run(course, archive, limits=ZipLimits(student_members=5))
    assert changed == ["doejane", "flood", "smithbob", "spammer"]
    assert sorted(files(submitted(course))) == [
        *[f"doejane/a3/{i}.ipynb" for i in range(4)],
        *[f"flood/a3/{i}.ipynb" for i in range(5)],
        "many/a3/1_sums.ipynb",
        "smithbob/a3/1_sums.ipynb",
        "smithbob/a3/2_words.ipynb",
        "spammer/a3/0.ipynb",
        "spammer/a3/1.ipynb",
        "spammer/a3/1_sums.ipynb",
        "spammer/a3/2.ipynb",
    ]
    assert (submitted(course) / "many/a3/1_sums.ipynb").read_bytes() == nb("many old")
    over = "not read: over the budget of 5 members per student"
    for line in [
        "over the budget of 300 MB and 5 members per student (the rest skipped, see below):",
        "  flood: collected in part",
        "  many: NOT COLLECTED: their earlier files (if any) are kept",
        "  spammer: collected in part",
        "skipped 5 member(s):",
        f"  flood_1_2_5.ipynb: {over}",
        f"  flood_1_2_6.ipynb: {over}",
        "  many_1_2_work.zip: holds 6 members: over the budget of 5 members per student (not"
        " opened)",
        f"  spammer_1_2_work.zip > 3.ipynb: {over}",
        f"  spammer_1_2_work.zip > 4.ipynb: {over}",
    ]:
        assert line in log.splitlines()


def test_a_lying_index_and_a_full_disk(course, tmp_path):
    # an index larger than its declared member count (zipfile would read all of it)
    lying = bytearray(zip_bytes([(f"{i}.ipynb", b"y") for i in range(40)]))
    struct.pack_into("<HH", lying, len(lying) - 14, 1, 1)  # the end record: 1 member
    archive = make_zip(tmp_path / "lying.zip", [("late_1_2_work.zip", bytes(lying))])
    with pytest.raises(CollectError):
        run(course, archive)
    assert not (submitted(course) / "late").exists()
    # too little disk left: the collect stops and writes nothing
    seed(course, "doejane", "1_sums.ipynb", nb("jane old"))
    before = files(submitted(course))
    archive = make_zip(tmp_path / "download.zip", [("doejane_1_2_1_sums.ipynb", nb("new"))])
    with pytest.raises(CollectError, match="disk holding submitted/ has .* nothing was collected"):
        run(course, archive, limits=ZipLimits(disk_reserve=1 << 60))
    assert files(submitted(course)) == before
    assert sorted(p.name for p in submitted(course).iterdir()) == ["doejane"]


def test_duplicates_and_bad_members_in_one_upload_do_not_stop_the_class(course, tmp_path):
    messy = zip_bytes(
        [
            ("1_sums.ipynb", nb("first")),
            ("1_sums.ipynb", nb("second")),
            ("../1_sums.ipynb", nb("third")),
        ]
    )
    damaged = bytearray(zip_bytes([("2_words.ipynb", bytes(range(256)) * 4)]))
    damaged[damaged.index(b"2_words.ipynb") + 20] ^= 0xFF  # compressed data: fails its CRC
    archive = make_zip(
        tmp_path / "download.zip",
        [
            ("doejane_1_2_1_sums.ipynb", nb("jane early")),
            ("doejane_1_3_1_sums.ipynb", nb("jane late")),
            ("smithbob_3_4_messy.zip", messy),
            ("leeann_5_6_broken.zip", bytes(damaged)),
            ("leeann_5_6_1_sums.ipynb", nb("ann")),
            ("kimlee_7_8_1_sums.ipynb", nb("kim")),
            ("kimlee_7_8_1_sums.ipynb", nb("kim again")),  # the very same name twice
        ],
    )
    changed, log = run(course, archive)
    assert changed == ["doejane", "kimlee", "leeann", "smithbob"]
    assert files(submitted(course)) == {
        "doejane/a3/1_sums.ipynb": (0o644, nb("jane late")),
        "kimlee/a3/1_sums.ipynb": (0o644, nb("kim again")),
        "leeann/a3/1_sums.ipynb": (0o644, nb("ann")),
        "smithbob/a3/1_sums.ipynb": (0o644, nb("third")),
    }
    later = "replaced by a later copy in the zip"
    for line in [
        f"  doejane_1_2_1_sums.ipynb: {later}: doejane_1_3_1_sums.ipynb",
        f"  smithbob_3_4_messy.zip > 1_sums.ipynb: {later}: smithbob_3_4_messy.zip > 1_sums.ipynb",
        f"  smithbob_3_4_messy.zip > 1_sums.ipynb: {later}: smithbob_3_4_messy.zip > ../1_sums",
        f"  kimlee_7_8_1_sums.ipynb: {later}: kimlee_7_8_1_sums.ipynb",
        "  leeann_5_6_broken.zip > 2_words.ipynb: unreadable: ",
    ]:
        assert line in log


def test_nothing_collected_is_an_error(course, tmp_path):
    seed(course, "doejane", "1_sums.ipynb", nb("jane"))
    before = files(submitted(course))
    text = tmp_path / "download.zip"
    text.write_text("not a zip")
    empty = make_zip(tmp_path / "empty.zip", [])
    unmatched = make_zip(tmp_path / "unmatched.zip", [("1_sums.ipynb", nb("anonymous"))])
    refused = make_zip(tmp_path / "refused.zip", [("doejane_1_2_.hidden.ipynb", nb("hidden"))])
    for archive, why in [
        (tmp_path / "missing.zip", "not found"),
        (text, "is not a readable zip file"),
        (empty, "is an empty zip file"),
        (unmatched, r"no member of unmatched.zip matches \[collect\] pattern"),
        (refused, "no member of refused.zip matches"),
    ]:
        with pytest.raises(CollectError, match=why):
            run(course, archive)
    assert files(submitted(course)) == before
    assert not (course.class_dir / "backups").exists()  # nothing to write, nothing backed up
    too_big = make_zip(tmp_path / "big.zip", [("doejane_1_2_2_words.ipynb", b"x" * 2000)])
    with pytest.raises(CollectError, match="no member of big.zip could be read"):
        run(course, too_big, limits=ZipLimits(file_bytes=1000))
    assert files(submitted(course)) == before


def test_the_command_line(course, tmp_path):
    archive = make_zip(
        tmp_path / "download.zip",
        [("doejane_1_2_1_sums.ipynb", nb("jane")), ("../evil.ipynb", nb("evil"))],
    )
    text = tmp_path / "text.zip"
    text.write_text("not a zip")

    def cli(path: Path) -> subprocess.CompletedProcess:
        cmd = [sys.executable, "-m", "autograder", "--root", str(course.root), "collect", str(path)]
        return subprocess.run(cmd, cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=60)

    ok = cli(archive)
    assert ok.returncode == 0, ok.stderr
    assert (
        "collected 1 student(s) from download.zip:\n  doejane (changed): 1_sums.ipynb" in ok.stdout
    )
    assert "  ../evil.ipynb: unsafe path" in ok.stdout
    assert ok.stdout.rstrip().endswith("next: make grade")
    assert files(submitted(course)) == {"doejane/a3/1_sums.ipynb": (0o644, nb("jane"))}
    failed = cli(text)
    assert failed.returncode == 1 and "is not a readable zip file" in failed.stderr
