"""What isolates grading kernels on this machine: the probe, the modes, the sandbox uids.

:func:`probe` finds out once what this machine allows (bwrap, which needs user namespaces or
root; a uid of its own for a kernel, which needs root, ``setpriv`` and a Python an unprivileged
user can run); :meth:`Status.mode` turns that and the course's ``[sandbox]`` settings into one
of the modes ``sandbox.py`` describes (:data:`BWRAP`, :data:`OWN_USER`, :data:`UNISOLATED`,
:data:`REFUSED`). A worker that runs its kernels as a uid of their own claims one no other
worker holds (:func:`claim_uid`), becomes it through :func:`drop` and ends what it left with
:func:`kill_uid`; :func:`bwrap_options` are the namespace options every bwrap command starts
with.
"""

from __future__ import annotations

import fcntl
import functools
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from autograder.course.limits import Limits

# All the sandbox shows of the machine's own folders, read-only (with Python and course_lib).
SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
UID_BASE = 61000  # sandbox uids: UID_BASE to UID_BASE + UID_COUNT - 1, one per worker (as root)
UID_COUNT = 4000
UID_LOCKS = ("/run/a3-sandbox-uids", f"{tempfile.gettempdir()}/a3-sandbox-uids")  # first usable

# The modes of :meth:`Status.mode` (see ``sandbox.py``'s docstring).
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


def drop(uid: int | None) -> list[str]:
    """Become ``uid`` (from root; no groups, and the capabilities go with it, for good: no new
    privileges through setuid or file-capability programs): nothing when ``uid`` is None."""
    if uid is None:
        return []
    return [
        "setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--inh-caps=-all",
        "--no-new-privs", "--",
    ]  # fmt: skip


def bwrap_options(uid: int | None) -> list[str]:
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
    cmd = [*drop(uid), sys.executable, "-I", "-c", _UID_CHECK, sys.version, sys.base_prefix]
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
        uid, lock = claim_uid(os.getpid())
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
    cmd = [*bwrap_options(uid), "--", *drop(uid), "true"]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as err:
        return Status(False, unprivileged, f"bwrap failed: {err}", uid_problem)
    if proc.returncode != 0:
        reason = f"bwrap failed: {proc.stderr.strip()[:200]}"
        return Status(False, unprivileged, reason, uid_problem)
    return Status(True, unprivileged, "", uid_problem)


def claim_uid(start: int):
    """A sandbox uid that no other worker on this machine holds, and the open lock file that
    holds it (released when the file is closed, or the worker ends). Two workers sharing a uid
    could see each other's kernels (and the kill of ``sandbox.Sandbox._fresh_home`` would end the
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


def kill_uid(uid: int) -> None:
    """Kill every process of ``uid`` (``kill(-1)`` as that uid: all of its processes but the
    one killing), what a kernel of its own uid left running (a daemon, a fork bomb's rest)."""
    cmd = [*drop(uid), sys.executable, "-I", "-S", "-c", _KILL_ALL]
    subprocess.run(cmd, cwd="/", env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
                   capture_output=True, timeout=60, check=False)  # fmt: skip
