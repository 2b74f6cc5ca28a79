"""nbgrader settings of the course: this folder is the nbgrader course directory.

    source/a3/       instructor notebooks, stamped from ../solutions/a3 (generated)
    release/a3/      nbgrader's student version (copied to ../assignments/a3 by `make release`)
    submitted/<student>/a3/*.ipynb    the submissions, as handed in (never modified)
    intake/          the submissions as graded: parsed, renamed notebooks matched (generated)
    autograded/, feedback/, gradebook.db, backups/    nbgrader's results and their backups

`python -m autograder` (behind `make release`, `make grade`, `make collect`) runs nbgrader with
these settings and `make formgrade` starts JupyterLab here. The course-wide values (the time
limit of a cell) are ../course.toml's, read and checked by the grader's own settings model
(`autograder/config.py`, `python -m autograder settings`): an invalid value stops nbgrader with
the same message as the grader.
"""

import importlib.util
import os
import sys

c = get_config()  # noqa: F821 (nbgrader's config loader provides get_config)
here = os.path.dirname(os.path.abspath(__file__))
course_root = os.path.dirname(here)
if importlib.util.find_spec("autograder") is None:  # nbgrader run by hand, in this folder
    sys.path.append(course_root)
from autograder import config  # noqa: E402

course = config.load(course_root)

c.CourseDirectory.root = here
# Per-cell time limit: nbgrader interrupts the kernel, the cell fails, the next one runs.
c.Execute.timeout = course.grade.cell_timeout
c.Execute.interrupt_on_timeout = True
# nbgrader's default turns a kernel slow to answer after that interrupt (4 s) into a failure
# of the whole notebook; wait longer, and go on rather than fail.
c.Execute.iopub_timeout = 15
c.Execute.raise_on_iopub_timeout = False
# Scores come from the judge (autograder/judge.py), never from a cell's outputs: nbgrader's
# rules on them (stderr text scores 0, a numeric result scores part) do not apply.
# Feedback and formgrader pages: no anchor ids made from a student's headings (they could clash
# with the ids the formgrade page uses).
c.HTMLExporter.exclude_anchor_links = True
