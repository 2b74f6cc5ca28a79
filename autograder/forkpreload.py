"""What the grading run's fork server imports besides nbgrader (``worker._fork_server``): the
modules named in the environment variable ``worker.FORK_PRELOAD`` (comma-separated), in turn,
each that fails to import skipped (``forkkernel.preload``, as the zygote preloads): the worker
that needs it imports it again and reports the error where grading reports it (a judge cell's).
"""

from __future__ import annotations

import os

from .forkkernel import preload
from .worker import FORK_PRELOAD

preload(filter(None, os.environ.get(FORK_PRELOAD, "").split(",")))
