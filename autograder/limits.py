"""The resource limits of a grading kernel: the ``[sandbox]`` table of ``course.toml``.

Its own module so that reading the settings (``config.py``) needs no Jupyter import;
``sandbox.py`` enforces them.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Limits:
    """The ``[sandbox]`` table of ``course.toml``: resource limits of one notebook's kernel."""

    memory_mb: int = 6144  # address space of each kernel process
    processes: int = 256  # processes and threads of the sandbox user
    file_mb: int = 256  # the largest file the kernel may write
    scratch_mb: int = 512  # the scratch folder's size
    output_kb: int = 512  # output kept per cell; the rest is dropped
    notebook_seconds: int = 1200  # the whole notebook; each cell also has cell_timeout
    enabled: bool = True  # False: no bwrap even where it works (limits still apply)
    allow_unisolated: bool = False  # True: grade as the grader's user where nothing isolates
    hide: tuple[str, ...] = ()  # folders emptied inside what the sandbox shows

    def numbers(self) -> dict[str, int]:
        """The numeric limits by name."""
        return {
            k: v
            for k, v in asdict(self).items()
            if k not in ("enabled", "allow_unisolated", "hide")
        }

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> Limits:
        data = json.loads(text)
        return cls(**{**data, "hide": tuple(data.get("hide", ()))})
