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
     numeric uid that no other worker holds, ``isolation.claim_uid``), which also makes the
     process limit count only its processes.

2. **its own user, without namespaces** (:data:`OWN_USER`), where bwrap does not work (or
   ``[sandbox] enabled = false``) but the grader runs as root, ``setpriv`` exists and an
   unprivileged user can run the kernel's Python (``isolation.probe`` tries it). The kernel
   runs as a uid of its own (``setpriv``: no groups, no capabilities, no new privileges), with
   the limits below, a fixed environment, and a fresh private folder as its working folder and
   ``HOME`` (``0700``, owned by that uid; emptied, and every process of that uid killed, before
   each kernel starts and when the worker ends). Before the first kernel starts, :func:`protect`
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

import importlib.util
import logging
import os
import shutil
import site
import stat
import sys
import tempfile
import time
import uuid
from collections.abc import Iterable
from pathlib import Path

from jupyter_client.manager import AsyncKernelManager

from autograder.course.limits import Limits
from autograder.kernels import zygote
from autograder.kernels.isolation import (
    BWRAP,
    NOT_ISOLATED,
    OWN_USER,
    REFUSED,
    SYSTEM,
    UNISOLATED,
    Status,
    bwrap_options,
    claim_uid,
    drop,
    kill_uid,
    probe,
)

SCRATCH = "/tmp/work"  # the kernel's working directory and HOME inside the sandbox


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
    from autograder.course.config import CONFIG_FILE, REPO_ROOT

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
        return ["env", "-i", f"--chdir={home}", *env, *drop(uid), *rlimits, *cmd]
    args = bwrap_options(uid) + (["--as-pid-1"] if pid_1 else [])
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
    return [*args, "--", *drop(uid), *rlimits, *cmd]


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
            self.uid, self._uid_lock = claim_uid(os.getpid())
            if self.mode == OWN_USER:
                kill_uid(self.uid)  # what a crashed worker's kernel of this uid left behind
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
            kill_uid(self.uid)
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
        jupyter_client starts (the stub). ``zygote.ZygoteError`` where that cannot be."""
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
            kill_uid(self.uid)
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
