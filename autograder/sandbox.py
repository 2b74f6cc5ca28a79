"""The grading sandbox: every kernel that runs student code is isolated and limited.

nbgrader runs a student's notebook, tests included, in one Jupyter kernel. ``worker.py`` makes
nbgrader start that kernel through :class:`SandboxKernelManager`, which wraps the kernel's
command so that, when bubblewrap (``bwrap``) works on this machine:

- the file system holds only what a kernel needs, read-only: the system folders (``SYSTEM``:
  ``/usr``, ``/etc``, ``/lib``...), the Python installation and ``course_lib``. Nothing else
  of the machine exists in it: not the repository (``solutions/``, the gradebook, every
  submission, the autograder itself), not the course directory, not other checkouts, ``/root``,
  ``/home`` or the host's ``/tmp``. ``[sandbox] hide`` of ``course.toml`` empties folders
  inside what is shown (``/etc/secrets``);
- the kernel's working directory is a fresh, size-limited scratch file system (``/tmp``;
  ``/tmp/work`` is its ``HOME``), the only place it can write (the rest, the sandbox's own
  root included, is read-only), emptied after every notebook. Its Unix sockets live there
  too: nbgrader reaches them through ``/proc/<pid>/root`` (``KernelManager.transport =
  "ipc"``), so everything the kernel writes counts against ``scratch_mb``;
- it has no network (its own empty network namespace), its own process namespace (it sees and
  can signal only its own processes: not nbgrader, not the grader, not other students'
  kernels), no capabilities, and a fixed environment (:func:`kernel_env`: no variable of the
  grader's shell); bwrap reads its own arguments from a file, so no host path of the
  grader's shows in the sandbox's process list;
- when the grader runs as root, the kernel runs as an unprivileged user of its own (a
  numeric uid per worker), which also makes the process limit count only its processes.

Always, with or without bwrap (``prlimit``, util-linux): an address-space (memory) limit, a
limit on the size of any file written, no core files and, for an unprivileged kernel, a
process limit. ``gradeexec.GradeExecute`` (nbgrader's ``Execute``) adds a cap on the output a cell
may keep and a time limit for the whole notebook on top of nbgrader's per-cell limit.

Where bwrap is missing or does not work (no user namespaces), grading still runs: the limits
above apply, :func:`probe` says why isolation is off and :meth:`Status.describe` lists what is
not enforced; ``make grade`` prints it and writes it into the summary.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import shutil
import site
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from jupyter_client.manager import AsyncKernelManager

from .limits import Limits

# All the sandbox shows of the machine's own folders, read-only (with Python and course_lib).
SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
SCRATCH = "/tmp/work"  # the kernel's working directory and HOME inside the sandbox
UID_BASE = 61000  # sandbox uids are UID_BASE + (worker pid % 4000) when grading as root


@dataclass(frozen=True)
class Status:
    """What the sandbox can enforce on this machine."""

    isolated: bool  # bwrap works: files, network and processes isolated
    unprivileged: bool  # kernels run as their own unprivileged uid (the grader is root)
    reason: str = ""  # why isolation is off

    def describe(self, limits: Limits) -> list[str]:
        """Lines for the grading log and summary: what is enforced and what is not."""
        enforced = [
            f"memory {limits.memory_mb} MB",
            f"files {limits.file_mb} MB",
            f"output {limits.output_kb} KB per cell",
            f"{limits.notebook_seconds} s per notebook",
        ]
        if self.unprivileged:
            enforced.append(f"{limits.processes} processes")
        lines = []
        if self.isolated:
            lines.append(
                "sandbox: bubblewrap: course files hidden, read-only system, private scratch "
                f"({limits.scratch_mb} MB), no network, own process namespace"
                + (", unprivileged user" if self.unprivileged else "")
            )
        else:
            lines.append(f"sandbox: NOT ISOLATED ({self.reason})")
            lines.append(
                "  not enforced: student code can read the course files (solutions, gradebook, "
                "other submissions), write where the grader can, reach the network and signal "
                "other processes; grade untrusted submissions in a throwaway VM or container"
            )
        if not self.unprivileged:
            lines.append("  not enforced: process limit (needs the grader to run as root)")
        lines.append("  limits: " + ", ".join(enforced))
        return lines


def _drop(uid: int | None) -> list[str]:
    """Become ``uid`` (from root; the capabilities go with it): nothing when ``uid`` is None."""
    if uid is None:
        return []
    return [
        "setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--inh-caps=-all", "--",
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


@functools.lru_cache(maxsize=1)
def probe() -> Status:
    """Find out once whether bwrap isolates kernels here (it needs user namespaces)."""
    root = os.geteuid() == 0
    unprivileged = root and shutil.which("setpriv") is not None
    if shutil.which("bwrap") is None:
        return Status(False, unprivileged, "bubblewrap not installed: apt-get install bubblewrap")
    if shutil.which("prlimit") is None:
        return Status(False, False, "prlimit (util-linux) not found")
    uid = UID_BASE if unprivileged else None
    cmd = [*_bwrap(uid), "--", *_drop(uid), "true"]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as err:
        return Status(False, unprivileged, f"bwrap failed: {err}")
    if proc.returncode != 0:
        return Status(False, unprivileged, f"bwrap failed: {proc.stderr.strip()[:200]}")
    return Status(True, unprivileged)


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


INSIDE_RUN = "/tmp/.kernel"  # the kernel's connection file and sockets, inside its scratch
ARGS_FD, CONNECTION_FD = 3, 4  # what bwrap reads its options and the connection file from
INSIDE_CONNECTION = f"{INSIDE_RUN}/connection.json"
SOCKET_PREFIX = f"{INSIDE_RUN}/kernel"  # ipc sockets: {SOCKET_PREFIX}-{port}


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
) -> list[str]:
    """``cmd`` (the kernel's command) run in the sandbox, with the limits and a fixed
    environment. Isolated, the kernel reads ``connection_file`` (read-only) at
    :data:`INSIDE_CONNECTION` and makes its sockets next to it, in its size-limited scratch
    file system: it can write nowhere else (``rundir`` stays the grader's)."""
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
        home = rundir / "home"
        env = [f"{k}={v}" for k, v in kernel_env(str(home)).items()]
        return ["env", "-i", *env, *_drop(uid), *rlimits, *cmd]
    args = _bwrap(uid)
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
    args += ["--perms", "1777", "--dir", INSIDE_RUN]
    if connection_file is not None:  # a copy, read from fd 4 (see Sandbox.wrap): no host path
        args += ["--perms", "0444", "--ro-bind-data", str(CONNECTION_FD), INSIDE_CONNECTION]
    args += ["--perms", "0777", "--dir", SCRATCH, "--chdir", SCRATCH]
    # Only the scratch (/tmp) stays writable: not the sandbox's root, not /dev (a tmpfs that an
    # unprivileged bwrap would leave to the kernel's user, outside the scratch limit).
    args += ["--remount-ro", "/dev", "--remount-ro", "/", "--clearenv"]
    for key, value in kernel_env().items():
        args += ["--setenv", key, value]
    if connection_file is not None:
        cmd = [INSIDE_CONNECTION if arg == str(connection_file) else arg for arg in cmd]
    return [*args, "--", *_drop(uid), *rlimits, *cmd]


class Sandbox:
    """One worker's sandbox: its private folder (connection files, bwrap's arguments) and uid."""

    def __init__(self, limits: Limits, status: Status | None = None):
        import tempfile

        self.limits = limits
        self.status = status or probe()
        # Its own uid only in isolation: outside it, a kernel must read the course as the grader.
        own_uid = os.geteuid() == 0 and self.status.unprivileged and self.isolated
        self.uid = UID_BASE + os.getpid() % 4000 if own_uid else None
        self.rundir = Path(tempfile.mkdtemp(prefix="a3-sbx-"))
        (self.rundir / "empty").mkdir()
        if not self.isolated:  # the kernel's HOME: a folder of the grader's
            (self.rundir / "home").mkdir()
            if self.uid is not None:
                os.chown(self.rundir / "home", self.uid, self.uid)

    @property
    def isolated(self) -> bool:
        return self.status.isolated and self.limits.enabled

    def configure(self, cfg) -> None:
        """Make nbgrader's Autograde run kernels through this sandbox (``cfg``: its Config)."""
        from nbgrader.converters import Autograde
        from nbgrader.preprocessors import Execute

        from .gradeexec import GradeExecute
        from .sanitise import SanitiseOutputs

        steps = Autograde.class_traits()["autograde_preprocessors"].default()
        cfg.Autograde.autograde_preprocessors = [
            GradeExecute if step is Execute else step for step in steps
        ] + [SanitiseOutputs]
        cfg.GradeExecute.notebook_timeout = self.limits.notebook_seconds
        cfg.GradeExecute.max_output_chars = self.limits.output_kb * 1024
        # A fresh kernel for every notebook; its connection file in this worker's own folder.
        os.environ["JUPYTER_RUNTIME_DIR"] = str(self.rundir)
        if self.isolated:
            cfg.KernelManager.transport = "ipc"
        SandboxKernelManager.sandbox = self

    def wrap(self, cmd: list[str], connection_file: str) -> list[str]:
        """The kernel command, sandboxed; the connection file readable by the kernel.
        Isolated, bwrap reads its options from a file (``--args``) and copies the connection
        file in from a descriptor, so neither the sandbox's process list nor its mount table
        shows a host path of the grader's."""
        if not self.isolated and self.uid is not None and os.path.exists(connection_file):
            os.chown(connection_file, self.uid, self.uid)  # read by the kernel in place
        args = kernel_command(
            cmd, self.rundir, self.limits, self.status, self.uid, Path(connection_file)
        )
        if not self.isolated:
            return args
        end = args.index("--")  # bwrap's options go in the file, the command stays
        argfile = self.rundir / f"bwrap-{uuid.uuid4().hex[:12]}.args"
        argfile.write_bytes(b"".join(a.encode() + b"\0" for a in args[1:end]))
        shell = (
            f'args="$1"; conn="$2"; shift 2; exec bwrap --args {ARGS_FD} "$@" '
            f'{ARGS_FD}<"$args" {CONNECTION_FD}<"$conn"'
        )
        return ["/bin/sh", "-c", shell, "sandbox", str(argfile), connection_file, *args[end:]]

    def cleanup(self) -> None:
        shutil.rmtree(self.rundir, ignore_errors=True)


class SandboxKernelManager(AsyncKernelManager):
    """A kernel manager whose kernels start in :attr:`sandbox` (set by :meth:`Sandbox.configure`).

    Isolated, the kernel makes its sockets inside its own scratch file system; this side
    reaches them through ``/proc/<sandbox pid>/root`` once the sandbox is up. Interrupts go to
    the kernel as messages (``interrupt_request``): a signal to the kernel's process group
    would reach bwrap's own process and end the sandbox with the kernel."""

    sandbox: Sandbox | None = None

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        if self.sandbox is not None:  # the connection file: in the worker's own folder
            name = f"kernel-{uuid.uuid4().hex[:12]}.json"
            self.connection_file = str(self.sandbox.rundir / name)
            if self.sandbox.isolated:
                self.ip = SOCKET_PREFIX  # where the kernel, inside, makes its sockets

    def format_kernel_cmd(self, extra_arguments: list[str] | None = None) -> list[str]:
        cmd = super().format_kernel_cmd(extra_arguments)
        if self.sandbox is None:
            return cmd
        self.kernel_spec.interrupt_mode = "message"
        return self.sandbox.wrap(cmd, self.connection_file)

    async def _async_launch_kernel(self, kernel_cmd: list[str], **kw) -> None:
        await super()._async_launch_kernel(kernel_cmd, **kw)
        if self.sandbox is not None and self.sandbox.isolated:
            root = await _sandbox_root(self.provisioner.process.pid)
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
