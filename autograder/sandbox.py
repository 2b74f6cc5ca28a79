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
- the kernel's working directory is a fresh, size-limited scratch folder (``/tmp/work``,
  also its ``HOME``), the only place it can write, emptied after every notebook;
- it has no network (its own empty network namespace: the kernel talks to nbgrader over Unix
  sockets in a private folder, ``KernelManager.transport = "ipc"``), its own process
  namespace (it sees and can signal only its own processes: not nbgrader, not the grader, not
  other students' kernels) and no capabilities;
- when the grader runs as root, the kernel runs as an unprivileged user of its own (a
  numeric uid per worker), which also makes the process limit count only its processes.

Always, with or without bwrap (``prlimit``, util-linux): an address-space (memory) limit, a
limit on the size of any file written, no core files and, for an unprivileged kernel, a
process limit. :class:`GradeExecute` (nbgrader's ``Execute``) adds a cap on the output a cell
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
from nbformat import NotebookNode
from traitlets import Integer

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


def kernel_command(
    cmd: list[str],
    rundir: Path,
    limits: Limits,
    status: Status,
    uid: int | None,
) -> list[str]:
    """``cmd`` (the kernel's command) run in the sandbox, with the limits."""
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
        return [*_drop(uid), *rlimits, *cmd]
    args = _bwrap(uid)
    args += ["--perms", "1777", "--size", str(limits.scratch_mb * 2**20), "--tmpfs", "/tmp"]
    # Everything else starts out absent; the folders on the way to what is shown are made
    # (readable: bwrap would make them private to root).
    shown = [p for p in shown_paths() if not _visible(p)]
    made: list[Path] = [Path("/"), Path("/tmp")]
    for path in [*shown, rundir]:
        for up in reversed(path.parents):
            if up not in made and not _visible(up):
                made.append(up)
                args += ["--perms", "0755", "--dir", str(up)]
    for path in shown:
        args += ["--ro-bind", str(path), str(path)]
    for path in sorted({Path(p) for p in limits.hide if Path(p).is_dir()}):  # in what is shown
        args += ["--tmpfs", str(path)]
    args += ["--bind", str(rundir), str(rundir)]
    args += ["--perms", "0777", "--dir", SCRATCH, "--chdir", SCRATCH]
    env = {
        "HOME": SCRATCH,
        "TMPDIR": SCRATCH,
        "XDG_CACHE_HOME": f"{SCRATCH}/.cache",
        "MPLCONFIGDIR": str(rundir / "mpl"),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
    }
    for key, value in env.items():
        args += ["--setenv", key, value]
    # ipykernel exits when its parent's pid is not JPY_PARENT_PID, which no pid in the
    # sandbox is (bwrap's --die-with-parent ends the kernel with nbgrader instead).
    args += ["--unsetenv", "JPY_PARENT_PID"]
    return [*args, "--", *_drop(uid), *rlimits, *cmd]


class Sandbox:
    """One worker's sandbox: its private folder (connection files, sockets, caches) and uid."""

    def __init__(self, limits: Limits, status: Status | None = None):
        import tempfile

        self.limits = limits
        self.status = status or probe()
        # Its own uid only in isolation: outside it, a kernel must read the course as the grader.
        own_uid = os.geteuid() == 0 and self.status.unprivileged and self.isolated
        self.uid = UID_BASE + os.getpid() % 4000 if own_uid else None
        self.rundir = Path(tempfile.mkdtemp(prefix="a3-sbx-"))
        (self.rundir / "mpl").mkdir()
        if self.uid is not None:
            for path in (self.rundir, self.rundir / "mpl"):
                os.chown(path, self.uid, self.uid)

    @property
    def isolated(self) -> bool:
        return self.status.isolated and self.limits.enabled

    def configure(self, cfg) -> None:
        """Make nbgrader's Autograde run kernels through this sandbox (``cfg``: its Config)."""
        from nbgrader.converters import Autograde
        from nbgrader.preprocessors import Execute

        steps = Autograde.class_traits()["autograde_preprocessors"].default()
        cfg.Autograde.autograde_preprocessors = [
            GradeExecute if step is Execute else step for step in steps
        ]
        cfg.GradeExecute.notebook_timeout = self.limits.notebook_seconds
        cfg.GradeExecute.max_output_chars = self.limits.output_kb * 1024
        # A fresh kernel for every notebook: the same runtime folder for the connection file
        # and its sockets, which the sandbox shares with nbgrader.
        os.environ["JUPYTER_RUNTIME_DIR"] = str(self.rundir)
        if self.isolated:
            cfg.KernelManager.transport = "ipc"
        SandboxKernelManager.sandbox = self

    def wrap(self, cmd: list[str], connection_file: str) -> list[str]:
        """The kernel command, sandboxed; the connection file made readable by the kernel."""
        if self.uid is not None and os.path.exists(connection_file):
            os.chown(connection_file, self.uid, self.uid)
        return kernel_command(cmd, self.rundir, self.limits, self.status, self.uid)

    def cleanup(self) -> None:
        shutil.rmtree(self.rundir, ignore_errors=True)


class SandboxKernelManager(AsyncKernelManager):
    """A kernel manager whose kernels start in :attr:`sandbox` (set by :meth:`Sandbox.configure`).

    Interrupts go to the kernel as messages (``interrupt_request``): a signal to the kernel's
    process group would reach bwrap's own process and end the sandbox with the kernel."""

    sandbox: Sandbox | None = None

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        if self.sandbox is not None:  # the connection file and its sockets: in the shared folder
            name = f"kernel-{uuid.uuid4().hex[:12]}.json"
            self.connection_file = str(self.sandbox.rundir / name)

    def format_kernel_cmd(self, extra_arguments: list[str] | None = None) -> list[str]:
        cmd = super().format_kernel_cmd(extra_arguments)
        if self.sandbox is None:
            return cmd
        self.kernel_spec.interrupt_mode = "message"
        return self.sandbox.wrap(cmd, self.connection_file)


def _execute_class():
    from nbgrader.preprocessors import Execute

    return Execute


class GradeExecute(_execute_class()):
    """nbgrader's Execute with a time limit for the whole notebook and a cap on each cell's
    kept output (a cell printing without end would otherwise fill the grader's memory)."""

    notebook_timeout = Integer(1200, help="seconds for the whole notebook").tag(config=True)
    max_output_chars = Integer(512 * 1024, help="output characters kept per cell").tag(config=True)
    _deadline: float | None = None
    _kept: dict[int, int] = {}  # characters of output seen per cell index (reset per notebook)

    def __init__(self, *args, **kwargs):
        # nbgrader's Execute passes its own kernel manager class as an argument (config loses).
        kwargs.setdefault("kernel_manager_class", SandboxKernelManager)
        super().__init__(*args, **kwargs)

    def preprocess(self, nb: NotebookNode, resources=None, km=None):
        self._deadline = time.monotonic() + self.notebook_timeout
        self._kept = {}
        return super().preprocess(nb, resources, km)

    def _remaining(self) -> float:
        return (self._deadline or float("inf")) - time.monotonic()

    def _get_timeout(self, cell: NotebookNode | None) -> int | None:
        timeout = super()._get_timeout(cell)
        remaining = max(1, int(self._remaining()))
        return remaining if timeout is None else min(timeout, remaining)

    async def async_execute_cell(self, cell, cell_index, execution_count=None, store_history=True):
        if cell.cell_type == "code" and self._remaining() <= 0:
            cell.outputs = [
                NotebookNode(
                    output_type="error",
                    ename="CellTimeoutError",
                    evalue="",
                    traceback=[
                        f"CellTimeoutError: not run, the notebook's time limit "
                        f"({self.notebook_timeout} s) was used up"
                    ],
                )
            ]
            return cell
        return await super().async_execute_cell(cell, cell_index, execution_count, store_history)

    def output(self, outs, msg, display_id, cell_index):
        content = msg.get("content", {})
        size = len(str(content.get("text", ""))) + sum(
            len(str(v)) for v in content.get("data", {}).values()
        )
        kept = self._kept.get(cell_index, 0)
        self._kept[cell_index] = kept + size
        if kept + size <= self.max_output_chars:
            return super().output(outs, msg, display_id, cell_index)
        if kept <= self.max_output_chars:  # the first output over the cap: say so, once
            note = NotebookNode(
                output_type="stream",
                name="stdout",
                text=f"\n... output truncated by the autograder ({self.max_output_chars} "
                "characters kept) ...\n",
            )
            outs.append(note)
        return None
