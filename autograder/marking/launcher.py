"""Starting the worker that grades one student, in the grader's process (``grading.py``,
``canary.py``, ``gradescope.py``): the worker's side, one child process per student, is
``worker.py``.

:func:`run` grades a student in a worker and reads its result file, retrying once after a
fault of the gradebook; the worker is forked from the grading run's fork server
(:func:`launch`), which imported nbgrader and the judge cells' modules once; a worker still
running when the grading run is stopped is killed with its kernels (:func:`kill_running`),
and the temporary folders of workers a killed grader left behind are removed
(:func:`sweep_scratch`).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from autograder.course.limits import Limits
from autograder.course.nbgrader_dir import GradingDir, child_env
from autograder.course.spec import Spec
from autograder.kernels.processes import kill_tree
from autograder.marking import worker


def arguments(
    gdir: GradingDir, student: str, cell_timeout: int, result: Path, limits: Limits
) -> list[str]:
    """The arguments of the worker that grades ``student`` (its kernels sandboxed: see
    ``worker.py``; ``python -m autograder.marking.worker ARGUMENTS`` runs one by hand)."""
    return [
        str(gdir.root), gdir.assignment, student, f"--cell-timeout={cell_timeout}",
        f"--result={result}", f"--sandbox={limits.to_json()}",
    ]  # fmt: skip


# What every worker imports before it grades: nbgrader (~1.2 s), and what the judge cells of the
# assignment import (:func:`judge_imports`: torch ~1.6 s, course_lib's checks, scikit-learn's
# metrics...). Imported once per grading run, in a fork server (multiprocessing's "forkserver":
# a fresh interpreter, no thread running when it forks); each worker is a fork of it, a process
# of its own as before, that skips those imports. ``autograder.marking.launcher``: what a worker
# runs (:func:`_forked`), and ``worker.py`` with it.
PRELOAD = ("autograder.marking.launcher", "nbgrader.converters", "nbgrader.preprocessors")
FORK_PRELOAD = "A3_FORK_PRELOAD"  # the environment variable: the list forkpreload.py imports
_server = None
_server_lock = threading.Lock()


def stop_fork_server() -> None:
    """Stop the grading run's fork server and multiprocessing's resource tracker, if started
    (they live as long as this process otherwise: ``gradescope.end_leftovers`` counts what is
    left). A later worker starts them again."""
    global _server
    with _server_lock:
        if _server is None:
            return
        from multiprocessing import forkserver, resource_tracker

        forkserver._forkserver._stop()  # what CPython's own tests use (no public call)
        resource_tracker._resource_tracker._stop()
        _server = None


def judge_imports(gdir: GradingDir) -> tuple[str, ...]:
    """The modules the judge cells of ``gdir``'s assignment import at their top level (course
    code, run by every worker: the repository's course imports torch, the tiny test course
    nothing heavy). ``from a import b`` names ``a`` and ``a.b`` (the fork server skips what is no
    module). A module imported inside a function is left to the worker that needs it."""
    import ast

    found: set[str] = set()
    for path in sorted(gdir.judges.glob("*.json")):
        try:
            cells = Spec.from_json(path.read_text()).judges
            trees = [ast.parse(cell.source) for cell in cells]
        except (OSError, ValueError, KeyError, TypeError, SyntaxError):
            continue  # grading reports the spec's problem itself
        for tree in trees:
            for node in tree.body:
                if isinstance(node, ast.Import):
                    found.update(alias.name for alias in node.names)
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    found.add(node.module)  # and each name that may be a submodule of it:
                    found.update(f"{node.module}.{a.name}" for a in node.names if a.name != "*")
    return tuple(sorted(found))


def fork_preload(modules: Iterable[str]) -> list[str]:
    """The one list the fork server imports (``forkpreload.py``, each module that fails
    skipped, as the zygote's): :data:`PRELOAD`, then those of ``modules`` whose package is
    installed.

    The student's kernels preload another list, ``[sandbox] preload`` (``forkkernel.py``'s
    zygote): what the notebooks import, inside the student's sandbox, which does not show the
    autograder package. This one is what the grader's own worker imports, outside it; neither
    list may go to the other's process."""
    import importlib.util

    return [*PRELOAD, *(m for m in modules if importlib.util.find_spec(m.split(".")[0]))]


def _fork_server(modules: Callable[[], tuple[str, ...]]):
    """The grading run's fork server, started by its first worker (``modules()``: what it
    imports besides :data:`PRELOAD`, asked once, when the server starts)."""
    global _server
    with _server_lock:
        if _server is None:
            import multiprocessing

            context = multiprocessing.get_context("forkserver")
            # The server inherits this environment when it starts (at the first worker).
            os.environ[FORK_PRELOAD] = ",".join(fork_preload(modules()))
            context.set_forkserver_preload(["autograder.marking.forkpreload"])
            _server = context
        return _server


class Started:
    """A worker :func:`launch` started: ``pid`` and ``wait`` as ``subprocess.Popen``'s."""

    def __init__(self, process):
        self.process = process
        self.pid: int = process.pid

    def wait(self, timeout: float | None = None) -> int:
        self.process.join(timeout)
        if self.process.exitcode is None:
            raise subprocess.TimeoutExpired("autograder.marking.worker", timeout or 0)
        return self.process.exitcode


def launch(
    argv: list[str],
    log: Path,
    env: dict[str, str],
    cwd: Path,
    modules: Callable[[], tuple[str, ...]],
) -> Started:
    """Start a worker that runs ``main(argv)`` in a session of its own, in ``cwd``, with the
    environment ``env`` and its output to ``log``: what ``python -m autograder.marking.worker ARGV``
    does, without importing nbgrader (and ``modules()``) again."""
    server = _fork_server(modules)
    process = server.Process(target=_forked, args=(argv, str(log), env, str(cwd)))
    process.start()
    return Started(process)


def _forked(argv: list[str], log: str, env: dict[str, str], cwd: str) -> None:
    os.setsid()
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    for target in (1, 2):
        os.dup2(fd, target)
    os.close(fd)
    os.environ.clear()
    os.environ.update(env)
    tempfile.tempdir = None  # the fork server's may be cached: this worker's TMPDIR applies
    os.chdir(cwd)
    threads = env.get("OMP_NUM_THREADS")
    if threads and "torch" in sys.modules:  # imported before this worker's thread count
        sys.modules["torch"].set_num_threads(int(threads))
    worker.main(argv)


_live: set[int] = set()  # pids of the running workers, killed with their kernels on Ctrl-C
_live_lock = threading.Lock()

SCRATCH = "a3-worker-"  # a worker's temporary folder: a3-worker-<the grader's pid>-<random>


def sweep_scratch() -> list[Path]:
    """Remove the workers' temporary folders that a grader killed outright (SIGKILL, a power
    cut) left behind: those of a grader process that no longer runs. Returns them."""
    gone = []
    for folder in Path(tempfile.gettempdir()).glob(f"{SCRATCH}*-*"):
        pid = folder.name[len(SCRATCH) :].split("-", 1)[0]
        if not pid.isdigit() or _alive(int(pid)):
            continue
        shutil.rmtree(folder, ignore_errors=True)
        gone.append(folder)
    return gone


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def kill_running() -> None:
    """Kill every worker :func:`run` started that still runs, with its kernels (Ctrl-C)."""
    with _live_lock:
        running = list(_live)
    for pid in running:
        kill_tree(pid)


def run(
    gdir: GradingDir,
    student: str,
    cell_timeout: int,
    wall: int,
    threads: int,
    limits: Limits | None = None,
) -> tuple[dict, bool, int | None, float]:
    """Grade ``student`` in a child process; return (its result, killed, exit code, seconds).
    Retried once when the worker reports a fault of the gradebook (``worker.gradebook_fault``:
    locked by another worker past the wait)."""
    logs = gdir.root / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    result_file, log_file = logs / f"{student}.json", logs / f"{student}.log"
    start = time.perf_counter()
    for attempt in range(2):
        result_file.unlink(missing_ok=True)
        argv = arguments(gdir, student, cell_timeout, result_file, limits or Limits())
        # The worker's temporary files (verdicts, its kernels' run folder) go in a folder of this
        # run's own, removed here once the worker is gone: a worker killed at the time limit
        # cannot clean up after itself.
        scratch = Path(tempfile.mkdtemp(prefix=f"{SCRATCH}{os.getpid()}-"))
        scratch.chmod(0o711)  # a kernel under its own uid passes through to its run folder
        env = {**child_env(threads), "TMPDIR": str(scratch)}
        proc = launch(argv, log_file, env, gdir.root, lambda: judge_imports(gdir))
        with _live_lock:
            _live.add(proc.pid)
        killed = False
        try:
            code = proc.wait(timeout=max(1.0, wall - (time.perf_counter() - start)))
        except subprocess.TimeoutExpired:
            kill_tree(proc.pid)
            code, killed = proc.wait(), True
        finally:
            with _live_lock:
                _live.discard(proc.pid)
            shutil.rmtree(scratch, ignore_errors=True)
        try:
            result = json.loads(result_file.read_text())
        except (OSError, ValueError):
            result = {"student": student, "done": False, "notebooks": {}}
        if killed or result.get("done") or not result.get("gradebook_fault") or attempt:
            break
    return result, killed, code, round(time.perf_counter() - start, 2)
