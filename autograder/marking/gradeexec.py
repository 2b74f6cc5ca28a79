"""nbgrader's Execute as grading runs it: limits on time and output, then the tests.

:class:`GradeExecute` replaces nbgrader's ``Execute`` in ``Autograde`` (``Sandbox.configure``):
kernels start through ``sandbox.SandboxKernelManager``, the cells the tests do not need are
not run (``spec.Spec.skipped_cells``; they show the student's own outputs instead,
``ownrun.py``; ``run_skipped`` runs them all, for ``worker.py``'s second try), the whole
notebook has a time limit on top of nbgrader's per-cell one, each cell keeps at most
``max_output_chars`` of output and the notebook at most ``max_notebook_chars`` (display
updates, ``display_id`` outputs included: an update is charged once per output it would
rewrite). Once every cell has run, and before the kernel stops, the tests of ``spec_file``
ask that kernel for the student's objects (``runjudge.run_then_judge``: the loop the release
checks and the shared kernel run too; in this process, which runs no student code); the
verdicts go to ``verdict_file``.
"""

from __future__ import annotations

import json
import time

from nbclient.util import run_sync
from nbformat import NotebookNode
from traitlets import Bool, Integer, Unicode

from autograder.course import notebooks
from autograder.course.limits import Limits
from autograder.course.spec import Spec
from autograder.kernels import judge, runjudge
from autograder.kernels.sandbox import SandboxKernelManager
from autograder.reports import ownrun


def _execute_class():
    from nbgrader.preprocessors import Execute

    return Execute


def configure(cfg, limits: Limits) -> None:
    """Make nbgrader's Autograde (``cfg``: its Config) run notebooks with
    :class:`GradeExecute` under ``limits``, then make their outputs inert
    (``sanitise.SanitiseOutputs``). Its kernels: ``Sandbox.configure``."""
    from nbgrader.converters import Autograde
    from nbgrader.preprocessors import Execute

    from autograder.reports.sanitise import SanitiseOutputs

    steps = Autograde.class_traits()["autograde_preprocessors"].default()
    cfg.Autograde.autograde_preprocessors = [
        GradeExecute if step is Execute else step for step in steps
    ] + [SanitiseOutputs]
    cfg.GradeExecute.notebook_timeout = limits.notebook_seconds
    cfg.GradeExecute.max_output_chars = limits.output_kb * 1024


class GradeExecute(_execute_class()):
    """nbgrader's Execute with a time limit for the whole notebook and a cap on each cell's
    kept output (a cell printing without end would otherwise fill the grader's memory)."""

    notebook_timeout = Integer(1200, help="seconds for the whole notebook").tag(config=True)
    max_output_chars = Integer(512 * 1024, help="output characters kept per cell").tag(config=True)
    max_notebook_chars = Integer(
        16 * 2**20, help="output characters kept in the whole notebook"
    ).tag(config=True)
    spec_file = Unicode("", help="judge spec (JSON) of the notebook: judge it live").tag(
        config=True
    )
    verdict_file = Unicode("", help="where the verdicts go (JSON)").tag(config=True)
    run_skipped = Bool(False, help="run the cells the tests do not need too").tag(config=True)
    _deadline: float | None = None
    _kept: dict[int, int] = {}  # characters of output seen per cell index (reset per notebook)
    _total = 0  # characters of output kept in the notebook
    _noted: set[int] = set()  # cells told that output was dropped

    def __init__(self, *args, **kwargs):
        # nbgrader's Execute passes its own kernel manager class as an argument (config loses).
        kwargs.setdefault("kernel_manager_class", SandboxKernelManager)
        super().__init__(*args, **kwargs)
        self._iopub_wait = self.iopub_timeout  # as configured (_get_timeout cuts it)

    def preprocess(self, nb: NotebookNode, resources=None, km=None):
        """nbconvert's ``ExecutePreprocessor.preprocess``, with the tests run on the kernel
        before it stops."""
        from nbclient import NotebookClient

        self._deadline = time.monotonic() + self.notebook_timeout
        self._kept, self._total, self._noted = {}, 0, set()
        NotebookClient.__init__(self, nb, km)
        self.reset_execution_trackers()
        self._check_assign_resources(resources)
        found = None
        spec = self._spec()
        skipped = runjudge.skipped_cells(spec, self.nb.cells, self.run_skipped)
        with self.setup_kernel():
            info_msg = self.wait_for_reply(self.kc.kernel_info())
            if info_msg:
                self.nb.metadata["language_info"] = info_msg["content"]["language_info"]
            try:
                found = runjudge.run_then_judge(
                    self.nb, spec, skipped, lambda cell, index: self._run_cell(resources, index),
                    self.km.get_connection_info, request_seconds=self.timeout or 60,
                    skip=ownrun.show,  # not run: the student's own outputs, marked as such
                    before_judge=self._stop_reading_outputs,
                )  # fmt: skip
            except judge.JudgeError as err:  # a judge cell failed: the course's fault
                found = {"judge_error": str(err)[:2000]}
            if found is not None:
                found["skipped"] = skipped
        self.set_widgets_metadata()
        if found is not None and self.verdict_file:
            notebooks.write_bytes(self.verdict_file, json.dumps(found).encode())
        return self.nb, self.resources

    def _run_cell(self, resources, index: int) -> None:
        """Run cell ``index``; a tagged cell keeps its own outputs too (``ownrun``)."""
        cell = self.nb.cells[index]
        kept = cell.get("metadata", {}).pop(ownrun.KEY, None)
        self.preprocess_cell(cell, resources, index)
        ownrun.show_rerun(self.nb.cells[index], kept)

    def _stop_reading_outputs(self) -> None:
        """The notebook has run: what the kernel publishes while the tests ask it (prints of
        the student's code, anything it sends) is no output of the notebook, and must not
        pile up here unread (the tests' own session reads and drops it, within its caps)."""
        channel = getattr(self.kc, "iopub_channel", None)
        if channel is not None:
            channel.stop()

    def _spec(self):
        """The notebook's judge spec (None: no tests to run, every cell runs)."""
        if not self.spec_file:
            return None
        from pathlib import Path

        return Spec.from_json(Path(self.spec_file).read_text())

    def _remaining(self) -> float:
        return (self._deadline or float("inf")) - time.monotonic()

    def _get_timeout(self, cell: NotebookNode | None) -> int | None:
        """The cell's time limit, within what is left of the notebook's. The wait for a
        timed-out cell's last outputs (``iopub_timeout``, after the interrupt: a kernel that
        stops answering never sends them) is cut to what is left too, at least a second."""
        timeout = super()._get_timeout(cell)
        remaining = max(1, int(self._remaining()))
        self.iopub_timeout = min(self._iopub_wait, remaining)
        return remaining if timeout is None else min(timeout, remaining)

    async def async_execute_cell(self, cell, cell_index, execution_count=None, store_history=True):
        if cell.cell_type == "code" and self._remaining() <= 0:
            cell.outputs = [
                NotebookNode(
                    output_type="error",
                    ename=notebooks.TIMEOUT_ENAME,
                    evalue="",
                    traceback=[
                        f"{notebooks.TIMEOUT_ENAME}: not run, the notebook's time limit "
                        f"({self.notebook_timeout} s) was used up"
                    ],
                )
            ]
            return cell
        return await super().async_execute_cell(cell, cell_index, execution_count, store_history)

    # nbclient binds ``execute_cell`` (what nbconvert's preprocess_cell calls) to its own
    # ``async_execute_cell``: bound again here, or the limit above would never apply.
    execute_cell = run_sync(async_execute_cell)

    def _charge(self, cell_index: int, size: int) -> bool:
        """Whether ``size`` more characters fit the cell's and the notebook's caps (then they
        are counted)."""
        kept = self._kept.get(cell_index, 0)
        if kept + size > self.max_output_chars or self._total + size > self.max_notebook_chars:
            return False
        self._kept[cell_index] = kept + size
        self._total += size
        return True

    def _note(self, outs: list, cell_index: int) -> None:
        """Say once per cell that output was dropped."""
        if cell_index in self._noted:
            return
        self._noted.add(cell_index)
        outs.append(
            NotebookNode(
                output_type="stream",
                name="stdout",
                text=f"\n... output truncated by the autograder ({self.max_output_chars} "
                "characters kept per cell) ...\n",
            )
        )

    def output(self, outs, msg, display_id, cell_index):
        if self._charge(cell_index, _size(msg)):
            return super().output(outs, msg, display_id, cell_index)
        self._note(outs, cell_index)
        return None

    def _update_display_id(self, display_id, msg) -> None:
        """A display update rewrites every output of that ``display_id``: charged once per
        output it rewrites, and dropped when a cell or the notebook would go over its cap."""
        targets = self._display_id_map.get(display_id, {})
        size = _size(msg)
        for cell_index, indices in targets.items():
            if not self._charge(cell_index, size * len(indices)):
                self._note(self.nb.cells[cell_index].outputs, cell_index)
                return
        super()._update_display_id(display_id, msg)


def _size(msg: dict) -> int:
    content = msg.get("content", {})
    return len(str(content.get("text", ""))) + sum(
        len(str(v)) for v in content.get("data", {}).values()
    )
