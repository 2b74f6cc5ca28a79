"""Grading's execution of a notebook (``autograder/marking/gradeexec.py``): the notebook's time
limit holds even for a kernel that stops answering."""

from __future__ import annotations

import time

from jupyter_client.manager import AsyncKernelManager
from nbformat.v4 import new_code_cell, new_notebook
from traitlets.config import Config

from autograder.course import notebooks
from autograder.marking.gradeexec import GradeExecute

NOTEBOOK_SECONDS = 8
CELL_SECONDS = 3
IOPUB_SECONDS = 15  # what the course's nbgrader_config.py sets


def _run(cells: list[str], tmp_path) -> tuple[list, float]:
    cfg = Config()
    cfg.GradeExecute.notebook_timeout = NOTEBOOK_SECONDS
    cfg.GradeExecute.iopub_timeout = IOPUB_SECONDS
    cfg.GradeExecute.raise_on_iopub_timeout = False
    cfg.GradeExecute.interrupt_on_timeout = True
    nb = new_notebook(cells=[new_code_cell(c) for c in cells])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
    start = time.monotonic()
    runner = GradeExecute(config=cfg, timeout=CELL_SECONDS, kernel_manager_class=AsyncKernelManager)
    runner.preprocess(nb, {"metadata": {"path": str(tmp_path)}})
    return nb.cells, time.monotonic() - start


def _not_run(cell) -> bool:
    return any(
        o.get("ename") == notebooks.TIMEOUT_ENAME and "not run" in "".join(o.get("traceback", []))
        for o in cell.outputs
    )


def test_a_kernel_that_stops_answering_costs_the_notebook_limit_not_a_limit_per_cell(tmp_path):
    """A kernel that ignores the interrupt never ends its cell: each later cell would wait
    its own time limit and then the wait for outputs (15 s), past the notebook's limit. The
    notebook's limit holds: the cells after it are not run, and say so."""
    # in the looping cell itself: ipykernel sets its own SIGINT handler before each cell
    stuck = "import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\ntime.sleep(600)"
    cells, seconds = _run(["print('ready')", stuck, "x = 1", "print(x)"], tmp_path)
    assert [o.get("text") for o in cells[0].outputs] == ["ready\n"]
    assert any(o.get("ename") == notebooks.TIMEOUT_ENAME for o in cells[1].outputs)
    assert not _not_run(cells[1])
    assert _not_run(cells[2]) and _not_run(cells[3])
    # the limit, the kernel's start and its forced stop (5 s), with room for a busy machine;
    # each later cell waiting its own limit and 15 s would be 36 s more
    assert seconds < NOTEBOOK_SECONDS + 20, seconds


def test_cells_within_the_limit_all_run(tmp_path):
    cells, _ = _run(["x = 2", "print(x * 21)"], tmp_path)
    assert [o.get("text") for o in cells[1].outputs] == ["42\n"]
    assert not any(_not_run(c) for c in cells)


def _skip(source: str):
    from autograder.course.spec import SKIP_TAG

    cell = new_code_cell(source)
    cell.metadata["tags"] = [SKIP_TAG]
    return cell


def test_a_name_read_in_a_function_body_keeps_the_skipped_cell_that_binds_it():
    """Issue 37, item 6: a helper defined before the training cell reads a global that only the
    training cell binds, and the answer calls it when the tests call the answer (after the
    whole notebook): the training cell runs. What only skipped cells read stays skipped, and a
    cell kept running for that reason brings what its own functions read (a fixed point)."""
    from autograder.course.spec import Spec, normalised

    helper = "def squash(a):\n    return torch.sigmoid(a).clamp(-HIDDEN_SIZE, HIDDEN_SIZE)"
    cells = [
        new_code_cell("import torch"),
        new_code_cell(helper),
        new_code_cell("class Cell:\n    def forward(self, x):\n        return squash(x)"),
        _skip("HIDDEN_SIZE = 64\nmodel = train(Cell())"),  # "training"
        _skip("plot(model)"),
        _skip("def scale():\n    return FACTOR"),
        _skip("FACTOR = 2"),
    ]
    spec = Spec("nb", {}, (), skip=tuple(normalised(c.source) for c in cells[3:]))
    assert spec.skipped_cells(cells) == [4, 5, 6]
    cells.append(new_code_cell("print(scale())  # a cell of the student's: scale's cell runs"))
    assert spec.skipped_cells(cells) == [4]  # and so does FACTOR's, which scale reads
    cells[1] = new_code_cell("def squash(a, HIDDEN_SIZE=64):\n    return torch.sigmoid(a)")
    cells.pop()
    assert spec.skipped_cells(cells) == [3, 4, 5, 6]  # a parameter is no global


def test_the_gru_case_of_the_issue_runs_the_training_cell():
    """The real part 1 (issue 37, item 6): a correct MyGRUCell whose forward calls a helper,
    defined in a cell of the student's before it, that reads HIDDEN_SIZE, which only the
    skipped training cell binds. That cell runs (grading would otherwise score the answer 0 on
    a NameError); the cells after it, which only read what it trained, stay skipped."""
    import nbformat

    from autograder.course import notebooks
    from autograder.course.spec import grade_id, spec_of, without_instructor_cells
    from helpers import ROOT

    solution = notebooks.read(ROOT / "solutions" / "a3" / "1_gru.ipynb")
    spec = spec_of(solution, "1_gru")
    nb = without_instructor_cells(solution)
    before = spec.skipped_cells(nb.cells)
    training = next(i for i in before if "HIDDEN_SIZE =" in nb.cells[i].source)
    answer = next(i for i, c in enumerate(nb.cells) if grade_id(c) == "my_gru_cell")
    cell = nb.cells[answer]
    cell.source = cell.source.replace("torch.sigmoid(", "gate(")
    assert "gate(" in cell.source
    helper = "def gate(x):\n    return torch.sigmoid(x.clamp(-HIDDEN_SIZE, HIDDEN_SIZE))"
    nb.cells.insert(answer, nbformat.v4.new_code_cell(helper))
    after = spec.skipped_cells(nb.cells)
    assert after == [i + 1 for i in before if i != training]
