"""What the grading run's fork server imports (``launcher._fork_server``): the modules named in
the environment variable ``launcher.FORK_PRELOAD`` (comma-separated: ``launcher.fork_preload``,
nbgrader and the judge cells' modules), in turn, each that fails to import skipped
(``forkkernel.preload``, as the zygote preloads): the worker that needs it imports it again and
reports the error where grading reports it (a judge cell's).
"""

from __future__ import annotations

import os

from autograder.kernels.forkkernel import preload
from autograder.marking.launcher import FORK_PRELOAD

preload(filter(None, os.environ.get(FORK_PRELOAD, "").split(",")))
