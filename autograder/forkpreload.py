"""What the grading run's fork server imports besides nbgrader (``worker._fork_server``): the
modules named in the environment variable ``worker.FORK_PRELOAD`` (comma-separated), in turn.

multiprocessing's own preload stops the server at the first module that raises anything but
``ImportError``; here a module that fails to import is skipped, and the worker that needs it
imports it again and reports the error where grading reports it (a judge cell's error).
"""

from __future__ import annotations

import importlib
import os

from .worker import FORK_PRELOAD

for _name in filter(None, os.environ.get(FORK_PRELOAD, "").split(",")):
    try:
        importlib.import_module(_name)
    except Exception:  # noqa: BLE001, S112 - see the docstring
        continue
