"""The grading sandbox: every kernel that runs student code is isolated and limited.

nbgrader runs a student's notebook, tests included, in one Jupyter kernel. ``worker.py`` makes
nbgrader start that kernel through :class:`SandboxKernelManager`, which wraps the kernel's
command. What wraps it depends on the machine (:meth:`Status.mode`), in this order:

1. **bubblewrap** (:data:`BWRAP`), when ``bwrap`` works here (it needs user namespaces, or
   root):

   - the file system holds only what a kernel needs, read-only: the system folders
     (``SYSTEM``: ``/usr``, ``/etc``, ``/lib``...), the Python installation and ``course_lib``.
     Nothing else of the machine exists in it: not the repository (``solutions/``, the
     gradebook, every submission, the autograder itself), not the course directory, not other
     checkouts, ``/root``, ``/home`` or the host's ``/tmp``. ``[sandbox] hide`` of
     ``course.toml`` empties folders inside what is shown (``/etc/secrets``);
   - the kernel's working directory is a fresh, size-limited scratch file system (``/tmp``;
     ``/tmp/work`` is its ``HOME``), the only place it can write (the rest, the sandbox's own
     root included, is read-only), emptied after every notebook. Its Unix sockets live there
     too: nbgrader reaches them through ``/proc/<pid>/root`` (``KernelManager.transport =
     "ipc"``), so everything the kernel writes counts against ``scratch_mb``;
   - it has no network (its own empty network namespace), its own process namespace (it sees
     and can signal only its own processes: not nbgrader, not the grader, not other students'
     kernels), no capabilities, and a fixed environment (:func:`kernel_env`: no variable of the
     grader's shell); bwrap reads its own arguments from a file, so no host path of the
     grader's shows in the sandbox's process list;
   - when the grader runs as root, the kernel runs as an unprivileged user of its own (a
     numeric uid that no other worker holds, :func:`_claim_uid`), which also makes the process
     limit count only its processes.

2. **its own user, without namespaces** (:data:`OWN_USER`), where bwrap does not work (or
   ``[sandbox] enabled = false``) but the grader runs as root, ``setpriv`` exists and an
   unprivileged user can run the kernel's Python (:func:`probe` tries it). The kernel runs as a
   uid of its own (``setpriv``: no groups, no capabilities, no new privileges), with the limits
   below, a fixed environment, and a fresh private folder as its working folder and ``HOME``
   (``0700``, owned by that uid; emptied, and every process of that uid killed, before each
   kernel starts and when the worker ends). Before the first kernel starts, :func:`protect`
   takes every permission of other users from the grader's folders (:func:`private_paths`:
   the nbgrader course directory, the course root above it, the grader's repository), except
   the way to what the kernel needs (the Python installation and ``course_lib``, which keep
   their modes): the kernel's uid cannot read the solutions, the judges, the gradebook,
   submissions or results, nor write anywhere of the grader's. Not enforced there: the network,
   process visibility (it sees every process; it can signal only its own), the scratch
   folder's size (each file is still limited), and the machine's world-writable folders
   (``/tmp``, ``/var/tmp``, ``/dev/shm``), where it can create files.

3. **unisolated**, as the grader's own user (:data:`UNISOLATED`), only where the course opts in:
   ``[sandbox] allow_unisolated = true``, or ``enabled = false`` (isolation turned off on
   purpose, for tests). The limits below and a fixed environment apply; nothing else does.

4. **refused** (:data:`REFUSED`) otherwise: no kernel starts (:meth:`Sandbox.wrap` raises) and
   grading scores no notebook of the student, each flagged ``failed`` with
   :data:`NOT_ISOLATED`.

Always (``prlimit``, util-linux): an address-space (memory) limit, a limit on the size of any
file written, no core files and, for a kernel of its own uid, a process limit.
``gradeexec.GradeExecute`` (nbgrader's ``Execute``) adds a cap on the output a cell may keep
and a time limit for the whole notebook on top of nbgrader's per-cell limit.
:meth:`Status.describe` says which mode grading runs in, what it enforces and what it does not;
``make grade`` prints it and writes it into the summary.
"""

from __future__ import annotations

import fcntl
import functools
import importlib.util
import logging
import os
import shutil
import site
import stat
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from jupyter_client.manager import AsyncKernelManager

from . import zygote
from .limits import Limits

# All the sandbox shows of the machine's own folders, read-only (with Python and course_lib).
SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
SCRATCH = "/tmp/work"  # the kernel's working directory and HOME inside the sandbox
UID_BASE = 61000  # sandbox uids: UID_BASE to UID_BASE + UID_COUNT - 1, one per worker (as root)
UID_COUNT = 4000
UID_LOCKS = ("/run/a3-sandbox-uids", f"{tempfile.gettempdir()}/a3-sandbox-uids")  # first usable

# The modes of :meth:`Status.mode` (see the module docstring).
BWRAP = "bubblewrap"
OWN_USER = "own user"
UNISOLATED = "unisolated"
REFUSED = "refused"
# What the student and the instructor read for each notebook not graded in mode REFUSED.
NOT_ISOLATED = "not graded: the grader could not isolate your code on this machine"


@dataclass(frozen=True)
class Status:
    """What the sandbox can enforce on this machine (:func:`probe`)."""

    isolated: bool  # bwrap works: files, network and processes isolated
    unprivileged: bool  # the grader is root and setpriv exists: kernels can drop to a uid
    reason: str = ""  # why bwrap isolation is off
    # Why a kernel cannot run as its own uid without bwrap ("": it can, when unprivileged).
    uid_problem: str = ""

    def mode(self, limits: Limits) -> str:
        """How kernels run under ``limits``: :data:`BWRAP`, :data:`OWN_USER`,
        :data:`UNISOLATED` (the course allows it) or :data:`REFUSED`."""
        if self.isolated and limits.enabled:
            return BWRAP
        if self.unprivileged and not self.uid_problem:
            return OWN_USER
        if limits.allow_unisolated or not limits.enabled:
            return UNISOLATED
        return REFUSED

    def why(self, limits: Limits) -> str:
        """Why bubblewrap does not isolate kernels ("" when it does)."""
        if self.isolated and limits.enabled:
            return ""
        return self.reason if limits.enabled else "disabled in course.toml"

    def no_own_user(self) -> str:
        """Why a kernel cannot run as its own uid without bwrap ("" when it can)."""
        if self.unprivileged and not self.uid_problem:
            return ""
        return self.uid_problem or "that needs the grader to run as root, with setpriv"

    def describe(self, limits: Limits) -> list[str]:
        """Lines for the grading log and summary: the mode, what is enforced and what is not."""
        mode = self.mode(limits)
        own_uid = mode == OWN_USER or (mode == BWRAP and self.unprivileged)
        enforced = [
            f"memory {limits.memory_mb} MB",
            f"files {limits.file_mb} MB",
            f"output {limits.output_kb} KB per cell",
            f"{limits.notebook_seconds} s per notebook",
        ]
        if own_uid:
            enforced.append(f"{limits.processes} processes")
        lines = []
        if mode == BWRAP:
            lines.append(
                "sandbox: bubblewrap: course files hidden, read-only system, private scratch "
                f"({limits.scratch_mb} MB), no network, own process namespace"
                + (", unprivileged user" if self.unprivileged else "")
                + (", kernels forked from one per student" if limits.fork_kernels else "")
            )
        elif mode == OWN_USER:
            lines += [
                f"sandbox: NOT ISOLATED ({self.why(limits)}): kernels run as an unprivileged "
                "user of their own, without namespaces",
                "  enforced: its own uid (no groups, capabilities or new privileges), a fresh "
                "private working folder and HOME, a fixed environment; the grader's folders "
                "(course root, solutions, judges, gradebook, submissions, results, the grader's "
                "repository) unreadable to it but the Python installation and course_lib",
                "  not enforced: network (it can reach it), process isolation (it sees every "
                "process and its command line, and can signal only its own), the scratch "
                "folder's size (each file is still limited), files it creates in the machine's "
                "world-writable folders (/tmp, /var/tmp, /dev/shm)",
            ]
        else:
            head = f"sandbox: NOT ISOLATED ({self.why(limits)})"
            if mode == REFUSED:
                lines += [
                    f"{head}: REFUSED, no notebook is graded ({NOT_ISOLATED!r})",
                    f"  no user of its own either: {self.no_own_user()}; "
                    "[sandbox] allow_unisolated = true grades anyway, as the grader's user, with:",
                ]
            else:
                allowed = "allow_unisolated = true" if limits.enabled else "enabled = false"
                lines += [
                    f"{head}: kernels run as the grader's user ([sandbox] {allowed})",
                    f"  no user of its own: {self.no_own_user()}",
                ]
            lines.append(
                "  not enforced: student code can read the course files (solutions, gradebook, "
                "other submissions), write where the grader can, reach the network and signal "
                "other processes; grade untrusted submissions in a throwaway VM or container"
            )
        if not own_uid:
            lines.append("  not enforced: process limit (needs the grader to run as root)")
        lines.append("  limits: " + ", ".join(enforced))
        return lines


def _drop(uid: int | None) -> list[str]:
    """Become ``uid`` (from root; no groups, and the capabilities go with it, for good: no new
    privileges through setuid or file-capability programs): nothing when ``uid`` is None."""
    if uid is None:
        return []
    return [
        "setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--inh-caps=-all",
        "--no-new-privs", "--",
    ]  # fmt: skip


def _bwrap(uid: int | None) -> list[str]:
    """bwrap's namespace options. As root (``uid`` given) bwrap needs no user namespace and
    reads the folders it shows as root; the kernel then drops to ``uid`` inside. Otherwise
    bwrap runs unprivileged in a user namespace of its own."""
    if uid is None:
        spaces = ["--unshare-all"]
    else:
        spaces = [
            "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts",
            "--unshare-cgroup-try", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID",
        ]  # fmt: skip
    return [
        "bwrap", *spaces, "--die-with-parent", "--new-session", *_system(),
        "--dev", "/dev", "--proc", "/proc",
    ]  # fmt: skip


def _system() -> list[str]:
    """bwrap options showing the system folders, read-only (a symlink such as ``/bin ->
    usr/bin`` stays a symlink)."""
    args: list[str] = []
    for top in SYSTEM:
        path = Path(top)
        if path.is_symlink():
            args += ["--symlink", os.readlink(path), top]
        elif path.is_dir():
            args += ["--ro-bind", top, top]
    return args


# Run as an unprivileged uid by :func:`_uid_problem`: what a kernel of its own uid needs, and
# that it cannot change the Python the grader runs too.
_UID_CHECK = """
import importlib.util, os, site, sys
if (sys.version, sys.base_prefix) != tuple(sys.argv[1:3]):  # its libraries were unreadable
    sys.exit(f"{sys.argv[2]} is not readable by other users (it ran {sys.base_prefix})")
found = []
for name in ("ipykernel", "course_lib"):
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.origin:
        sys.exit(f"{name} is not importable")
    open(spec.origin, "rb").close()
    found.append(os.path.dirname(spec.origin))
for path in {sys.prefix, sys.base_prefix, *site.getsitepackages(), *found}:
    if os.access(path, os.W_OK):
        sys.exit(f"{path} is writable by other users")
"""


def _uid_problem(uid: int) -> str:
    """Why a kernel of its own uid cannot run outside bwrap ("" when it can), tried as ``uid``
    (a claimed one): an unprivileged uid must reach and read the kernel's Python, ipykernel and
    course_lib, and must not be able to write into them (the grader runs that Python as root).
    ``setpriv`` starts the program before it loses root's rights, so a Python in an unreadable
    folder (``/root/.pyenv``) still starts, but finds another installation's libraries, or
    none: that counts as unusable."""
    cmd = [*_drop(uid), sys.executable, "-I", "-c", _UID_CHECK, sys.version, sys.base_prefix]
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"}
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60, cwd="/", env=env)
    except (OSError, subprocess.TimeoutExpired) as err:
        return f"an unprivileged user cannot run {sys.executable}: {err}"
    if proc.returncode != 0:
        said = (proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"])[-1]
        return f"an unprivileged user cannot run the kernel's Python: {said[:200]}"
    return ""


@functools.lru_cache(maxsize=1)
def probe() -> Status:
    """Find out once what isolates kernels here: bwrap (it needs user namespaces, or root), and
    whether a kernel can run as its own uid without it (root, setpriv, a Python it can use)."""
    if shutil.which("prlimit") is None:
        reason = "prlimit (util-linux) not found"
        return Status(False, False, reason, reason)
    root = os.geteuid() == 0
    unprivileged = root and shutil.which("setpriv") is not None
    if not unprivileged:
        why = "setpriv (util-linux) not found" if root else "the grader does not run as root"
        return _probe_bwrap(None, unprivileged, why)
    # The probes run as a uid claimed like a worker's: a uid no kernel of another worker holds
    # (whose kill of its uid's processes would end a probe), nor any kernel it could see.
    try:
        uid, lock = _claim_uid(os.getpid())
    except RuntimeError as err:  # no lock folder, or every uid held: no kernel could claim one
        return _probe_bwrap(None, unprivileged, str(err))
    try:
        return _probe_bwrap(uid, unprivileged, _uid_problem(uid))
    finally:
        lock.close()


def _probe_bwrap(uid: int | None, unprivileged: bool, uid_problem: str) -> Status:
    """:func:`probe`'s second half: whether bwrap runs here (dropping to ``uid`` inside)."""
    if shutil.which("bwrap") is None:
        reason = "bubblewrap not installed: apt-get install bubblewrap"
        return Status(False, unprivileged, reason, uid_problem)
    cmd = [*_bwrap(uid), "--", *_drop(uid), "true"]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as err:
        return Status(False, unprivileged, f"bwrap failed: {err}", uid_problem)
    if proc.returncode != 0:
        reason = f"bwrap failed: {proc.stderr.strip()[:200]}"
        return Status(False, unprivileged, reason, uid_problem)
    return Status(True, unprivileged, "", uid_problem)


def _visible(path: Path) -> bool:
    """Whether ``path`` is inside a system folder the sandbox shows anyway."""
    return any(path.is_relative_to(Path(top).resolve()) for top in SYSTEM)


def shown_paths() -> list[Path]:
    """What the kernel needs back, read-only: the Python installation(s), user site-packages,
    and course_lib (an editable install lives in the repository)."""
    paths = {Path(sys.prefix), Path(sys.base_prefix), Path(sys.executable).resolve().parent.parent}
    user_site = site.getusersitepackages()
    if user_site:
        paths.add(Path(user_site))
    spec = importlib.util.find_spec("course_lib")
    if spec and spec.submodule_search_locations:
        paths.update(Path(p) for p in spec.submodule_search_locations)
    return sorted({p.resolve() for p in paths if p.exists()})


def private_paths(course_dir: Path | str) -> list[Path]:
    """The grader's folders that a kernel of its own uid (mode :data:`OWN_USER`) must not
    read: the nbgrader course directory ``course_dir`` (source, release, judges, gradebook,
    submissions, graded notebooks, feedback, results), the course root above it (the nearest
    folder holding ``course.toml``: ``solutions/``, ``autograder/``...), and the grader's own
    repository (:data:`config.REPO_ROOT`: its solutions, judges and history, when it is not the
    course root)."""
    from .config import CONFIG_FILE, REPO_ROOT

    folder = Path(course_dir).resolve()
    paths = [folder]
    for up in folder.parents:
        if (up / CONFIG_FILE).is_file():
            paths.append(up)
            break
    paths.append(REPO_ROOT.resolve())
    return list(dict.fromkeys(paths))


def protect(paths: Iterable[Path], needed: Iterable[Path] | None = None) -> list[Path]:
    """Take every permission of other users (``o-rwx``) from ``paths`` and all they hold, except
    the way to ``needed`` (default :func:`shown_paths`: the Python installation and
    ``course_lib``): a folder that holds something needed only loses ``o-rw`` (it can be
    passed through, not listed), its other entries lose ``o-rwx``, and what is needed keeps its
    modes. A symbolic link is left as it is (its target keeps its own modes). Returns what
    changed; changing nothing again costs a few ``stat`` calls."""
    needed = [Path(p).resolve() for p in (shown_paths() if needed is None else needed)]
    changed: list[Path] = []
    for path in paths:
        _protect(Path(path).resolve(), needed, changed)
    return changed


def _protect(path: Path, needed: list[Path], changed: list[Path]) -> None:
    try:
        info = path.lstat()
    except FileNotFoundError:
        return
    if stat.S_ISLNK(info.st_mode) or any(path.is_relative_to(n) for n in needed):
        return
    inside = [n for n in needed if n.is_relative_to(path)]
    mode = stat.S_IMODE(info.st_mode)
    keep = stat.S_IXOTH if inside and stat.S_ISDIR(info.st_mode) else 0
    new = (mode & ~0o007) | (mode & keep)
    if new != mode:
        os.chmod(path, new)
        changed.append(path)
    if inside:
        for child in path.iterdir():
            _protect(child, inside, changed)


def _claim_uid(start: int):
    """A sandbox uid that no other worker on this machine holds, and the open lock file that
    holds it (released when the file is closed, or the worker ends). Two workers sharing a uid
    could see each other's kernels (and the kill of :meth:`Sandbox._fresh_home` would end the
    other's)."""
    for folder in map(Path, UID_LOCKS):
        try:
            folder.mkdir(mode=0o700, exist_ok=True)
        except OSError:
            continue
        info = folder.lstat()  # a folder of root's own that nobody else can write into
        if stat.S_ISDIR(info.st_mode) and info.st_uid == 0 and not info.st_mode & 0o022:
            break
    else:
        raise RuntimeError(f"no folder of root's own for the sandbox's uid locks: {UID_LOCKS}")
    for i in range(UID_COUNT):
        uid = UID_BASE + (start + i) % UID_COUNT
        flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
        handle = os.fdopen(os.open(folder / f"{uid}.lock", flags, 0o600), "w")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            continue
        return uid, handle
    raise RuntimeError(f"all {UID_COUNT} sandbox uids are in use")


_KILL_ALL = """
import os, signal
try:
    os.kill(-1, signal.SIGKILL)
except ProcessLookupError:
    pass
"""


def _kill_uid(uid: int) -> None:
    """Kill every process of ``uid`` (``kill(-1)`` as that uid: all of its processes but the
    one killing), what a kernel of its own uid left running (a daemon, a fork bomb's rest)."""
    cmd = [*_drop(uid), sys.executable, "-I", "-S", "-c", _KILL_ALL]
    subprocess.run(cmd, cwd="/", env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
                   capture_output=True, timeout=60, check=False)  # fmt: skip


INSIDE_RUN = "/tmp/.kernel"  # the kernel's connection file and sockets, inside its scratch
ARGS_FD, CONNECTION_FD = 3, 4  # what bwrap reads its options and the connection file from
INSIDE_CONNECTION = f"{INSIDE_RUN}/connection.json"
SOCKET_PREFIX = f"{INSIDE_RUN}/kernel"  # ipc sockets: {SOCKET_PREFIX}-{port}
RUN_MODE, SCRATCH_MODE = 0o1777, 0o777  # of INSIDE_RUN and SCRATCH, as bwrap makes them


def kernel_env(home: str = SCRATCH) -> dict[str, str]:
    """The whole environment of a grading kernel: fixed, nothing of the grader's shell (a
    token exported where ``make grade`` runs never reaches a student)."""
    threads = os.environ.get("OMP_NUM_THREADS", "1")
    return {
        "PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin",
        "HOME": home,
        "TMPDIR": home,
        "LANG": "C.UTF-8",
        "XDG_CACHE_HOME": f"{home}/.cache",
        "MPLCONFIGDIR": f"{home}/.matplotlib",
        "MPLBACKEND": "Agg",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
        "COURSE_QUICK": os.environ.get("COURSE_QUICK", "1"),
        "NBGRADER_EXECUTION": "autograde",
        "OMP_NUM_THREADS": threads,
        "MKL_NUM_THREADS": threads,
        "OPENBLAS_NUM_THREADS": threads,
    }


def kernel_command(
    cmd: list[str],
    rundir: Path,
    limits: Limits,
    status: Status,
    uid: int | None,
    connection_file: Path | None = None,
    pid_1: bool = False,
) -> list[str]:
    """``cmd`` (the kernel's command) run in the sandbox, with the limits and a fixed
    environment. Isolated, the kernel reads ``connection_file`` (read-only) at
    :data:`INSIDE_CONNECTION` and makes its sockets next to it, in its size-limited scratch
    file system: it can write nowhere else (``rundir`` stays the grader's). ``pid_1``: the
    command is the sandbox's pid 1 (bwrap's ``--as-pid-1``: a zygote, see ``zygote.py``)."""
    rlimits = [
        "prlimit",
        f"--as={limits.memory_mb * 2**20}",
        f"--fsize={limits.file_mb * 2**20}",
        "--core=0",
    ]
    if uid is not None:
        # RLIMIT_NPROC counts every process and thread of the user: a fresh sandbox uid owns
        # none. Not for root (exempt) nor a grader's own uid (its desktop counts too).
        rlimits.append(f"--nproc={limits.processes}")
    rlimits.append("--")
    if not (status.isolated and limits.enabled):
        home = rundir / "home"  # its working folder too (see Sandbox._fresh_home)
        env = [f"{k}={v}" for k, v in kernel_env(str(home)).items()]
        return ["env", "-i", f"--chdir={home}", *env, *_drop(uid), *rlimits, *cmd]
    args = _bwrap(uid) + (["--as-pid-1"] if pid_1 else [])
    args += ["--perms", "1777", "--size", str(limits.scratch_mb * 2**20), "--tmpfs", "/tmp"]
    # Everything else starts out absent; the folders on the way to what is shown are made
    # (readable: bwrap would make them private to root).
    shown = [p for p in shown_paths() if not _visible(p)]
    made: list[Path] = [Path("/"), Path("/tmp")]
    for path in shown:
        for up in reversed(path.parents):
            if up not in made and not _visible(up):
                made.append(up)
                args += ["--perms", "0755", "--dir", str(up)]
    for path in shown:
        args += ["--ro-bind", str(path), str(path)]
    empty = rundir / "empty"  # what a hidden folder shows: nothing, read-only
    for path in sorted({Path(p) for p in limits.hide if Path(p).is_dir()}):  # in what is shown
        args += ["--ro-bind", str(empty), str(path)]
    args += ["--perms", f"{RUN_MODE:04o}", "--dir", INSIDE_RUN]
    if connection_file is not None:  # a copy, read from fd 4 (see Sandbox.wrap): no host path
        args += ["--perms", "0444", "--ro-bind-data", str(CONNECTION_FD), INSIDE_CONNECTION]
    args += ["--perms", f"{SCRATCH_MODE:04o}", "--dir", SCRATCH, "--chdir", SCRATCH]
    # Only the scratch (/tmp) stays writable: not the sandbox's root, not /dev (a tmpfs that an
    # unprivileged bwrap would leave to the kernel's user, outside the scratch limit).
    args += ["--remount-ro", "/dev", "--remount-ro", "/", "--clearenv"]
    for key, value in kernel_env().items():
        args += ["--setenv", key, value]
    if connection_file is not None:
        cmd = [INSIDE_CONNECTION if arg == str(connection_file) else arg for arg in cmd]
    return [*args, "--", *_drop(uid), *rlimits, *cmd]


def refusal(limits: Limits, notebooks: Iterable[str]) -> dict | None:
    """Where no kernel may start (mode :data:`REFUSED` under ``limits``): what the worker of a
    student would report (``worker.py``'s result), every notebook not graded and why
    (:data:`NOT_ISOLATED`), so that no worker starts at all. None where kernels may run."""
    if probe().mode(limits) != REFUSED:
        return None
    entry = {"graded": False, "error": NOT_ISOLATED, "timeouts": [], "seconds": 0.0}
    return {"done": False, "notebooks": {n: {**entry, "verdicts": {}} for n in notebooks}}


class Sandbox:
    """One worker's sandbox: its private folder (connection files, bwrap's arguments), its uid
    and its mode (:meth:`Status.mode`)."""

    def __init__(self, limits: Limits, status: Status | None = None):
        self.limits = limits
        self.status = status or probe()
        self.mode = self.status.mode(limits)
        root = os.geteuid() == 0
        if self.mode == OWN_USER and not root:  # a Status made up elsewhere: no uid to drop to
            allowed = limits.allow_unisolated or not limits.enabled
            self.mode = UNISOLATED if allowed else REFUSED
        own_uid = self.mode == OWN_USER or (self.mode == BWRAP and self.status.unprivileged)
        own_uid = own_uid and root
        self._uid_lock = None
        self.uid: int | None = None
        if own_uid:
            self.uid, self._uid_lock = _claim_uid(os.getpid())
            if self.mode == OWN_USER:
                _kill_uid(self.uid)  # what a crashed worker's kernel of this uid left behind
        # [sandbox] fork_kernels: the kernels of this student forked from one zygote
        self.forking = self.mode == BWRAP and limits.fork_kernels
        self.zygote: zygote.Zygote | None = None
        self.forked_root: str | None = None  # the last kernel's sandbox root, when forked
        self.rundir = Path(tempfile.mkdtemp(prefix="a3-sbx-"))
        (self.rundir / "empty").mkdir()
        self.home = self.rundir / "home"  # the kernel's HOME and working folder outside bwrap
        if self.mode == OWN_USER:
            self.rundir.chmod(0o711)  # its uid passes through to its own home and connection file
        if not self.isolated:
            self._fresh_home()

    @property
    def isolated(self) -> bool:
        return self.mode == BWRAP

    def _fresh_home(self) -> None:
        """An empty HOME for the next kernel: of its own uid (``0700``), every process of that
        uid killed first (outside bwrap, nothing else ends what the last kernel started)."""
        if self.mode == OWN_USER:
            _kill_uid(self.uid)
        shutil.rmtree(self.home, ignore_errors=True)
        self.home.mkdir(mode=0o700)
        if self.mode == OWN_USER:
            os.chown(self.home, self.uid, self.uid)

    def configure(self, cfg) -> None:
        """Make the kernels of nbgrader's Config ``cfg`` start through this sandbox (what runs
        them: ``gradeexec.configure``). A kernel of its own uid: the grader's folders
        (:func:`private_paths` of ``cfg.CourseDirectory.root``) made unreadable to it first
        (:func:`protect`)."""
        if self.mode == OWN_USER:
            course_dir = cfg.CourseDirectory.root
            protect(private_paths(course_dir if isinstance(course_dir, str) else os.getcwd()))
        # A fresh kernel for every notebook; its connection file in this worker's own folder.
        os.environ["JUPYTER_RUNTIME_DIR"] = str(self.rundir)
        # Unix sockets in every mode: TCP ports are picked free, then bound by the kernel, and
        # a kernel starting meanwhile in another worker can take one (the kernel then dies
        # before it replies: a "failed" notebook for a student who did nothing wrong).
        cfg.KernelManager.transport = "ipc"
        SandboxKernelManager.sandbox = self

    def wrap(self, cmd: list[str], connection_file: str) -> list[str]:
        """The kernel command, sandboxed; the connection file readable by the kernel.
        Isolated, bwrap reads its options from a file (``--args``) and copies the connection
        file in from a descriptor, so neither the sandbox's process list nor its mount table
        shows a host path of the grader's. In mode :data:`REFUSED` no kernel starts."""
        if self.mode == REFUSED:
            raise RuntimeError(f"{NOT_ISOLATED} ({self.status.why(self.limits)})")
        self.forked_root = None
        if self.forking:
            try:
                stub = self._forked(cmd, connection_file)
                self.forked_root = self.zygote.root
                return stub
            except zygote.ZygoteError as err:  # a kernel of its own instead, for good
                logging.warning("kernels are not forked for this student: %s", err)
                self.forking = False
                self._end_zygote()
        if not self.isolated:
            self._fresh_home()
            if self.uid is not None and os.path.exists(connection_file):
                os.chown(connection_file, self.uid, self.uid)  # read by the kernel in place
        connection = Path(connection_file)
        args = kernel_command(cmd, self.rundir, self.limits, self.status, self.uid, connection)
        if not self.isolated:
            return args
        return self._bwrap_command(args, connection_file)

    def _bwrap_command(self, args: list[str], connection_file: str | None) -> list[str]:
        """``args`` (bwrap's), its options read from a file, the connection file (if any) from
        a descriptor."""
        end = args.index("--")  # bwrap's options go in the file, the command stays
        argfile = self.rundir / f"bwrap-{uuid.uuid4().hex[:12]}.args"
        argfile.write_bytes(b"".join(a.encode() + b"\0" for a in args[1:end]))
        if connection_file is None:
            shell = f'args="$1"; shift; exec bwrap --args {ARGS_FD} "$@" {ARGS_FD}<"$args"'
            return ["/bin/sh", "-c", shell, "sandbox", str(argfile), *args[end:]]
        shell = (
            f'args="$1"; conn="$2"; shift 2; exec bwrap --args {ARGS_FD} "$@" '
            f'{ARGS_FD}<"$args" {CONNECTION_FD}<"$conn"'
        )
        return ["/bin/sh", "-c", shell, "sandbox", str(argfile), connection_file, *args[end:]]

    def _forked(self, cmd: list[str], connection_file: str) -> list[str]:
        """The next kernel as a fork of this student's zygote (started on the first kernel,
        again if a kernel ended it), the sandbox put back as a fresh one first: what
        jupyter_client starts (the stub). :class:`ZygoteError` where that cannot be."""
        _, args = zygote.kernel_args(cmd)
        if self.zygote is not None and not self.zygote.alive():
            self._end_zygote()
        if self.zygote is None:
            inside = zygote.program(cmd, INSIDE_CONNECTION, SCRATCH, self.limits.preload)
            limits, status = self.limits, self.status
            command = kernel_command(inside, self.rundir, limits, status, self.uid, pid_1=True)
            folders = {SCRATCH: SCRATCH_MODE, INSIDE_RUN: RUN_MODE}
            self.zygote = zygote.Zygote(self._bwrap_command(command, None), self.rundir, folders)
        else:
            self.zygote.reset()
        return self.zygote.stub(connection_file, args)

    def _end_zygote(self) -> None:
        if self.zygote is not None:
            self.zygote.close()
            self.zygote = None

    def cleanup(self) -> None:
        self._end_zygote()
        if self.mode == OWN_USER and self.uid is not None:
            _kill_uid(self.uid)
        shutil.rmtree(self.rundir, ignore_errors=True)
        if self._uid_lock is not None:
            self._uid_lock.close()
            self._uid_lock = None


class SandboxKernelManager(AsyncKernelManager):
    """A kernel manager whose kernels start in :attr:`sandbox` (set by :meth:`Sandbox.configure`).

    Isolated, the kernel makes its sockets inside its own scratch file system; this side
    reaches them through ``/proc/<sandbox pid>/root`` once the sandbox is up. As its own uid
    (no bwrap), it makes them in its private HOME, which no other user can enter. Interrupts go
    to the kernel as messages (``interrupt_request``): a signal to the kernel's process group
    would reach bwrap's own process and end the sandbox with the kernel."""

    sandbox: Sandbox | None = None

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        if self.sandbox is not None:  # the connection file: in the worker's own folder
            name = f"kernel-{uuid.uuid4().hex[:12]}.json"
            self.connection_file = str(self.sandbox.rundir / name)
            if self.sandbox.isolated:
                self.transport = "ipc"
                self.ip = SOCKET_PREFIX  # where the kernel, inside, makes its sockets
            elif self.sandbox.mode == OWN_USER:
                self.transport = "ipc"
                self.ip = str(self.sandbox.home / ".kernel")
            else:  # unisolated: in the worker's own folder (see Sandbox.configure)
                self.transport = "ipc"
                self.ip = str(self.sandbox.rundir / "kernel")

    def format_kernel_cmd(self, extra_arguments: list[str] | None = None) -> list[str]:
        cmd = super().format_kernel_cmd(extra_arguments)
        if self.sandbox is None:
            return cmd
        self.kernel_spec.interrupt_mode = "message"
        return self.sandbox.wrap(cmd, self.connection_file)

    async def _async_launch_kernel(self, kernel_cmd: list[str], **kw) -> None:
        await super()._async_launch_kernel(kernel_cmd, **kw)
        if self.sandbox is not None and self.sandbox.isolated:
            root = self.sandbox.forked_root or await _sandbox_root(self.provisioner.process.pid)
            self.ip = f"{root}{SOCKET_PREFIX}"  # the same sockets, seen from outside


async def _sandbox_root(bwrap_pid: int, seconds: float = 20.0) -> str:
    """``/proc/<pid>/root`` of the sandbox bwrap ``bwrap_pid`` started (its first child)."""
    import asyncio

    import psutil

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            children = psutil.Process(bwrap_pid).children()
        except psutil.NoSuchProcess:
            break
        if children:
            return f"/proc/{children[0].pid}/root"
        await asyncio.sleep(0.02)
    raise RuntimeError("the sandbox did not start (bwrap exited or hung)")
