"""Student content made inert before any page shows it (feedback HTML, the formgrader).

The formgrader's view of a submission (``make formgrade``, served by the instructor's
logged-in Jupyter server) renders the *autograded* notebook with nbconvert templates that
trust it, and the feedback pages (``feedback.py``) show its written answers: markdown goes through
``markdown2html`` with raw HTML passed on, ``text/html`` and ``application/javascript`` outputs
are written into the page as they are, some metadata lands in unquoted attributes. Everything
in that notebook is the student's: any markdown cell (they can edit them all), the outputs of
their code, the metadata. :class:`SanitiseOutputs`, the last step of nbgrader's autograde
(``sandbox.Sandbox.configure``), runs :func:`sanitise_notebook` on it, so what is saved in
``autograded/`` (and everything made from it) holds only what follows. (Notebooks graded
before this step existed are not: grade them again, ``--regrade``.)

What each kind of content becomes (the pieces live in their own modules):

Markdown cells, and ``text/markdown`` outputs
    ``safehtml.sanitise_markdown``: raw HTML shown as text, unsafe link targets replaced,
    images from elsewhere made links, checked by rendering it as nbconvert will. Cell
    attachments are kept only as valid base64 PNG, JPEG or GIF (an attachment with none left
    becomes a blank PNG, :data:`BLANK_PNG`, so its ``attachment:`` link still works).

Outputs
    ``text/plain``, ``stream`` text and ``error`` tracebacks are kept as text (nbconvert escapes
    them: ``ansi2html``), each line that starts like a note of the grader marked as the
    student's (``safehtml.mark_grader_lines``). ``text/html`` is cleaned with bleach, or replaced
    by a fixed note when it is too large or too deeply nested to parse
    (``safehtml.sanitise_html``). ``image/png``, ``image/jpeg`` and ``image/gif`` are kept when
    they are valid base64 of such an image. ``text/latex`` is kept unless it holds a MathJax
    command that links, styles or loads (``safehtml.RISKY_TEX``). Everything else is dropped:
    ``application/javascript``, ``image/svg+xml`` (it may hold script), Jupyter widgets, PDF,
    any unknown type (the tests read no output of the notebook: they ask the kernel). When an
    output keeps nothing, a ``text/plain`` note says what was removed. Output metadata keeps
    only numeric ``width``/``height``, ``unconfined`` and ``alt`` of images (nbconvert writes
    width and height into *unquoted* attributes; ``isolated`` HTML would become an iframe).
    The grader's own notes (the frame of a student's own outputs, ``ownrun.py``) are made by
    ``gradernotes.grader_output`` in the grading process and kept as made: no output a
    student's code prints can pass for one (``gradernotes.grader_made``).


Metadata
    The notebook's metadata keeps only ``kernelspec`` and ``language_info`` with plain string
    values (for highlighting; ``widgets`` would load widget scripts). A cell's keeps its
    ``nbgrader`` keys with the types nbgrader gives them (the grade id comes from the release,
    see ``intake.py``; scores and comments are the gradebook's, added at feedback time),
    ``tags`` made of word characters, the boolean ``jupyter`` flags, and a raw cell's format;
    nothing else (``transient.remove_source`` would hide a cell from the grader). Cell ids
    that are not nbformat ids are replaced; execution counts are integers or ``None``. Raw
    cells are cleaned like ``text/html``.
"""

from __future__ import annotations

import re
import uuid

from nbconvert.preprocessors import Preprocessor
from nbformat import NotebookNode
from traitlets import Bool

from autograder.reports import gradernotes
from autograder.reports.safehtml import (
    RASTER,
    RISKY_TEX,
    mark_grader_lines,
    raster,
    sanitise_html,
    sanitise_markdown,
    text_of,
)

# A blank 1x1 PNG: stands in for an attachment that held no raster image.
BLANK_PNG = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAAB"
    "JRU5ErkJggg=="
)

_WORDS = re.compile(r"[\w.:\-]{1,100}")
_PLAIN = re.compile(r"[^\w .:+()/\-]")
_CELL_ID = re.compile(r"[a-zA-Z0-9\-_]{1,64}")
_MIME = re.compile(r"[\w.+\-]{1,60}/[\w.+\-]{1,100}")
NBGRADER_KEYS = {  # nbgrader cell metadata: key -> the types nbgrader gives it
    "grade": (bool,),
    "solution": (bool,),
    "locked": (bool,),
    "task": (bool,),
    "points": (int, float),
    "grade_id": (str,),
    "schema_version": (int,),
    "cell_type": (str,),
    "checksum": (str,),
}
RAW_FORMATS = {"text/html", "text/markdown", "text/latex", "text/restructuredtext", "text/plain"}


def _plain(value: object) -> str:
    return _PLAIN.sub("", value)[:100] if isinstance(value, str) else ""


def _count(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _lexer_ok(name: str) -> bool:
    from pygments.lexers import get_lexer_by_name
    from pygments.util import ClassNotFound

    if name.startswith("ipython"):
        return name in ("ipython", "ipython2", "ipython3")
    try:
        get_lexer_by_name(name)
    except ClassNotFound:
        return False
    return True


def _notebook_metadata(md: dict) -> NotebookNode:
    out = NotebookNode()
    spec = md.get("kernelspec")
    if isinstance(spec, dict):
        out.kernelspec = NotebookNode(
            {k: _plain(spec[k]) for k in ("name", "display_name", "language") if k in spec}
        )
    info = md.get("language_info")
    if isinstance(info, dict):
        keep = ("name", "version", "file_extension", "mimetype", "nbconvert_exporter")
        lang = NotebookNode({k: _plain(info[k]) for k in keep if isinstance(info.get(k), str)})
        lexer = _plain(info.get("pygments_lexer"))
        if lexer and _lexer_ok(lexer):
            lang.pygments_lexer = lexer
        if lang.get("name") and not _lexer_ok(lang.name):
            lang.name = "python"
        mode = info.get("codemirror_mode")
        if isinstance(mode, str):
            lang.codemirror_mode = _plain(mode)
        elif isinstance(mode, dict):
            lang.codemirror_mode = NotebookNode(name=_plain(mode.get("name")))
            if _count(mode.get("version")) is not None:
                lang.codemirror_mode.version = mode["version"]
        out.language_info = lang
    return out


def _cell_metadata(md: dict, cell_type: str) -> NotebookNode:
    out = NotebookNode()
    grader = md.get("nbgrader")
    if isinstance(grader, dict):
        out.nbgrader = NotebookNode(
            {
                k: v
                for k, v in grader.items()
                if k in NBGRADER_KEYS
                and isinstance(v, NBGRADER_KEYS[k])
                and (k not in ("points",) or not isinstance(v, bool))
            }
        )
    tags = md.get("tags")
    if isinstance(tags, list):
        out.tags = [t for t in tags if isinstance(t, str) and _WORDS.fullmatch(t)]
    jupyter = md.get("jupyter")
    if isinstance(jupyter, dict):
        flags = {k: v for k, v in jupyter.items() if k in ("source_hidden", "outputs_hidden")}
        out.jupyter = NotebookNode({k: v for k, v in flags.items() if isinstance(v, bool)})
    for key in ("editable", "deletable", "collapsed"):
        if isinstance(md.get(key), bool):
            out[key] = md[key]
    if md.get("scrolled") in (True, False, "auto"):
        out.scrolled = md["scrolled"]
    if cell_type == "raw":
        for key in ("raw_mimetype", "format"):
            if md.get(key) in RAW_FORMATS:
                out[key] = md[key]
    return out


def _attachments(value: object) -> NotebookNode:
    """Cell attachments: only valid raster images (a blank PNG where none is left)."""
    out = NotebookNode()
    if not isinstance(value, dict):
        return out
    for name, bundle in value.items():
        if not isinstance(name, str) or not isinstance(bundle, dict):
            continue
        images = {m: raster(bundle[m], m) for m in RASTER if m in bundle}
        images = {m: data for m, data in images.items() if data}
        out[name] = NotebookNode(images or {"image/png": BLANK_PNG})
    return out


def _bundle(data: object) -> dict:
    """A display's MIME bundle with only inert representations (see the module docstring)."""
    kept: dict[str, str] = {}
    removed: list[str] = []
    for mime, value in data.items() if isinstance(data, dict) else []:
        if mime == "text/plain":
            kept[mime] = mark_grader_lines(text_of(value))
        elif mime == "text/html":
            kept[mime] = sanitise_html(text_of(value))
        elif mime == "text/markdown":
            kept[mime] = sanitise_markdown(text_of(value))
        elif mime == "text/latex" and not RISKY_TEX.search(text_of(value)):
            kept[mime] = text_of(value)
        elif mime in RASTER and raster(value, mime):
            kept[mime] = raster(value, mime)
        else:
            removed.append(mime if isinstance(mime, str) and _MIME.fullmatch(mime) else "unknown")
    if not kept:
        kept["text/plain"] = f"[removed: {', '.join(sorted(set(removed))[:5]) or 'empty'} output]"
    return kept


def _output_metadata(md: object, data: dict) -> NotebookNode:
    out = NotebookNode()
    if not isinstance(md, dict):
        return out
    for mime in RASTER:
        given = md.get(mime)
        if mime not in data or not isinstance(given, dict):
            continue
        keep = NotebookNode()
        for key in ("width", "height"):
            value = given.get(key)
            if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0:
                keep[key] = value
        if isinstance(given.get("unconfined"), bool):
            keep.unconfined = given["unconfined"]
        if isinstance(given.get("alt"), str):
            keep.alt = given["alt"]
        if keep:
            out[mime] = keep
    return out


def _output(out: dict) -> NotebookNode:
    kind = out.get("output_type")
    if gradernotes.grader_made(out):
        return NotebookNode(out)
    if kind == "stream":
        name = out.get("name") if out.get("name") in ("stdout", "stderr") else "stdout"
        text = mark_grader_lines(text_of(out.get("text")))
        return NotebookNode(output_type="stream", name=name, text=text)
    if kind == "error":
        lines = out.get("traceback") if isinstance(out.get("traceback"), list) else []
        return NotebookNode(
            output_type="error",
            ename=text_of(out.get("ename")),
            evalue=mark_grader_lines(text_of(out.get("evalue"))),
            traceback=[mark_grader_lines(line) for line in lines if isinstance(line, str)],
        )
    if kind in ("display_data", "execute_result"):
        data = _bundle(out.get("data"))
        node = NotebookNode(
            output_type=kind, data=data, metadata=_output_metadata(out.get("metadata"), data)
        )
        if kind == "execute_result":
            node.execution_count = _count(out.get("execution_count"))
        return node
    return NotebookNode(output_type="stream", name="stdout", text="[removed: unknown output]\n")


# --- the grader's own notes -------------------------------------------------------------------

_MADE: dict[int, tuple[str, set[str]]] = {}  # process id -> (its nonce, digests it made)


def clean_output(out: dict) -> NotebookNode:
    """One output made inert, as :func:`sanitise_notebook` makes every output."""
    return _output(out)


def _cell(cell: NotebookNode) -> None:
    if "id" in cell and not (isinstance(cell.id, str) and _CELL_ID.fullmatch(cell.id)):
        cell.id = uuid.uuid4().hex[:8]
    kind = cell.get("cell_type")
    if kind not in ("code", "markdown", "raw"):
        cell.cell_type = kind = "raw"
    cell.metadata = _cell_metadata(cell.get("metadata") or {}, kind)
    if kind == "code":
        cell.source = text_of(cell.get("source"))
        cell.execution_count = _count(cell.get("execution_count"))
        cell.outputs = [_output(o) for o in cell.get("outputs", []) if isinstance(o, dict)]
        cell.pop("attachments", None)
        return
    cell.pop("outputs", None)
    cell.pop("execution_count", None)
    if "attachments" in cell:
        cell.attachments = _attachments(cell.attachments)
    if kind == "markdown":
        cell.source = sanitise_markdown(cell.get("source"), cell.get("attachments"))
    else:
        cell.source = sanitise_html(cell.get("source"))


def sanitise_notebook(nb: NotebookNode) -> NotebookNode:
    """``nb`` with every student-controlled markup made inert (in place); returns ``nb``."""
    nb.metadata = _notebook_metadata(nb.get("metadata") or {})
    for cell in nb.get("cells", []):
        _cell(cell)
    return nb


class SanitiseOutputs(Preprocessor):
    """nbgrader autograde step: :func:`sanitise_notebook` on the graded notebook."""

    # nbconvert runs a preprocessor only when enabled, and nbgrader registers its steps
    # without enabling them (its own preprocessors default to True, nbconvert's to False).
    enabled = Bool(True).tag(config=True)

    def preprocess(self, nb, resources):
        return sanitise_notebook(nb), resources
