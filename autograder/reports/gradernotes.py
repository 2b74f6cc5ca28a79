"""The grader's own notes in a graded notebook: outputs no student's code can forge.

A note of the grader (the frame of a student's own outputs, ``ownrun.py``) is made by
:func:`grader_output` in the grading process, and ``sanitise.py`` keeps it as made: no output a
student's code prints can pass for one (:func:`grader_made`), so its label and style stay the
grader's alone.
"""

from __future__ import annotations

import hashlib
import os
import secrets

from nbformat import NotebookNode

_MADE: dict[int, tuple[str, set[str]]] = {}  # process id -> (its nonce, digests it made)


def _made() -> tuple[str, set[str]]:
    """This process's nonce and the digests of the notes it made (a forked worker starts its
    own: nothing made in another process, another student's, counts here)."""
    return _MADE.setdefault(os.getpid(), (secrets.token_hex(12), set()))


def _digest(markup: str) -> str:
    return hashlib.sha256(markup.encode("utf-8", "surrogatepass")).hexdigest()


def grader_output(markup: str, text: str, metadata: dict | None = None) -> NotebookNode:
    """A display output of the grader's: ``markup`` (HTML the grader wrote, every student
    string in it escaped or cleaned already), ``text`` its plain-text form. Kept as made by
    ``sanitise.sanitise_notebook`` in this process, and only here: no output a student's code
    makes can pass for one (its markup carries a nonce of this process and is known by its
    digest), so its label and style stay the grader's alone."""
    nonce, digests = _made()
    markup = f"<div data-a3-grader='{nonce}'>{markup}</div>"
    digests.add(_digest(markup))
    return NotebookNode(
        output_type="display_data",
        data={"text/html": markup, "text/plain": text},
        metadata=NotebookNode(metadata or {}),
    )


def grader_made(out: dict) -> bool:
    """Whether ``out`` is an output :func:`grader_output` made in this process."""
    data = out.get("data")
    markup = data.get("text/html") if isinstance(data, dict) else None
    return (
        out.get("output_type") == "display_data"
        and isinstance(markup, str)
        and _digest(markup) in _made()[1]
    )
