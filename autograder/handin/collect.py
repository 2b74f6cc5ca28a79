"""``make collect ZIP=...``: import an LMS download zip into ``autograder/class/submitted/``,
safely.

Each member of the download (the OUTER zip) is matched against ``[collect] pattern`` of
``course.toml`` as ``"/" + its path in the zip`` (the leading ``/`` lets the documented
``'.*/(?P<student_id>...)'`` match a member at the top of the zip). The pattern's groups say
where it goes: ``submitted/<student_id>/<assignment>/<file_id>``. The default reads Canvas's
names, ``<login>_[LATE_]<user id>_<submission id>_<file>``::

    doejane_12345_678901_1_gru.ipynb   ->  submitted/doejane/a3/1_gru.ipynb
    doejane_12345_678901_work.zip      ->  its notebooks, into submitted/doejane/a3/

A resubmission renamed by the LMS (``1_gru-1.ipynb``) is kept under that name; ``make grade``
reads it as ``1_gru`` (``intake.resubmission``: Canvas's own names are no renaming, no flag).

Late files: Canvas writes ``LATE_`` into the name of a file handed in after the due date (its
own judgment, extensions included). The pattern's optional group ``late``, or else a ``LATE``
piece of the name before ``file_id``, marks a file late; the collect writes the late files'
names into the student's folder, ``submitted/<student>/<a>/lms.json`` (:data:`LMS_FILE`:
``{"late": ["1_gru.ipynb"]}``, only when a file is late), and ``make grade`` flags the
notebook graded from such a file ``late`` (grades.csv; no point is taken: the LMS applies its
own late policy to the grades it imports).

Uploads are hostile, so (the zip is read with :mod:`zipfile`, member by member):

- only the LMS names a student: ``student_id`` must be a usable id (``nbgrader_dir.STUDENT_ID``)
  and ``file_id`` a plain file name (no folder, not hidden, at most 200 bytes) ending in
  ``.ipynb`` or ``.zip``. A member path that is absolute or holds ``..`` is refused;
- an uploaded ``.zip`` is opened into its uploader's folder only: its ``.ipynb`` members go
  there by base name (checked like ``file_id``), the names inside it are never matched against
  the pattern, and archives inside it are not opened;
- budgets are per student (:class:`ZipLimits`): 50 MB per file, 300 MB and 2,000 members per
  student (their members in the download and in their own uploaded ``.zip`` files, the ``.zip``
  itself included), counted while decompressing, never from the sizes the zip declares, and
  kept whether the file is or not: a zip bomb is refused after 50 MB, in well under a second and
  a few MB of memory. A student past their budget loses only their own excess members (each
  reported, and the student named as over budget); every other student is collected in full.
  An uploaded ``.zip`` whose index declares more members than a whole budget is not opened;
- there is no download-wide budget: a download holds as many students as the class has (the
  LMS's doing, not an uploader's), and each one can cost at most their own budget, so a cap on
  the whole would only let early students starve later ones. Instead, as the disk's safety
  bound, a member is read only while the disk holding ``submitted/`` has 1 GB free beyond a
  whole student's budget; below that the collect stops and writes nothing (CollectError);
- nothing is written outside ``submitted/``; files get mode 0644 and folders 0755 whatever the
  zip says; links, folders, devices and encrypted members are skipped;
- a member that breaks a rule is skipped and reported, and the rest of the class is collected.
  When a student has the same file name twice, the later readable copy in the zip wins (the
  zip's order is the LMS's; the earlier copy is reported as replaced).

The report lists, per student, what was collected, then the students over their budget (those
collected in part and those not collected at all), then every skipped member and why: fixed
text naming the member as the download names it, never a file's content. The command fails
(exit 1, :class:`CollectError`) only when nothing could be collected: not a zip, an empty one,
no member matching the pattern, every matching member refused, the disk too full.

Nothing is lost: ``submitted/`` is copied to ``backups/submitted-<time>/`` before anything is
written. Every student with a file collected has their ``<assignment>`` folder replaced as a
whole: the zip is read into a hidden folder inside ``submitted/`` first, then each student's
folder is swapped in by two renames (a crash leaves a student's folder old, new or absent, never
half-written; the backup holds the old one). Students not in the zip, and students whose every
file was refused, keep their folders as they were.
"""

from __future__ import annotations

import json
import lzma
import os
import re
import shutil
import stat
import struct
import tempfile
import time
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from autograder.course import nbgrader_dir
from autograder.course.config import Course
from autograder.course.nbgrader_dir import STUDENT_ID

MB = 1024 * 1024
CHUNK = MB  # bytes decompressed at a time
MAX_NAME_BYTES = 200
STAGING = ".collect-"  # prefix of the hidden folder the zip is read into (never a student id)
LMS_FILE = "lms.json"  # in a student's folder: what the LMS said of the files (late ones)
LATE = re.compile(r"(?:^|_)LATE(?:_|$)")  # Canvas: doejane_LATE_12345_678901_1_gru.ipynb
INDEX_BYTES_PER_MEMBER = 512  # a nested archive's index may not be larger than this per member
# What reading a damaged or hostile member raises (bz2 reports bad data as OSError).
READ_ERRORS = (
    zipfile.BadZipFile,
    zlib.error,
    lzma.LZMAError,
    EOFError,
    OSError,
    NotImplementedError,  # compression method
    RuntimeError,  # encryption
    ValueError,
)
_END = b"PK\x05\x06"  # a zip's end-of-central-directory record
_END64_LOCATOR = b"PK\x06\x07"
# an outer member to read, its student, file name, and whether the LMS marked it late
Planned = tuple[zipfile.ZipInfo, str, str, bool]


@dataclass(frozen=True)
class ZipLimits:
    """What ``collect`` reads at most, as decompressed. Per file, then per student: the bytes
    and members of one student's uploads (outer members and those of their uploaded ``.zip``).
    300 MB is the assignment's six notebooks each at the per-file limit (real ones are well
    under 1 MB); 2,000 members is far more than a zipped project folder of a few notebooks.
    ``disk_reserve``: what the disk of ``submitted/`` keeps free beyond one student's budget."""

    file_bytes: int = 50 * MB
    student_bytes: int = 300 * MB
    student_members: int = 2_000
    disk_reserve: int = 1024 * MB

    def budget_text(self) -> str:
        """The per-student budget as the report prints it."""
        return f"{size_text(self.student_bytes)} and {self.student_members:,} members per student"


class CollectError(Exception):
    """Nothing could be collected from the zip (the message says why)."""


class Refused(Exception):
    """One member is skipped; the message says why."""


@dataclass
class Spent:
    """What one student's members cost so far: bytes decompressed, members looked at."""

    bytes: int = 0
    members: int = 0


@dataclass
class Collection:
    """One ``collect`` under way: where it writes, what each student spent, what it read and
    what it skipped."""

    staging: Path
    assignment: str
    limits: ZipLimits
    spent: dict[str, Spent] = field(default_factory=dict)  # student -> their budget spent
    over_budget: set[str] = field(default_factory=set)  # students who lost members to it
    files: dict[str, dict[str, str]] = field(default_factory=dict)  # student -> file -> member
    named: set[str] = field(default_factory=set)  # students with a matching member
    late: dict[str, set[str]] = field(default_factory=dict)  # student -> files handed in late
    reading_late: bool = False  # whether the outer member being read was marked late
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (member, why)

    def student_dir(self, student: str) -> Path:
        return self.staging / student / self.assignment

    def over(self, student: str | None, why: str) -> Refused:
        """Refused for ``why``, ``student`` noted as over their budget."""
        if student is not None:
            self.over_budget.add(student)
        return Refused(why)

    def count_member(self, student: str) -> None:
        """One more member of ``student``: Refused past their budget of members."""
        spent = self.spent.setdefault(student, Spent())
        spent.members += 1
        if spent.members > self.limits.student_members:
            limit = self.limits.student_members
            raise self.over(student, f"not read: over the budget of {limit:,} members per student")

    def check_room(self, student: str) -> None:
        """Refused when ``student`` has no bytes of their budget left to read a member with."""
        if self.spent.setdefault(student, Spent()).bytes >= self.limits.student_bytes:
            limit = size_text(self.limits.student_bytes)
            raise self.over(student, f"not read: the budget of {limit} per student is spent")

    def charge(self, student: str, n: int) -> None:
        """``n`` more bytes decompressed for ``student``: Refused past their budget."""
        spent = self.spent.setdefault(student, Spent())
        spent.bytes += n
        if spent.bytes > self.limits.student_bytes:
            limit = size_text(self.limits.student_bytes)
            raise self.over(student, f"over the budget of {limit} uncompressed per student")


# ---------------------------------------------------------------------------------------------
# Names and member kinds.


def size_text(n: int) -> str:
    """``n`` bytes as the report prints it: ``50 MB`` or ``1,000 bytes``."""
    return f"{n // MB:,} MB" if n % MB == 0 else f"{n:,} bytes"


def show(name: str) -> str:
    """``name`` as the report prints it (control characters escaped)."""
    return name if name.isprintable() else ascii(name)


def plain_name(name: str) -> bool:
    """A file name that is safe as is: no folder, not hidden, printable, of bounded length."""
    return (
        bool(name)
        and name.isprintable()
        and not any(c in name for c in "/\\\0")
        and not name.startswith(".")
        and len(name.encode("utf-8", "surrogateescape")) <= MAX_NAME_BYTES
    )


def unsafe_path(path: str) -> bool:
    """An outer member path that no LMS writes: absolute, a drive, ``..``, backslashes, NUL."""
    parts = path.split("/")
    return (
        path.startswith("/")
        or "\\" in path
        or "\0" in path
        or re.match(r"[A-Za-z]:", path) is not None
        or ".." in parts
    )


def check_kind(info: zipfile.ZipInfo) -> None:
    """Refused unless ``info`` is a plain file: no folder, link, device or encryption."""
    mode = info.external_attr >> 16
    kind = stat.S_IFMT(mode)
    if info.is_dir() or stat.S_ISDIR(mode) or info.external_attr & 0x10:
        raise Refused("a folder")
    if stat.S_ISLNK(mode):
        raise Refused("a symbolic link")
    if kind and not stat.S_ISREG(mode):
        raise Refused("a device or special file")
    if info.flag_bits & 0x1:
        raise Refused("encrypted")


def match(pattern: re.Pattern, path: str) -> tuple[str, str, bool]:
    """(student, file name, late) that ``pattern`` reads from an outer member ``path``; Refused
    when it does not match or names no usable student or file. Late: the pattern's group
    ``late`` matched, or (without that group) the name before ``file_id`` has a ``LATE`` piece."""
    if unsafe_path(path):
        raise Refused("unsafe path (absolute, '..' or backslashes)")
    found = pattern.match("/" + path)
    student = found and found.group("student_id")
    name = found and found.group("file_id")
    if not (student and name):
        raise Refused("name does not match [collect] pattern in course.toml")
    if not STUDENT_ID.fullmatch(student):
        raise Refused(f"student id {student!r} not usable: letters, digits, ._@+- only")
    if not plain_name(name):
        raise Refused(f"file name {name!r} not usable (a folder, hidden or too long)")
    if "late" in pattern.groupindex:
        late = bool(found.group("late"))
    else:
        late = bool(LATE.search(("/" + path)[: found.start("file_id")].rsplit("/", 1)[-1]))
    return student, name, late


# ---------------------------------------------------------------------------------------------
# Reading members within the limits.


def read_chunk(src: IO[bytes]) -> bytes:
    """The next chunk of a member: Refused when the member is damaged."""
    try:
        return src.read(CHUNK)
    except READ_ERRORS as err:
        raise Refused(f"unreadable: {err}") from err


def open_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo) -> IO[bytes]:
    """``info`` opened for reading: Refused when its header is damaged or unsupported."""
    try:
        return zf.open(info)
    except READ_ERRORS as err:
        raise Refused(f"unreadable: {err}") from err


def copy_member(
    zf: zipfile.ZipFile, info: zipfile.ZipInfo, dest: Path, student: str, run: Collection
) -> None:
    """Decompress ``info`` into the new file ``dest`` (mode 0644), counting every byte against
    the per-file limit and ``student``'s budget as it comes: past one, stop and raise Refused
    (``dest`` removed; the bytes read stay spent, so refused files cannot cost unbounded time)."""
    limits = run.limits
    run.check_room(student)
    fd = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    try:
        with os.fdopen(fd, "wb") as out, open_member(zf, info) as src:
            size = 0
            while chunk := read_chunk(src):
                size += len(chunk)
                run.charge(student, len(chunk))
                if size > limits.file_bytes:
                    raise Refused(f"over {size_text(limits.file_bytes)} uncompressed (per file)")
                out.write(chunk)
        os.chmod(dest, 0o644)
    except BaseException:
        dest.unlink(missing_ok=True)
        raise


def store(
    zf: zipfile.ZipFile, info: zipfile.ZipInfo, student: str, name: str, where: str, run: Collection
) -> None:
    """Read one notebook into the student's staged folder; a later copy replaces an earlier."""
    part = run.staging / ".part"
    copy_member(zf, info, part, student, run)
    folder = run.student_dir(student)
    folder.mkdir(mode=0o755, parents=True, exist_ok=True)
    os.replace(part, folder / name)
    files = run.files.setdefault(student, {})
    if name in files:
        run.skipped.append((files[name], f"replaced by a later copy in the zip: {show(where)}"))
    files[name] = where
    late = run.late.setdefault(student, set())
    (late.add if run.reading_late else late.discard)(name)


def index_size(path: Path) -> tuple[int, int]:
    """(members, bytes) of a zip's index as its end record declares them, found the way
    :mod:`zipfile` finds it; Refused when there is none or it is zip64 (which no upload of a few
    notebooks needs)."""
    with open(path, "rb") as fh:
        size = fh.seek(0, os.SEEK_END)
        fh.seek(max(0, size - (22 + 65535 + 20)))
        tail = fh.read()
    start = len(tail) - 22
    if not (start >= 0 and tail[start : start + 4] == _END and tail.endswith(b"\0\0")):
        start = tail.rfind(_END)
    if start < 0 or len(tail) - start < 22:
        raise Refused("not a zip archive")
    if start >= 20 and tail[start - 20 : start - 16] == _END64_LOCATOR:
        raise Refused("a zip64 archive (not opened)")
    members, index_bytes = struct.unpack("<HI", tail[start + 10 : start + 16])
    return members, index_bytes


def check_index(archive: Path, student: str, run: Collection) -> None:
    """Refused when the uploaded ``archive``'s index is not worth reading: more members than a
    student's whole budget (it could never fit, and :mod:`zipfile` would parse all of them), or
    more bytes than its members need. An archive that fits is opened even when the student's
    budget runs out inside it: then only its excess members are skipped, one by one."""
    members, index_bytes = index_size(archive)
    limit = run.limits.student_members
    if members > limit:
        why = f"holds {members:,} members: over the budget of {limit:,} members per student"
        raise run.over(student, f"{why} (not opened)")
    if index_bytes > INDEX_BYTES_PER_MEMBER * max(members, 1):
        raise Refused(f"its index ({index_bytes:,} bytes) is too large for {members} member(s)")


def open_upload(
    zf: zipfile.ZipFile, info: zipfile.ZipInfo, student: str, where: str, run: Collection
) -> None:
    """An uploaded archive: its notebooks (by base name) into ``student``'s folder only."""
    archive = run.staging / ".archive"
    copy_member(zf, info, archive, student, run)
    try:
        unpack(archive, student, where, run, run.skipped)
    finally:
        archive.unlink(missing_ok=True)


def unpack(
    archive: Path, student: str, where: str, run: Collection, refused: list[tuple[str, str]]
) -> None:
    """The one reader of an uploaded zip, ``make collect``'s and Gradescope's: the notebooks of
    ``archive`` (a file on disk, handed in by ``student``; ``where``: its name in the report)
    into ``student``'s folder only, by base name (:func:`store_nested`), each member counted
    against their budget. A member refused is appended to ``refused`` as (where, why); Refused
    when the archive is not opened (its index, :func:`check_index`, or not a zip)."""
    check_index(archive, student, run)
    try:
        inner = zipfile.ZipFile(archive)
    except READ_ERRORS as err:
        raise Refused(f"not a readable zip archive: {err}") from err
    with inner:
        for member in inner.infolist():
            inner_where = f"{where} > {member.filename}"
            try:
                run.count_member(student)
                store_nested(inner, member, student, inner_where, run)
            except Refused as why:
                refused.append((inner_where, str(why)))


def store_nested(
    zf: zipfile.ZipFile, info: zipfile.ZipInfo, student: str, where: str, run: Collection
) -> None:
    """One member of an uploaded archive: a notebook is stored under its base name."""
    check_kind(info)
    name = re.split(r"[/\\]", info.filename)[-1]
    if name.lower().endswith(".zip"):
        raise Refused("an archive inside an archive (not opened)")
    if not name.endswith(".ipynb"):
        raise Refused("not a notebook (.ipynb)")
    if not plain_name(name):
        raise Refused(f"file name {name!r} not usable (hidden or too long)")
    store(zf, info, student, name, where, run)


# ---------------------------------------------------------------------------------------------
# The download as a whole.


def plan(zf: zipfile.ZipFile, pattern: re.Pattern, run: Collection) -> list[Planned]:
    """The outer members to read, as (info, student, file name); the others are skipped."""
    todo = []
    for info in zf.infolist():
        try:
            student, name, late = match(pattern, info.filename)
            run.named.add(student)
            run.count_member(student)
            check_kind(info)
            if not (name.endswith(".ipynb") or name.lower().endswith(".zip")):
                raise Refused("not a notebook (.ipynb) or an archive (.zip)")
            todo.append((info, student, name, late))
        except Refused as why:
            run.skipped.append((info.filename, str(why)))
    return todo


def check_disk(run: Collection) -> None:
    """CollectError when the disk of the staging folder has less free than its reserve and a
    whole student's budget: the collect stops before the disk fills, whoever is next."""
    free = shutil.disk_usage(run.staging).free
    need = run.limits.disk_reserve + run.limits.student_bytes
    if free < need:
        raise CollectError(
            f"the disk holding submitted/ has {free // MB:,} MB free, under the"
            f" {size_text(need)} a student may need with the {size_text(run.limits.disk_reserve)}"
            " it keeps free: nothing was collected (submitted/ is unchanged); free some space"
            " and run make collect again"
        )


def read_all(zf: zipfile.ZipFile, todo: list[Planned], run: Collection) -> None:
    """Read the planned members into the staging folder; a refused member is noted."""
    for info, student, name, late in todo:
        check_disk(run)
        run.reading_late = late
        try:
            if name.endswith(".ipynb"):
                store(zf, info, student, name, info.filename, run)
            else:
                open_upload(zf, info, student, info.filename, run)
        except Refused as why:
            run.skipped.append((info.filename, str(why)))
    run.reading_late = False
    for student, late in run.late.items():
        if late and student in run.files:
            record = json.dumps({"late": sorted(late)}, indent=1) + "\n"
            (run.student_dir(student) / LMS_FILE).write_text(record)
            os.chmod(run.student_dir(student) / LMS_FILE, 0o644)


def open_download(zip_path: Path) -> zipfile.ZipFile:
    """The LMS download, open: CollectError when it is missing, not a zip or empty."""
    if not zip_path.is_file():
        raise CollectError(f"{zip_path} not found")
    try:
        zf = zipfile.ZipFile(zip_path)
    except READ_ERRORS as err:
        raise CollectError(f"{zip_path} is not a readable zip file: {err}") from err
    if not zf.infolist():
        zf.close()
        raise CollectError(f"{zip_path} is an empty zip file")
    return zf


def backup(submitted: Path, backups: Path, log: Callable[[str], None]) -> None:
    """Copy ``submitted/`` to ``backups/submitted-<time>/`` when it holds anything."""
    if not any(not p.name.startswith(STAGING) for p in submitted.iterdir()):
        return
    stamp = time.strftime("%Y%m%d-%H%M%S")
    target = backups / f"submitted-{stamp}"
    n = 1
    while target.exists():
        n += 1
        target = backups / f"submitted-{stamp}-{n}"
    shutil.copytree(submitted, target, symlinks=True, ignore=shutil.ignore_patterns(STAGING + "*"))
    log(f"backed up {submitted} to {target}")


def same_tree(a: Path, b: Path) -> bool:
    """Whether folders ``a`` and ``b`` hold the same files with the same contents."""
    if not a.is_dir() or a.is_symlink():
        return False
    files_a = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    files_b = sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file())
    if files_a != files_b:
        return False
    return all((a / p).read_bytes() == (b / p).read_bytes() for p in files_a)


def swap_in(run: Collection, submitted: Path) -> list[str]:
    """Replace each collected student's ``<assignment>`` folder by the staged one (two
    renames); return the students whose files changed."""
    changed = []
    for student in sorted(run.files):
        new = run.student_dir(student)
        os.chmod(new, 0o755)
        home = submitted / student
        if not home.is_dir():
            home.mkdir()
            os.chmod(home, 0o755)
        target = home / run.assignment
        if same_tree(target, new):
            continue
        changed.append(student)
        if target.exists() or target.is_symlink():
            os.rename(target, run.staging / student / ".old")
        os.rename(new, target)
    return changed


def report(run: Collection, zip_name: str, changed: list[str], log: Callable[[str], None]) -> None:
    """Per student what was collected, then every skipped member and why."""
    log(f"collected {len(run.files)} student(s) from {zip_name}:")
    for student in sorted(run.files):
        state = "changed" if student in changed else "unchanged"
        late = sorted(run.late.get(student, ()))
        marked = f" (late: {', '.join(late)})" if late else ""
        log(f"  {student} ({state}): {', '.join(sorted(run.files[student]))}{marked}")
    over = sorted(run.over_budget)
    if over:
        log(f"over the budget of {run.limits.budget_text()} (the rest skipped, see below):")
    for student in over:
        if student in run.files:
            log(f"  {student}: collected in part")
        else:
            log(f"  {student}: NOT COLLECTED: their earlier files (if any) are kept")
    kept = sorted(run.named - set(run.files) - run.over_budget)
    if kept:
        log(f"nothing readable for {', '.join(kept)}: their earlier files (if any) are kept")
    if run.skipped:
        log(f"skipped {len(run.skipped)} member(s):")
    for where, why in run.skipped:
        log(f"  {show(where)}: {why}")


def clear_staging(submitted: Path) -> None:
    """Remove what an interrupted ``collect`` left in ``submitted/``."""
    for stale in submitted.glob(STAGING + "*"):
        shutil.rmtree(stale, ignore_errors=True)


def collect(
    course: Course,
    zip_path: Path,
    log: Callable[[str], None] = print,
    limits: ZipLimits = ZipLimits(),
) -> list[str]:
    """Import ``zip_path``; return the ids of the students whose submissions changed.
    CollectError when nothing could be collected (the report is logged first)."""
    zip_path = Path(zip_path)
    gdir = nbgrader_dir.real(course)
    pattern = re.compile(course.collect_pattern)
    with open_download(zip_path) as zf:
        gdir.submitted.mkdir(parents=True, exist_ok=True)
        clear_staging(gdir.submitted)
        staging = Path(tempfile.mkdtemp(prefix=STAGING, dir=gdir.submitted))
        try:
            run = Collection(staging, course.assignment, limits)
            todo = plan(zf, pattern, run)
            if todo:
                backup(gdir.submitted, gdir.backups, log)
                read_all(zf, todo, run)
            changed = swap_in(run, gdir.submitted)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    report(run, zip_path.name, changed, log)
    if not todo:
        raise CollectError(
            f"no member of {zip_path.name} matches [collect] pattern of course.toml with a"
            " usable student id and file name (see the skipped members above)"
        )
    if not run.files:
        raise CollectError(
            f"no member of {zip_path.name} could be read (see the skipped members above)"
        )
    log("next: make grade")
    return changed
