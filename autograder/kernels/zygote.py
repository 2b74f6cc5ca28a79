"""The grader's side of forked kernels (``[sandbox] fork_kernels``): one zygote per student.

:class:`Zygote` starts ``forkkernel.py``'s zygote in a bubblewrap sandbox of its own (the
command :meth:`sandbox.Sandbox.wrap` makes, limits included), and gives every notebook of the
student a kernel forked from it, through ``forkkernel.py``'s stub. Between two kernels it
puts the sandbox back as a fresh one would be (:meth:`Zygote.reset`): every process but the
zygote killed, the scratch file system emptied. Anything that goes wrong with it raises
:class:`ZygoteError`, and the sandbox starts a kernel of its own as without forking.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import time
from pathlib import Path

from autograder.kernels.processes import kill_all, running

PROGRAM = Path(__file__).with_name("forkkernel.py")  # standard library only (runs inside too)
INSIDE_FOLDER = "/tmp/.zygote"  # its socket, in the scratch: kept by reset
INSIDE_SOCKET = f"{INSIDE_FOLDER}/socket"
START_SECONDS = 120.0  # imports included (torch: a few seconds, more on a loaded machine)
LAUNCHER = "ipykernel_launcher"  # the only kernel it forks: `python ... -m ipykernel_launcher`


class ZygoteError(RuntimeError):
    """The zygote cannot give a kernel (the grader then starts one of its own)."""


def program(kernel_cmd: list[str], connection: str, home: str, modules: tuple[str, ...]):
    """The zygote's command, run inside the sandbox: the kernel's Python and its options, the
    program's text (the sandbox does not show the autograder), where each kernel finds its
    ``connection`` file and works (``home``), and what it preloads."""
    python, _ = kernel_args(kernel_cmd)
    source = PROGRAM.read_text()
    return [*python, "-c", source, "zygote", INSIDE_SOCKET, connection, home, *modules]


def kernel_args(kernel_cmd: list[str]) -> tuple[list[str], list[str]]:
    """``[python, *options, -m, ipykernel_launcher, -f, CONNECTION, *args]`` split into the
    Python with its options and the kernel's ``args``; :class:`ZygoteError` for another
    kernel command."""
    try:
        at = kernel_cmd.index("-m")
    except ValueError:
        raise ZygoteError("not an ipykernel command") from None
    if kernel_cmd[at + 1 : at + 2] != [LAUNCHER]:
        raise ZygoteError("not an ipykernel command")
    args = list(kernel_cmd[at + 2 :])
    if "-f" in args:
        i = args.index("-f")
        del args[i : i + 2]
    return kernel_cmd[:at], args


class Zygote:
    """A student's zygote, running in the sandbox ``command`` starts; its log in ``rundir``.
    ``folders``: what :meth:`reset` makes again in the emptied scratch (path inside, mode)."""

    def __init__(self, command: list[str], rundir: Path, folders: dict[str, int]):
        import psutil

        self.folders = folders
        self.log = rundir / "zygote.log"
        with open(self.log, "wb") as log:
            self.process = subprocess.Popen(
                command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True,
            )  # fmt: skip
        try:
            self.pid = self._started()
            self.created = psutil.Process(self.pid).create_time()
        except (ZygoteError, psutil.Error) as err:
            self.close()
            raise ZygoteError(str(err)) from None
        self.root = f"/proc/{self.pid}/root"
        self.socket = f"{self.root}{INSIDE_SOCKET}"

    def _started(self) -> int:
        """The zygote's pid, once its socket is there."""
        import psutil

        deadline = time.monotonic() + START_SECONDS
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise ZygoteError(f"the zygote exited ({self._said()})")
            try:
                inside = [
                    p for p in psutil.Process(self.process.pid).children(recursive=True)
                    if p.name() != "bwrap"
                ]  # fmt: skip
            except psutil.Error:
                inside = []
            if len(inside) == 1 and os.path.exists(f"/proc/{inside[0].pid}/root{INSIDE_SOCKET}"):
                return inside[0].pid
            time.sleep(0.02)
        raise ZygoteError(f"the zygote did not start in {START_SECONDS:.0f} s ({self._said()})")

    def _said(self) -> str:
        """The end of the zygote's log (it never ran student code: the grader's own words)."""
        try:
            lines = self.log.read_text(errors="replace").strip().splitlines()
        except OSError:
            return "no log"
        return lines[-1][:200] if lines else "no output"

    def alive(self) -> bool:
        import psutil

        if self.process.poll() is not None:
            return False
        try:
            proc = psutil.Process(self.pid)
            same = proc.create_time() == self.created and running(proc)
        except psutil.Error:
            return False
        return same and self._socket_in_place()

    def _socket_in_place(self) -> bool:
        """Whether the zygote's socket is still a socket in a folder, not a link: the stub
        connects to it from the grader's side, where a link would be followed from the
        machine's own root. (Checked between kernels: nothing but the zygote runs then.)"""
        try:
            folder, socket = os.lstat(f"{self.root}{INSIDE_FOLDER}"), os.lstat(self.socket)
        except OSError:
            return False
        return stat.S_ISDIR(folder.st_mode) and stat.S_ISSOCK(socket.st_mode)

    def stub(self, connection_file: str, args: list[str]) -> list[str]:
        """What jupyter_client starts as the next kernel (call :meth:`reset` first)."""
        return [sys.executable, "-I", "-S", str(PROGRAM), "stub", self.socket, connection_file,
                *args]  # fmt: skip

    def reset(self) -> None:
        """The sandbox as a fresh one: every process but the zygote (and bwrap's own, its
        ancestors) killed, its scratch file system emptied but the zygote's socket, the
        kernel's working folder and runtime folder made again as bwrap made them."""
        import psutil

        try:
            top = psutil.Process(self.process.pid)
            keep = {self.pid, top.pid} | {p.pid for p in psutil.Process(self.pid).parents()}
            for _ in range(50):  # a fork bomb's last forks
                left = [p for p in top.children(recursive=True) if p.pid not in keep and running(p)]
                if not left:
                    break
                kill_all(left)
            else:
                raise ZygoteError("processes of the last kernel could not be killed")
        except psutil.Error as err:
            raise ZygoteError(f"the sandbox is gone ({type(err).__name__})") from None
        scratch = f"{self.root}/tmp"
        try:
            _empty(scratch, os.lstat(scratch).st_dev, keep=Path(INSIDE_FOLDER).name)
            for inside, mode in self.folders.items():
                made = Path(f"{self.root}{inside}")
                made.mkdir()
                made.chmod(mode)
        except OSError as err:
            raise ZygoteError(f"the scratch could not be emptied ({err.strerror})") from None
        except RecursionError:
            raise ZygoteError("the scratch could not be emptied (too deep)") from None

    def close(self) -> None:
        """End the sandbox, the zygote and whatever still runs in it."""
        import psutil

        try:
            top = psutil.Process(self.process.pid)
            kill_all([*top.children(recursive=True), top])
        except psutil.Error:
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass


def _empty(folder: str, device: int, keep: str = "") -> None:
    """Remove what ``folder`` holds on the scratch file system (``device``) but ``keep`` (a
    name in ``folder``). What the sandbox shows is mounted there (a course_lib or a Python in
    ``/tmp`` of the machine): a mount point is another device, never entered nor removed, and
    the folders on the way to one stay (``rmdir`` refuses them)."""
    for entry in os.scandir(folder):
        if entry.name == keep:
            continue
        try:
            info = entry.stat(follow_symlinks=False)
        except FileNotFoundError:
            continue
        if info.st_dev != device:
            continue
        if stat.S_ISDIR(info.st_mode):
            _empty(entry.path, device)
            try:
                os.rmdir(entry.path)
            except OSError:  # it holds a mount point
                pass
        else:
            os.unlink(entry.path)
