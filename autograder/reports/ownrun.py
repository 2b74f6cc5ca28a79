"""The student's own outputs of the cells the course tagged ``skip_in_grading``.

A grading run leaves out the given cells the tests do not need (training, plots, results:
cells tagged ``skip_in_grading``, see ``spec.Spec.skips``); a cell the student changed (the
notebooks say they may change those settings), or one a later cell reads, runs in quick mode.
What those cells printed and drew in the student's own run (on Colab, in full mode) is what a
TA marks the written answers against ("which words does your model get wrong?"), so the graded
notebook shows it in every tagged cell the student ran, changed or not, in a frame of the
grader's, labelled as the student's own; where grading ran the cell, its run follows under a
note of the grader's:

1. :func:`attach` (the grading process, before the intake stages a notebook) reads the
   notebook as handed in, takes the outputs of its tagged cells (matched by cell id and code,
   else by code, in order) and keeps them in the staged cell's metadata under :data:`KEY`
   (any such key the student wrote is removed). Nothing here parses student markup: the
   class-wide process only bounds it, in linear time (:func:`bounded`: characters per output,
   cell and notebook, and ``safehtml.within_bounds`` for HTML); an output over a bound is
   replaced by the fixed note ``safehtml.TOO_BIG``, so one hand-in can never stall the class;
2. ``gradeexec.GradeExecute`` (in the student's own worker process, under their limits)
   cleans them (``sanitise.clean_output``) and shows them in :func:`frame`: a skipped cell
   gets the frame alone (:func:`show`), a tagged cell that ran gets the frame, then
   :data:`RERUN` and the grader's quick-mode outputs (:func:`show_rerun`). The frame and
   the note are ``gradernotes.grader_output``: kept as made when the notebook is cleaned, and
   no output a student's code prints can pass for one. Its label sits in the grader's own
   markup, outside the student's part, and its border is a style no student HTML may use
   (``safehtml`` allows no ``border`` or ``padding``); inside, every student string is
   escaped or cleaned (balanced HTML: nothing closes the frame), and a line that starts like
   a note of the grader is marked as the student's (``safehtml.mark_grader_lines``).

The feedback pages take the student's own outputs from those frames (:func:`own_outputs`,
from the frame's metadata :data:`OWN`), never outputs the student's code printed during
grading. Nothing here is judged: a test never reads an output.
"""

from __future__ import annotations

import html
import json
from pathlib import Path

from nbformat import NotebookNode

from autograder.course import spec
from autograder.reports import gradernotes, safehtml, sanitise

KEY = "a3_own_outputs"  # staged cell metadata: the handed-in outputs, bounded, not parsed
OWN = "a3_own"  # the frame's output metadata: those outputs, cleaned (feedback reads them)
RAN = "a3_rerun"  # the frame's output metadata: grading ran the cell too
CELL_CHARS = 512 * 1024  # characters of outputs kept per cell (the grading cap per cell)
NOTEBOOK_CHARS = 8 * 2**20  # characters of own outputs kept per notebook
MAX_BYTES = 20_000_000  # a handed-in file larger than this: its outputs are not read

LABEL = "The student's own output"
SKIPPED = "from the notebook they handed in; the autograder did not run this cell"
RERUN_LABEL = (
    "from the notebook they handed in; the autograder ran this cell again (quick mode): "
    "its run is below this frame"
)
RERUN = (
    "The autograder's quick-mode run of this cell (it ran when grading: the student changed "
    "it, or a later cell needs it); its output follows."
)
NO_OUTPUT = "The notebook handed in has no output here."
END = "end of the student's own output"


def _fixed(text: str) -> dict:
    """A fixed note of the grader's among the kept outputs, shown as text in the frame."""
    return {"output_type": "stream", "name": "stdout", "text": f"[{text}]\n"}


CUT = _fixed("... the rest of this output is not kept: too long")
TOO_BIG = _fixed(safehtml.TOO_BIG.strip("[]"))


def _size(out: object) -> int | None:
    """Characters of ``out`` as JSON (linear), or None when it cannot be written."""
    try:
        return len(json.dumps(out))
    except (ValueError, TypeError, RecursionError):
        return None


def bounded(out: dict, room: int) -> dict:
    """``out`` as handed in when it fits ``room`` characters and its HTML is within
    ``safehtml.within_bounds``, else :data:`TOO_BIG`. Linear in the output's size: no parser."""
    size = _size(out)
    if size is None or size > room:
        return TOO_BIG
    data = out.get("data")
    markup = data.get("text/html") if isinstance(data, dict) else None
    if markup is not None:
        text = "".join(markup) if isinstance(markup, list) else markup
        if not isinstance(text, str) or not safehtml.within_bounds(text):
            return TOO_BIG
    return out


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


def tagged(cell: NotebookNode, nb_spec) -> bool:
    """Whether ``cell`` is one the course tagged ``skip_in_grading`` (as released, or changed:
    the student's copy keeps the tag)."""
    if cell.get("cell_type") != "code" or spec.grade_id(cell):
        return False
    tags = cell.get("metadata", {}).get("tags")
    return nb_spec.skips(cell) or (isinstance(tags, list) and spec.SKIP_TAG in tags)


def attach(nb: NotebookNode, handed_in: Path, nb_spec) -> int:
    """Keep in ``nb`` (a staged notebook) the handed-in outputs of its tagged cells, bounded;
    return how many cells got some. ``nb_spec``: the notebook's ``spec.Spec``."""
    by_id: dict[str, tuple[str, list]] = {}
    queues: dict[str, list[list]] = {}
    for raw in _raw_cells(handed_in):
        if raw.get("cell_type") != "code" or not isinstance(raw.get("outputs"), list):
            continue
        code = spec.normalised(raw.get("source", ""))
        queues.setdefault(code, []).append(raw["outputs"])
        if isinstance(raw.get("id"), str):
            by_id.setdefault(raw["id"], (code, raw["outputs"]))
    budget, count = NOTEBOOK_CHARS, 0
    for cell in nb.cells:
        cell.get("metadata", {}).pop(KEY, None)
        if not tagged(cell, nb_spec):
            continue
        code = spec.normalised(cell.source)
        same = by_id.get(cell.get("id"))
        if same is not None and same[0] == code:
            found = same[1]
        else:
            found = (queues.get(code) or [[]])[0]
        if found in queues.get(code, []):
            queues[code].remove(found)
        kept, used = [], 0
        for out in found:
            if not isinstance(out, dict):
                continue
            room = min(CELL_CHARS, budget) - used
            out = bounded(out, room)
            size = _size(out) or 0
            if size > room:
                kept.append(CUT)
                break
            kept.append(out)
            used += size
        budget -= used
        cell.metadata[KEY] = kept
        count += bool(kept)
    return count


def _part(out: NotebookNode) -> str:
    """One cleaned output as HTML inside the frame: text escaped, an inline raster image, or
    HTML that ``sanitise`` cleaned (balanced: it cannot close the frame)."""
    pre = "<pre style='margin:.2em 0;white-space:pre-wrap'>{}</pre>"
    kind = out.get("output_type")
    if kind == "stream":
        return pre.format(html.escape(safehtml.strip_ansi(out.get("text", ""))))
    if kind == "error":
        lines = [f"{out.get('ename', '')}: {out.get('evalue', '')}", *out.get("traceback", [])]
        return pre.format(html.escape(safehtml.strip_ansi("\n".join(lines))))
    data = out.get("data") or {}
    for mime in safehtml.RASTER:
        if mime in data:
            return f"<img style='max-width:100%' alt='plot' src='data:{mime};base64,{data[mime]}'>"
    if "text/html" in data:
        return f"<div>{data['text/html']}</div>"
    for mime in ("text/markdown", "text/latex", "text/plain"):
        if mime in data:
            return pre.format(html.escape(str(data[mime])))
    return ""


def frame(kept: object, ran: bool) -> NotebookNode:
    """The grader's frame around the student's own outputs ``kept`` (as :func:`attach` kept
    them: cleaned here, in the student's worker), labelled as theirs; ``ran``: grading ran
    the cell too."""
    own = [sanitise.clean_output(o) for o in kept if isinstance(o, dict)] if kept else []
    label = f"{LABEL}, {RERUN_LABEL if ran else SKIPPED}"
    parts = [_part(o) for o in own] or [f"<p><i>{html.escape(NO_OUTPUT, quote=False)}</i></p>"]
    markup = (
        "<div style='border:3px solid #6a3fb5;border-radius:6px;margin:.4em 0'>"
        "<div style='background:#6a3fb5;color:#fff;font:bold 13px sans-serif;"
        f"padding:.3em .7em'>&#9660; {html.escape(label, quote=False)}</div>"
        f"<div style='padding:.3em .7em'>{''.join(parts)}</div>"
        "<div style='background:#6a3fb5;color:#fff;font:11px sans-serif;padding:.1em .7em'>"
        f"&#9650; {html.escape(END, quote=False)}</div></div>"
    )
    texts = [o.get("text", "") for o in own if o.get("output_type") == "stream"]
    text = f"[{label}]\n{''.join(texts) or NO_OUTPUT + chr(10)}[{END}]\n"
    return gradernotes.grader_output(markup, text, {OWN: own, RAN: ran})


def rerun_note() -> NotebookNode:
    """The grader's note above its own quick-mode run of a tagged cell."""
    markup = (
        "<div style='border-left:4px solid #b36b00;background:#fff6e5;padding:.3em .7em;"
        f"font:bold 13px sans-serif'>&#9660; {html.escape(RERUN, quote=False)}</div>"
    )
    return gradernotes.grader_output(markup, f"[{RERUN}]\n")


def show(cell: NotebookNode) -> None:
    """A skipped cell: its kept outputs in the grader's frame, labelled as the student's."""
    kept = cell.get("metadata", {}).pop(KEY, None)
    cell.outputs = [frame(kept, ran=False)]
    cell.execution_count = None


def show_rerun(cell: NotebookNode, kept: object) -> None:
    """A tagged cell grading ran (``kept``: what :func:`attach` kept of it, None: not a
    tagged cell): the student's own outputs first, framed, then the grader's run, under its
    note. A cell the student handed in without outputs shows the grader's run alone."""
    if kept:
        cell.outputs = [frame(kept, ran=True), rerun_note(), *cell.get("outputs", [])]
    elif kept is not None:
        cell.outputs = [rerun_note(), *cell.get("outputs", [])]


def own_outputs(nb: NotebookNode, skipped: list[int] | None = None) -> dict[int, list]:
    """The student's own outputs in a graded notebook, by cell index: those in the grader's
    frames (:func:`frame`; a student's output never keeps the metadata :data:`OWN`: the
    notebook was cleaned when graded), with whether grading ran the cell too, as
    ``(outputs, ran)``. ``skipped`` (the cells the grading run recorded as skipped): only
    those, when given (a notebook graded before frames existed has none)."""
    found = {}
    for index, cell in enumerate(nb.cells):
        if cell.get("cell_type") != "code" or (skipped is not None and index not in skipped):
            continue
        for out in cell.get("outputs") or []:
            meta = out.get("metadata") or {}
            if out.get("output_type") == "display_data" and isinstance(meta.get(OWN), list):
                found[index] = ([NotebookNode(o) for o in meta[OWN]], bool(meta.get(RAN)))
                break
    return found
