"""``python -m autograder.reports.formgrade_server [JUPYTERLAB OPTIONS]``: JupyterLab for ``make
formgrade``, with nbgrader's formgrader pages escaped.

nbgrader builds the formgrader's own pages (the lists of assignments, students and
submissions) from Jinja templates without autoescaping, so a crafted link such as
``/formgrader/manage_students/<img src=x onerror=...>`` would run script in the instructor's
logged-in session. This launcher turns autoescaping on for that template environment, gives
every formgrader page the Content-Security-Policy ``pages.FORMGRADER_CSP`` (as an HTTP header:
nothing remote, no frame, images only inline; so a student's image the cleaning missed is
stopped by the browser, not by a pattern), then starts JupyterLab in this process (its server
extensions, nbgrader's formgrader among them, load here). The graded notebooks the formgrader
shows are cleaned when they are graded (``sanitise.py``).
"""

from __future__ import annotations

import functools
import sys

import jinja2
from nbgrader.server_extensions.formgrader import base, formgrader

from autograder.reports.pages import FORMGRADER_CSP

formgrader.Environment = functools.partial(jinja2.Environment, autoescape=True)
# Every page of the formgrader (its handlers share this base), the submissions' among them.
base.BaseHandler.content_security_policy = property(lambda self: FORMGRADER_CSP)


def main() -> int:
    from jupyterlab.labapp import main as lab

    return lab()


if __name__ == "__main__":
    sys.exit(main())
