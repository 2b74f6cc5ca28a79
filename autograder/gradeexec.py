"""nbgrader's Execute as grading runs it: limits on time and output, then the tests.

:class:`GradeExecute` replaces nbgrader's ``Execute`` in ``Autograde`` (``Sandbox.configure``):
kernels start through ``sandbox.SandboxKernelManager``, the whole notebook has a time limit on
top of nbgrader's per-cell one, and each cell keeps at most ``max_output_chars`` of output.
"""

from __future__ import annotations

import time

from nbformat import NotebookNode
from traitlets import Integer

from .sandbox import SandboxKernelManager


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
