"""The student's own outputs, shown where grading does not run a cell.

A grading run leaves out the given cells the tests do not need (training, plots, results:
cells tagged ``skip_in_grading``, see ``judge.Spec.skips``). What those cells printed and
drew in the student's own run (on Colab, in full mode) is what a TA marks the written answers
against ("which words does your model get wrong?"), so the graded notebook shows it there,
marked as the student's own, never as the grader's:

1. :func:`attach` (the grading process, before the intake stages a notebook) reads the
   notebook as handed in, takes the outputs of its cells that grading will skip (matched by
   their code, in order), cleans them (``sanitise.clean_output``), caps them, and keeps them in
   the staged cell's metadata under :data:`KEY` (any such key the student wrote is removed);
2. ``gradeexec.GradeExecute`` does not run such a cell: :func:`show` puts the kept outputs
   back under a note saying where they come from. ``sanitise.SanitiseOutputs`` (the last step
   of grading) cleans them again with the rest of the notebook, and drops the metadata key.

The grading run records which cells it skipped (``skipped`` in the verdicts, then the
worker's result); the formgrader shows the graded notebook as it is, and the feedback pages
take the outputs of exactly those cells (:func:`own_outputs`), never outputs the student's
code printed during grading. Nothing here is judged: a test never reads an output.
"""

from __future__ import annotations

import json
from pathlib import Path

from nbformat import NotebookNode

from . import sanitise

KEY = "a3_own_outputs"
CELL_CHARS = 512 * 1024  # characters of outputs kept per cell (the grading cap per cell)
NOTEBOOK_CHARS = 8 * 2**20  # characters of own outputs kept per notebook
MAX_BYTES = 20_000_000  # a handed-in file larger than this: its outputs are not read
NOTE = (
    "[autograder] This cell was not run when grading (the tests do not need it).\n"
    "The output below is the student's own, from the notebook they handed in.\n"
)
NO_OUTPUT = (
    "[autograder] This cell was not run when grading (the tests do not need it).\n"
    "The notebook handed in has no output here.\n"
)


CUT = {"output_type": "stream", "name": "stdout",
       "text": "\n[autograder] ... the rest of this output is not kept\n"}  # fmt: skip


def _size(out: NotebookNode) -> int:
    return len(json.dumps(out))


def _raw_cells(path: Path) -> list[dict]:
    """The cells of the file as handed in, or none when it cannot be read."""
    try:
        if path.stat().st_size > MAX_BYTES:
            return []
        raw = json.loads(path.read_bytes().decode("utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):
        return []
    cells = raw.get("cells") if isinstance(raw, dict) else None
    return [c for c in cells if isinstance(c, dict)] if isinstance(cells, list) else []


def attach(nb: NotebookNode, handed_in: Path, spec) -> int:
    """Keep in ``nb`` (a staged notebook) the handed-in outputs of the cells grading skips;
    return how many cells got some. ``spec``: the notebook's ``judge.Spec``."""
    from .judge import normalised

    queues: dict[str, list[list]] = {}
    for raw in _raw_cells(handed_in):
        if raw.get("cell_type") != "code" or not isinstance(raw.get("outputs"), list):
            continue
        code = normalised(raw.get("source", ""))
        if code in set(spec.skip):
            queues.setdefault(code, []).append(raw["outputs"])
    budget, count = NOTEBOOK_CHARS, 0
    for cell in nb.cells:
        cell.get("metadata", {}).pop(KEY, None)
        if not spec.skips(cell):
            continue
        found = queues.get(normalised(cell.source)) or [[]]
        kept, used = [], 0
        for out in found.pop(0):
            clean = sanitise.clean_output(out) if isinstance(out, dict) else None
            if clean is None:
                continue
            size = _size(clean)
            if used + size > min(CELL_CHARS, budget):
                kept.append(sanitise.clean_output(CUT))
                break
            kept.append(clean)
            used += size
        budget -= used
        if kept:
            cell.metadata[KEY] = kept
            count += 1
    return count


def show(cell: NotebookNode) -> None:
    """Put a skipped cell's kept outputs back, under the note that says whose they are."""
    kept = cell.get("metadata", {}).pop(KEY, None)
    own = [NotebookNode(o) for o in kept] if isinstance(kept, list) else []
    note = NOTE if own else NO_OUTPUT
    cell.outputs = [NotebookNode(output_type="stream", name="stdout", text=note), *own]
    cell.execution_count = None


def own_outputs(nb: NotebookNode, skipped: list[int]) -> dict[int, list[NotebookNode]]:
    """The student's own outputs in a graded notebook, by cell index: the cells grading
    skipped (``skipped``, as the grading run recorded them: never read from the notebook,
    whose outputs the student's code may have written), without the note."""
    found = {}
    for index in skipped:
        if 0 <= index < len(nb.cells) and nb.cells[index].get("cell_type") == "code":
            found[index] = list(nb.cells[index].get("outputs") or [])[1:]
    return found
