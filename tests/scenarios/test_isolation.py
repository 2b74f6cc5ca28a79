"""Isolation without namespaces, and failing closed (``sandbox.py``, README "Grading safely").

Where bubblewrap cannot build its namespaces, a grader that runs as root still runs each kernel
as an unprivileged uid of its own (mode ``own user``), with the grader's folders made
unreadable to it; where not even that is possible, no notebook is graded (mode ``refused``)
unless ``[sandbox] allow_unisolated = true``. These tests start real kernels through the
sandbox with bubblewrap out of the way (forced in the sandbox's status, or off ``PATH``).

This machine's Python may live where other users cannot reach it (pyenv under ``/root``, mode
0700): an unprivileged kernel could not start there, and the sandbox says so
(``Status.uid_problem``). The tests that need such a kernel run their grader in a mount
namespace of its own (``unshare``: nothing changes on the host) in which that folder is replaced
by an empty one that holds only the Python installation; the kernel itself gets no namespace.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import stat
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import nbformat
import pytest

from autograder.course import config, notebooks, spec
from autograder.course.limits import Limits
from autograder.kernels import isolation, sandbox
from helpers import ROOT, course_sources, grades, make_course

SECRET = "GRADER-TOKEN-7e1b"  # exported where the grader runs: never in a kernel
MARKER = b"SOLUTION-MARKER-31f0"  # in every file the kernel must not read
AS_ROOT = pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("setpriv") or not shutil.which("unshare"),
    reason="a kernel of its own uid needs the grader to run as root, with setpriv and unshare",
)


@pytest.fixture
def open_dir():
    """A folder that every user may pass through (pytest's own are private to root, which
    would hide what is inside from a kernel whatever the sandbox does)."""
    path = Path(tempfile.mkdtemp(prefix="a3-isolation-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _bin_without(folder: Path, *missing: str) -> str:
    """A ``PATH`` (the venv's bin, then ``folder``) with every program of the system's but
    ``missing``: a machine without bubblewrap (and without setpriv)."""
    folder.mkdir()
    for top in ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"):
        if not Path(top).is_dir():
            continue
        for program in Path(top).iterdir():
            target = folder / program.name
            if program.name not in missing and not target.exists():
                target.symlink_to(program)
    return f"{Path(sys.executable).parent}{os.pathsep}{folder}"


def _reachable(aside: Path) -> list[str]:
    """A command prefix that runs a command where an unprivileged user can reach the kernel's
    Python and course_lib: in a mount namespace of its own, each folder above them that other
    users cannot pass (``/root``) replaced by an empty one holding only them. ``[]`` where they
    are reachable already."""
    blocked: dict[Path, list[Path]] = {}
    for path in sandbox.shown_paths():
        for up in [*reversed(path.parents), path]:
            if not up.stat().st_mode & stat.S_IXOTH:
                blocked.setdefault(up, []).append(path)
                break
    if not blocked:
        return []
    aside.mkdir()
    lines = ["set -e"]
    for i, (top, inside) in enumerate(blocked.items()):
        keep = [aside / f"{i}-{j}" for j in range(len(inside))]
        for path, copy in zip(inside, keep, strict=True):
            copy.mkdir()
            lines.append(f"mount --bind {shlex.quote(str(path))} {shlex.quote(str(copy))}")
        lines.append(f"mount -t tmpfs -o mode=0755 tmpfs {shlex.quote(str(top))}")
        for path, copy in zip(inside, keep, strict=True):
            quoted = shlex.quote(str(path))
            lines.append(f"mkdir -p {quoted}; mount --bind {shlex.quote(str(copy))} {quoted}")
    lines.append('exec "$@"')
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c", "\n".join(lines), "sh"]


def _as_uid(uid: int, script: str) -> str:
    """What ``script`` (sh) prints when run as ``uid``, as a kernel of its own uid would be."""
    cmd = [*isolation.drop(uid), "/bin/sh", "-c", script]
    return subprocess.run(cmd, cwd="/", capture_output=True, text=True, timeout=60).stdout


# ---------------------------------------------------------------------------------------------
# The modes, in words, and the setting.


@pytest.mark.parametrize(
    "status, limits, mode",
    [
        (sandbox.Status(True, True), Limits(), sandbox.BWRAP),
        (sandbox.Status(True, False), Limits(), sandbox.BWRAP),
        (sandbox.Status(False, True, "no bwrap"), Limits(), sandbox.OWN_USER),
        (sandbox.Status(True, True), Limits(enabled=False), sandbox.OWN_USER),
        (sandbox.Status(False, False, "no bwrap", "not root"), Limits(), sandbox.REFUSED),
        (sandbox.Status(False, True, "no bwrap", "unreadable"), Limits(), sandbox.REFUSED),
        (
            sandbox.Status(False, False, "no bwrap"),
            Limits(allow_unisolated=True),
            sandbox.UNISOLATED,
        ),
        (sandbox.Status(True, False, "", "not root"), Limits(enabled=False), sandbox.UNISOLATED),
    ],
)
def test_the_mode_follows_the_machine_and_the_settings(status, limits, mode):
    assert status.mode(limits) == mode
    text = "\n".join(status.describe(limits))
    if mode == sandbox.BWRAP:
        assert text.startswith("sandbox: bubblewrap") and "NOT ISOLATED" not in text
    else:
        assert text.startswith("sandbox: NOT ISOLATED (")
    if mode == sandbox.OWN_USER:
        assert "user of their own, without namespaces" in text
        assert "not enforced: network" in text and "process isolation" in text
        assert "unreadable to it" in text and f"{limits.processes} processes" in text
    if mode == sandbox.REFUSED:
        assert "REFUSED" in text and sandbox.NOT_ISOLATED in text
        assert "allow_unisolated = true" in text
    if mode == sandbox.UNISOLATED:
        assert "as the grader's user" in text and "can read the course files" in text
        assert "not enforced: process limit" in text


def test_allow_unisolated_is_false_unless_set(tmp_path):
    assert Limits().allow_unisolated is False
    assert config.load(ROOT).sandbox.allow_unisolated is False  # this course's own setting
    assert "allow_unisolated = false" in (ROOT / "course.toml").read_text()
    root = make_course(tmp_path)
    text = (root / "course.toml").read_text()
    (root / "course.toml").write_text(text + "\n[sandbox]\nallow_unisolated = true\n")
    limits = config.load(root).sandbox
    assert limits.allow_unisolated and Limits.from_json(limits.to_json()) == limits
    (root / "course.toml").write_text(text + "\n[sandbox]\nallow_unisolated = 1\n")
    with pytest.raises(config.ConfigError, match="allow_unisolated must be true or false"):
        config.load(root)


def test_a_sandbox_that_may_not_run_starts_no_kernel(monkeypatch):
    box = sandbox.Sandbox(Limits(), sandbox.Status(False, False, "no bwrap", "not root"))
    try:
        assert box.mode == sandbox.REFUSED
        with pytest.raises(RuntimeError, match=sandbox.NOT_ISOLATED):
            box.wrap([sys.executable, "-m", "ipykernel_launcher", "-f", "k.json"], "k.json")
    finally:
        box.cleanup()
    monkeypatch.setattr(sandbox, "probe", lambda: sandbox.Status(False, False, "x", "y"))
    refused = sandbox.refusal(Limits(), ["1_sums", "2_words"])
    assert refused is not None and not refused["done"]
    assert {n: e["error"] for n, e in refused["notebooks"].items()} == {
        "1_sums": sandbox.NOT_ISOLATED,
        "2_words": sandbox.NOT_ISOLATED,
    }
    assert sandbox.refusal(Limits(allow_unisolated=True), ["1_sums"]) is None


def test_unisolated_kernels_use_sockets_in_the_workers_own_folder():
    """Not TCP: a port picked free can be taken by another worker's kernel before this one
    binds it, and the kernel dies before it replies (a "failed" notebook)."""
    from traitlets.config import Config

    box = sandbox.Sandbox(Limits(allow_unisolated=True), sandbox.Status(False, False, "x", "y"))
    try:
        assert box.mode == sandbox.UNISOLATED
        cfg = Config()
        box.configure(cfg)
        assert cfg.KernelManager.transport == "ipc"
        manager = sandbox.SandboxKernelManager()
        assert manager.transport == "ipc"
        assert Path(manager.ip).parent == box.rundir
        assert Path(manager.connection_file).parent == box.rundir
    finally:
        sandbox.SandboxKernelManager.sandbox = None
        box.cleanup()


# ---------------------------------------------------------------------------------------------
# What a uid of its own can reach once the grader's folders are protected.


def _fake_course(top: Path) -> tuple[Path, dict[str, Path]]:
    """A course root in the layout of a repository with its venv and course_lib inside."""
    course = top / "course"
    files = {
        "solution": course / "solutions" / "a3" / "1_sums.ipynb",
        "judge": course / "autograder" / "judges" / "a3" / "1_sums.json",
        "gradebook": course / "autograder" / "class" / "gradebook.db",
        "results": course / "autograder" / "out" / "grades.csv",
        "history": course / ".git" / "objects" / "ab" / "cdef",
        "readme": course / "README.md",
        "needed": course / ".venv" / "lib" / "site.py",
        "library": course / "course_lib" / "__init__.py",
    }
    for path in files.values():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(MARKER)
    for path in course.rglob("*"):  # as a checkout usually is: readable by everyone
        path.chmod(0o755 if path.is_dir() else 0o644)
    course.chmod(0o755)
    return course, files


@pytest.fixture
def claimed_uid():
    """A sandbox uid claimed as a grading worker claims one: no other test's kernel runs as it
    meanwhile, and no other worker kills what runs as it (``isolation.claim_uid``)."""
    uid, lock = isolation.claim_uid(os.getpid())
    yield uid
    lock.close()


@AS_ROOT
def test_protect_hides_the_grader_folders_but_what_the_kernel_needs(open_dir, claimed_uid):
    course, files = _fake_course(open_dir)
    needed = [course / ".venv", course / "course_lib"]
    uid = claimed_uid
    reads = "".join(f'cat {shlex.quote(str(p))} >/dev/null 2>&1 && echo "read {n}"\n'
                    for n, p in files.items())  # fmt: skip
    assert _as_uid(uid, reads).split("\n")[:-1] == [f"read {n}" for n in files]  # as checked out

    changed = sandbox.protect([course], needed)
    assert course in changed and not any(p.is_relative_to(n) for p in changed for n in needed)
    assert sandbox.protect([course], needed) == []  # a second time changes nothing
    assert stat.S_IMODE(course.stat().st_mode) == 0o751  # passed through, not listed
    for name in ("solutions", "autograder", ".git", "README.md"):
        assert not (course / name).stat().st_mode & 0o007, name
    assert stat.S_IMODE((course / ".venv").stat().st_mode) == 0o755

    script = reads + textwrap.dedent(
        f"""
        ls {course} >/dev/null 2>&1 && echo "listed the course root"
        echo x > {course}/PWNED 2>/dev/null && echo "wrote the course root"
        echo x > {files["gradebook"]} 2>/dev/null && echo "wrote the gradebook"
        echo x > {course}/.venv/lib/PWNED.pth 2>/dev/null && echo "wrote the venv"
        """
    )
    assert _as_uid(uid, script).split("\n")[:-1] == ["read needed", "read library"]
    assert not (course / "PWNED").exists() and files["gradebook"].read_bytes() == MARKER


def test_private_paths_are_the_course_dir_the_course_root_and_the_grader(tmp_path):
    course = make_course(tmp_path / "course")
    paths = sandbox.private_paths(course / "autograder" / "demo")
    assert paths == [course / "autograder" / "demo", course, config.REPO_ROOT]
    assert sandbox.private_paths(config.REPO_ROOT / "autograder") == [
        config.REPO_ROOT / "autograder",
        config.REPO_ROOT,
    ]


# A kernel of its own uid, started through the sandbox as the worker starts it (nbgrader's
# Execute, as GradeExecute, with SandboxKernelManager), in the grader's mount namespace of
# _reachable. It reports, from inside, what it is and what it could reach.
DRIVER = r"""
import json, os, sys, time
from pathlib import Path

import nbformat
import psutil
from nbformat.v4 import new_code_cell, new_notebook
from traitlets.config import Config

from autograder.course import config
from autograder.kernels import sandbox
from autograder.marking import gradeexec
from autograder.marking.gradeexec import GradeExecute
from autograder.kernels.processes import running


def owned(uid):
    # The processes of uid still running. A zombie has ended: it waits for the machine's init
    # to reap it, in init's own time (longer on a loaded machine), which no sandbox sets.
    procs = [p for p in psutil.process_iter(["uids"]) if p.info["uids"] is not None]
    return [p.pid for p in procs if p.info["uids"].real == uid and running(p)]


case = json.loads(sys.argv[1])
config.REPO_ROOT = Path(case["repo"])  # the grader's repository: here, a fake one
status = sandbox.Status(isolated=False, unprivileged=True, reason="bwrap: forced off")
box = sandbox.Sandbox(sandbox.Limits(memory_mb=3072, processes=64, notebook_seconds=120), status)
cfg = Config()
cfg.CourseDirectory.root = case["course_dir"]
box.configure(cfg)
gradeexec.configure(cfg, box.limits)
nb = new_notebook(cells=[new_code_cell(case["code"])])
nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
try:
    GradeExecute(config=cfg, timeout=120).preprocess(nb, {"metadata": {"path": case["cwd"]}})
    left = owned(box.uid)
    home = box.home.stat()
finally:
    box.cleanup()
for _ in range(50):  # killed: ended once the kernel delivers the signal
    after = owned(box.uid)
    if not after:
        break
    time.sleep(0.1)
text = "".join(o.get("text", "") for o in nb.cells[0].outputs)
errors = [o for o in nb.cells[0].outputs if o.output_type == "error"]
print("DRIVER" + json.dumps({"mode": box.mode, "uid": box.uid, "text": text, "errors": errors,
                  "home_uid": home.st_uid, "home_mode": home.st_mode & 0o777,
                  "left_during": left, "left_after": after}))
"""
INSIDE = r"""
import json, os, subprocess
case = json.loads(CASE)
def attempt(action):
    try:
        action()
        return "ok"
    except OSError as err:
        return type(err).__name__
def read(path):
    with open(path, "rb") as fh:
        fh.read()
def write(path):
    with open(path, "a") as fh:
        fh.write("pwned")
report = {
    "uid": os.getuid(), "euid": os.geteuid(), "gid": os.getgid(), "groups": os.getgroups(),
    "cwd": os.getcwd(), "home": os.environ["HOME"], "env": dict(os.environ),
    "read": {name: attempt(lambda p=p: read(p)) for name, p in case["read"].items()},
    "list": {name: attempt(lambda p=p: os.listdir(p)) for name, p in case["list"].items()},
    "write": {name: attempt(lambda p=p: write(p)) for name, p in case["write"].items()},
    "scratch": attempt(lambda: write(os.path.join(os.environ["HOME"], "notes.txt"))),
    "signal": attempt(lambda: os.kill(os.getppid(), 0)),
    "environ": attempt(lambda: read(f"/proc/{os.getppid()}/environ")),
}
import course_lib
from course_lib.grading import dispatch
report["course_lib"] = course_lib.__file__
subprocess.Popen(["sleep", "120"], start_new_session=True)  # left behind, on purpose
print("REPORT" + json.dumps(report))
"""


@AS_ROOT
@pytest.mark.slow
def test_a_kernel_of_its_own_uid_reads_and_writes_nothing_of_the_grader(open_dir):
    course, files = _fake_course(open_dir)
    repo, repo_files = _fake_course(open_dir / "grader")  # the grader's repository
    (course / "course.toml").write_text("# the course root\n")
    staged = course / "autograder" / "class" / "intake" / "doejane" / "a3"
    staged.mkdir(parents=True)
    (staged / "1_sums.ipynb").write_bytes(MARKER)
    for path in (course / "autograder").rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    venv = Path(sys.prefix) / "lib"
    secret = {  # the fake .venv and course_lib too: the kernel's are elsewhere
        **{f"course {n}": str(p) for n, p in files.items()},
        **{f"grader {n}": str(p) for n, p in repo_files.items()},
        "staged notebook": str(staged / "1_sums.ipynb"),
    }
    case = {
        "read": secret,
        "list": {"course root": str(course), "grader": str(repo), "staged": str(staged)},
        "write": {
            "course root": str(course / "PWNED.txt"),
            "gradebook": str(files["gradebook"]),
            "judge": str(files["judge"]),
            "grader's judge.py": str(repo / "autograder" / "marking" / "judge.py"),
            "staged folder": str(staged / "PWNED.txt"),
            "venv": str(next(venv.glob("python3*/site-packages")) / "PWNED-isolation.pth"),
        },
    }
    code = f"CASE = {json.dumps(json.dumps(case))}\n{INSIDE}"
    job = {"repo": str(repo), "course_dir": str(course / "autograder" / "class"),
           "cwd": str(staged), "code": code}  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(ROOT), "GRADER_API_TOKEN": SECRET}
    driver = open_dir / "driver.py"
    driver.write_text(DRIVER)
    cmd = [*_reachable(open_dir / "aside"), sys.executable, str(driver), json.dumps(job)]
    log = open_dir / "driver.log"  # a file, not a pipe: what the kernel leaves running holds it
    with open(log, "w") as fh:
        ran = subprocess.run(cmd, cwd=ROOT, env=env, stdout=fh, stderr=fh, timeout=300)
    venv_file = Path(case["write"]["venv"])
    if venv_file.exists():
        venv_file.unlink()
        pytest.fail("the kernel wrote into the grader's Python installation")
    text = log.read_text()
    assert ran.returncode == 0, text[-5000:]
    out = json.loads(text.split("DRIVER", 1)[1].splitlines()[0])
    assert out["mode"] == sandbox.OWN_USER and not out["errors"], out
    report = json.loads(out["text"].split("REPORT", 1)[1])

    uid = out["uid"]
    assert isolation.UID_BASE <= uid < isolation.UID_BASE + isolation.UID_COUNT
    assert report["uid"] == report["euid"] == report["gid"] == uid and report["groups"] == []
    assert report["course_lib"].endswith("course_lib/__init__.py")  # its import works
    assert report["read"] == dict.fromkeys(secret, "PermissionError"), report["read"]
    assert report["list"] == dict.fromkeys(case["list"], "PermissionError")
    assert report["write"] == dict.fromkeys(case["write"], "PermissionError"), report["write"]
    assert report["scratch"] == "ok" and report["cwd"] == report["home"]
    assert out["home_uid"] == uid and out["home_mode"] == 0o700  # its own, private
    assert report["signal"] == "PermissionError" and report["environ"] == "PermissionError"
    assert SECRET not in json.dumps(report["env"]) and "PYTHONPATH" not in report["env"]
    assert report["env"]["HOME"] == report["home"] and report["env"]["PATH"].startswith(
        str(Path(sys.executable).parent)
    )
    assert out["left_during"] and out["left_after"] == []  # its sleep, ended with the worker
    for path in (*files.values(), *repo_files.values()):
        assert path.read_bytes() == MARKER
    assert not (course / "PWNED.txt").exists() and not (staged / "PWNED.txt").exists()


# ---------------------------------------------------------------------------------------------
# Grading, end to end (the command line, its worker, nbgrader, the judge).


def _class(root: Path, grader: Path | None = None) -> None:
    """Two solved notebooks for ``honest``; with ``grader`` (the grader's repository), a
    student whose answer also tries the course's and the grader's files (and prints what it
    got) before answering right."""
    src, gdir = course_sources(root)
    students = {"honest": {n: src.solved(n) for n in ("1_sums", "2_words")}}
    if grader is not None:
        nb = src.solved("2_words")
        cell = next(c for c in nb.cells if spec.grade_id(c) == "shout")
        paths = [gdir.root / "gradebook.db", root / "solutions" / "a3" / "2_words.ipynb",
                 gdir.source / "2_words.ipynb", gdir.root / "judges" / "a3" / "2_words.json",
                 grader / "autograder" / "marking" / "judge.py"]  # fmt: skip
        cell.source += textwrap.dedent(
            f"""

            import os
            print("UID", os.getuid())
            for path in {[str(p) for p in paths]!r}:
                try:
                    print("READ", path, len(open(path, "rb").read()))
                except OSError as err:
                    print("REFUSED", path, type(err).__name__)
            """
        )
        students["snoop"] = {"2_words": nb}
    for student, nbs in students.items():
        folder = gdir.submitted / student / "a3"
        folder.mkdir(parents=True)
        for name, nb in nbs.items():
            (folder / f"{name}.ipynb").write_text(nbformat.writes(nb))
    for path in root.rglob("*"):  # a checkout readable by everyone, as most are
        path.chmod(0o755 if path.is_dir() else 0o644)


def _grade(
    root: Path, env: dict, prefix: list[str] | None = None, cwd: Path = ROOT, code: int = 0
) -> str:
    """``make grade``'s command; ``code`` its exit status (1: a student not graded to the end)."""
    cmd = [*(prefix or []), sys.executable, "-m", "autograder", "--root", str(root), "grade"]
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == code, proc.stdout[-3000:] + proc.stderr[-5000:]
    return proc.stdout


@pytest.mark.slow
def test_grading_fails_closed_where_nothing_isolates(open_dir):
    """No bubblewrap, no setpriv (or not root): no notebook is graded, each says why; with
    ``allow_unisolated = true`` the same class is graded, unisolated, and says so."""
    root = make_course(open_dir / "course")
    _class(root)
    env = {**os.environ, "PATH": _bin_without(open_dir / "bin", "bwrap", "setpriv")}
    out = _grade(root, env, code=1)  # not graded to the end: `make grade` fails
    assert "REFUSED, no notebook is graded" in out and "not graded (no isolation)" in out
    rows = grades(root)
    for name in ("1_sums", "2_words"):
        row = rows[("honest", name)]
        assert "failed" in row["flags"].split(";") and float(row["autograded"]) == 0
        assert sandbox.NOT_ISOLATED in row["notes"]
    summary = (root / "autograder" / "out" / "summary.txt").read_text()
    assert "REFUSED" in summary and sandbox.NOT_ISOLATED in summary
    assert not (root / "autograder" / "class" / "autograded" / "honest").exists()  # nothing ran

    toml = root / "course.toml"
    toml.write_text(toml.read_text() + "\n[sandbox]\nallow_unisolated = true\n")
    out = _grade(root, env)
    assert "kernels run as the grader's user ([sandbox] allow_unisolated = true)" in out
    rows = grades(root)
    assert float(rows[("honest", "1_sums")]["autograded"]) == 2
    assert float(rows[("honest", "2_words")]["autograded"]) == 2
    assert rows[("honest", "2_words")]["flags"] == "ok"


@AS_ROOT
@pytest.mark.slow
def test_grading_as_its_own_uid_without_bubblewrap(open_dir):
    """No bubblewrap, root and setpriv: the class is graded right, each kernel as its own uid,
    and a student who goes looking for the course's files finds none of them."""
    repo = open_dir / "grader"  # the grader's repository: a copy of the autograder package
    for path in config.grader_code_files():
        (repo / path.relative_to(ROOT)).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, repo / path.relative_to(ROOT))
    root = make_course(open_dir / "course")
    _class(root, grader=repo)
    repo.chmod(0o755)
    env = {**os.environ, "PATH": _bin_without(open_dir / "bin", "bwrap"),
           "PYTHONPATH": str(repo)}  # fmt: skip
    prefix = _reachable(open_dir / "aside")
    out = _grade(root, env, prefix, cwd=repo)
    assert "sandbox: NOT ISOLATED (bubblewrap not installed" in out
    assert "kernels run as an unprivileged user of their own" in out
    rows = grades(root)
    assert float(rows[("honest", "1_sums")]["autograded"]) == 2
    assert float(rows[("honest", "2_words")]["autograded"]) == 2
    assert float(rows[("snoop", "2_words")]["autograded"]) == 2
    graded = root / "autograder" / "class" / "autograded" / "snoop" / "a3" / "2_words.ipynb"
    text = json.dumps(notebooks.read(graded))
    uid = int(text.split("UID ", 1)[1].split("\\n", 1)[0])
    assert isolation.UID_BASE <= uid < isolation.UID_BASE + isolation.UID_COUNT
    assert "READ " not in text and text.count("PermissionError") == 5, text[-3000:]
    for path in (root, root / "autograder" / "class", repo):  # nothing inside them is needed
        assert not path.stat().st_mode & 0o007, path
