"""One kernel that grades many versions of a notebook: the audit's mutants, the variant sets.

Starting a kernel and running a notebook's setup (torch, BERT's tokenizer) costs seconds;
grading one version of an answer costs a fraction of one. A *job* is one notebook in its
graded form (``variants.student_notebook``) and versions of it (new sources for some answer
cells, and each version's own list of cells a grading run leaves out); a version's *start* is
the first cell it changes. The kernel runs the unchanged notebook once, snapshotting its
namespace and random states before each start; then for each version it restores the
snapshot of its start (names bound since removed, the rest rebound), runs the cells from
there to the end that grading runs for it, and the judge asks that kernel for the version's
objects, as grading does (the loop and the judge call are ``runjudge.py``'s, grading's own).
The unchanged notebook is graded first (that first run) and last (from the first start): it
must keep full marks both times. A version that kills the kernel or runs past the cell time
limit is scored as grading scores it (what did not run loses its points) and the kernel is
restarted.

The trade-off: state the snapshot does not cover (a module or an object changed in place)
could leak from one version to the next. The baseline runs guard against it, and callers grade
again in a fresh kernel (``variants.grade_variants``, the exact pipeline) whatever would
change their conclusion (``audit.py``'s survivors; ``tests/grader/quality/test_variants.py``'s
surprises).

    python -m autograder.kernels.sharedkernel JOB.json RESULT.json     # one job, in a child process
"""

from __future__ import annotations

import argparse
import contextlib
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from nbformat import NotebookNode

from autograder.course import notebooks
from autograder.course.spec import Spec, verdicts_to_json
from autograder.kernels import judge, runjudge

INSTALL = """def __a3_shared_install():
    import random
    import sys
    import types

    state = types.ModuleType("__a3_shared__")
    state.saved = {}

    def rng():
        found = {"random": random.getstate()}
        if "numpy" in sys.modules:
            found["numpy"] = sys.modules["numpy"].random.get_state()
        if "torch" in sys.modules:
            found["torch"] = sys.modules["torch"].random.get_rng_state()
        return found

    def save(ns, at):
        state.saved[at] = (dict(ns), rng())

    def restore(ns, at):
        names, found = state.saved[at]
        ns.clear()
        ns.update(names)
        random.setstate(found["random"])
        if "numpy" in found:
            sys.modules["numpy"].random.set_state(found["numpy"])
        if "torch" in found:
            sys.modules["torch"].random.set_rng_state(found["torch"])

    state.save, state.restore = save, restore
    sys.modules["__a3_shared__"] = state


__a3_shared_install()
del __a3_shared_install
"""
SAVE = '__import__("__a3_shared__").save(globals(), {at})\n'
RESTORE = '__import__("__a3_shared__").restore(globals(), {at})\n'


def job(spec: Spec, base: NotebookNode, versions: list[dict], timeout: int) -> dict:
    """A job for :func:`run_job`: ``base`` (graded form) and ``versions``, each
    ``{"id", "sources": {cell index: source}}`` and optionally ``"skipped"`` (default: the
    cells grading leaves out of that version); each gets its ``start``."""
    found = []
    for version in versions:
        changed = notebooks.nbformat.from_dict(base)
        for index, source in version["sources"].items():
            changed.cells[int(index)].source = source
        skipped = version.get("skipped")
        if skipped is None:
            skipped = spec.skipped_cells(changed.cells)
        start = min((int(i) for i in version["sources"]), default=len(base.cells))
        found.append({**version, "skipped": sorted(skipped), "start": start})
    return {
        "spec": spec.to_json(),
        "notebook": base,
        "skipped": spec.skipped_cells(base.cells),
        "versions": found,
        "timeout": timeout,
    }


def same_prefix(job: dict, version: dict) -> bool:
    """Whether grading ``version`` runs the same cells above its start as the unchanged
    notebook (one whose answer reads a name of a skipped cell above it does not)."""
    start = version["start"]
    return [i for i in job["skipped"] if i < start] == [i for i in version["skipped"] if i < start]


class SharedKernel:
    """One kernel grading every version of one job (see the module docstring)."""

    def __init__(self, job: dict, scratch: Path, sockets: Path):
        self.spec = Spec.from_json(job["spec"])
        self.nb = notebooks.nbformat.from_dict(job["notebook"])
        self.size = len(self.nb.cells)  # the notebook's own cells; then the runner's
        self.base = [c.source for c in self.nb.cells]
        self.skipped = job["skipped"]
        # Snapshots before each version's first change (before cell 0 when there is none).
        self.starts = sorted({v["start"] for v in job["versions"]}) or [0]
        self.nb.cells.append(notebooks.nbformat.v4.new_code_cell(INSTALL))
        self.nb.cells.append(notebooks.nbformat.v4.new_code_cell(""))  # save or restore
        self.checks = judge.collect_checks(self.spec)
        self.client = runjudge.client(self.nb, job["timeout"], scratch, sockets)
        self.stack = contextlib.ExitStack()

    def _runner(self, source: str) -> None:
        cell = self.nb.cells[self.size + 1]
        cell.source = source
        self.client.execute_cell(cell, self.size + 1)

    def start(self) -> dict:
        """A fresh kernel runs the unchanged notebook, snapshots before every start; returns
        its verdicts (``{"verdicts", "error"}``)."""
        self.stack.close()
        self.stack = contextlib.ExitStack()
        self.stack.enter_context(self.client.setup_kernel())
        self.client.execute_cell(self.nb.cells[self.size], self.size)
        return self._run(0, {}, self.skipped, save=True)

    def close(self) -> None:
        self.stack.close()

    def grade(self, start: int, sources: dict, skipped: list[int]) -> dict:
        """Grade one version from the snapshot at ``start``: ``{"verdicts": judge JSON,
        "error": how the run ended early}``."""
        return self._run(start, sources, skipped, save=False)

    def _run(self, start: int, sources: dict, skipped: list[int], save: bool) -> dict:
        from nbclient.exceptions import DeadKernelError

        for i in range(start, self.size):
            cell = self.nb.cells[i]
            cell.source = sources.get(str(i), sources.get(i, self.base[i]))
            if cell.cell_type == "code":
                cell.outputs, cell.execution_count = [], None
        error, began = "", time.perf_counter()

        def snapshot(i: int) -> None:  # the namespace before each start, on the first run
            if save and i in self.starts:
                self._runner(SAVE.format(at=i))

        try:
            if not save:
                self._runner(RESTORE.format(at=start))
            cells = self.nb.cells[: self.size]
            runjudge.run_cells(cells, set(skipped), self.client.execute_cell, start=start,
                               before=snapshot)  # fmt: skip
            if save:
                self._runner(SAVE.format(at=self.size))
        except DeadKernelError:
            error = "the kernel died"
        except Exception as err:  # a kernel that stops answering: grade what ran, restart
            error = f"{type(err).__name__}: {err}"[:300]
        ran = time.perf_counter()
        verdicts = self._judge()
        seconds = {"run": round(ran - began, 2), "judge": round(time.perf_counter() - ran, 2)}
        if error and not save:
            self.start()
        return {"verdicts": verdicts, "error": error, "seconds": seconds}

    def _judge(self) -> dict:
        """The verdicts on what ran, the tests asking this kernel (as grading does)."""
        own = notebooks.nbformat.from_dict(self.nb)
        own.cells = own.cells[: self.size]
        try:
            info = self.client.km.get_connection_info()
            verdicts = runjudge.judge_kernel(
                self.spec, own, info, self.client.timeout, self.checks
            )["verdicts"]
        except Exception:  # noqa: BLE001 - the kernel is gone: every check is lost
            verdicts = verdicts_to_json(judge.judge_notebook(self.spec, own))
        return verdicts


def run_job(job: dict) -> dict:
    """Grade the unchanged notebook, then every version of ``job``, then the unchanged one
    again, in one kernel: ``{"baseline": [first, last], "results": [{"id", "verdicts",
    "error"}...]}``."""
    with (
        tempfile.TemporaryDirectory(prefix="a3-shared-") as scratch,
        tempfile.TemporaryDirectory(prefix="a3-kernel-") as sockets,
    ):
        kernel = SharedKernel(job, Path(scratch), Path(sockets))
        try:
            first = kernel.start()
            if first["error"]:  # the unchanged notebook did not run: nothing to share
                return {"failed": f"the unchanged notebook did not run: {first['error']}"}
            results = [
                {"id": v["id"], **kernel.grade(v["start"], v["sources"], v["skipped"])}
                for v in job["versions"]
            ]
            last = kernel.grade(kernel.starts[0], {}, job["skipped"])  # from every change
        finally:
            kernel.close()
    return {"baseline": [first, last], "results": results}


def run_in_child(job: dict, wall: float, threads: int = 1) -> dict:
    """:func:`run_job` in a child process with ``threads`` threads; on failure
    ``{"failed": why}``."""
    from autograder.course.nbgrader_dir import child_env

    with tempfile.TemporaryDirectory(prefix="a3-shared-job-") as tmp:
        job_file, result_file = Path(tmp) / "job.json", Path(tmp) / "result.json"
        job_file.write_text(json.dumps(job))
        cmd = [
            sys.executable,
            "-m",
            "autograder.kernels.sharedkernel",
            str(job_file),
            str(result_file),
        ]
        try:
            proc = subprocess.run(
                cmd, env=child_env(threads), capture_output=True, text=True, timeout=wall
            )
        except subprocess.TimeoutExpired:
            return {"failed": f"the shared-kernel job did not finish in {wall:.0f} s"}
        if proc.returncode != 0 or not result_file.exists():
            return {
                "failed": f"the shared-kernel job failed (exit {proc.returncode}): "
                f"{proc.stderr[-1500:]}"
            }
        return json.loads(result_file.read_text())


def main() -> None:
    """The child process of one job: ``python -m autograder.kernels.sharedkernel JOB RESULT``."""
    parser = argparse.ArgumentParser(description="grade the versions of one job")
    parser.add_argument("job", type=Path)
    parser.add_argument("result", type=Path)
    args = parser.parse_args()
    result = run_job(json.loads(args.job.read_text()))
    notebooks.write_bytes(args.result, json.dumps(result).encode())


if __name__ == "__main__":
    main()
