"""The resource limits of a grading kernel: the ``[sandbox]`` table of ``course.toml``.

Its own module so that reading the settings (``config.py``) needs no Jupyter import;
``sandbox.py`` enforces them.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

from autograder.course.settings import setting


@dataclass(frozen=True)
class Limits:
    """The ``[sandbox]`` table of ``course.toml``: resource limits of one notebook's kernel."""

    memory_mb: int = setting(6144, "address space of each kernel process (MB)", minimum=1)
    processes: int = setting(256, "processes and threads of the sandbox user", minimum=1)
    file_mb: int = setting(256, "the largest file the kernel may write (MB)", minimum=1)
    scratch_mb: int = setting(512, "the size of the kernel's scratch folder (MB)", minimum=1)
    output_kb: int = setting(512, "output kept per cell; the rest is dropped (KB)", minimum=1)
    notebook_seconds: int = setting(
        1200, "the whole notebook (each cell also has [grade] cell_timeout)", minimum=1
    )
    enabled: bool = setting(True, "false: no bubblewrap even where it works (limits still apply)")
    allow_unisolated: bool = setting(
        False, "true: grade as the grader's own user where nothing isolates (trusted code only)"
    )
    hide: tuple[str, ...] = setting((), "folders emptied inside what the sandbox shows")
    fork_kernels: bool = setting(
        False,
        "true: with bubblewrap, a student's kernels are forked from one process in their "
        "sandbox that imported ipykernel and `preload` once (false: a fresh process each)",
    )
    preload: tuple[str, ...] = setting((), "modules that process imports (fork_kernels)")

    def numbers(self) -> dict[str, int]:
        """The numeric limits by name."""
        return {
            k: v
            for k, v in asdict(self).items()
            if k not in ("enabled", "allow_unisolated", "hide", "fork_kernels", "preload")
        }

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> Limits:
        data = json.loads(text)
        tuples = {k: tuple(data.get(k, ())) for k in ("hide", "preload")}
        return cls(**{**data, **tuples})
