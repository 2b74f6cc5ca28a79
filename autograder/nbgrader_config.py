"""nbgrader settings of the course, for each of its nbgrader course directories.

The real class's is ``class/`` (the demo class's ``demo/``): its own ``nbgrader_config.py``,
written by the grader, loads this file and makes that folder nbgrader's course directory:

    class/source/a3/       instructor notebooks, stamped from ../solutions/a3 (generated)
    class/release/a3/      nbgrader's student version (published to ../assignments/a3)
    class/submitted/<student>/a3/*.ipynb    the submissions, as handed in (never modified)
    class/intake/          the submissions as graded: parsed, renamed notebooks matched (generated)
    class/autograded/, class/feedback/, class/gradebook.db, class/backups/    nbgrader's results

`python -m autograder` (behind `make release`, `make grade`, `make collect`) runs nbgrader with
these settings and `make formgrade` starts JupyterLab in ``class/`` (run nbgrader by hand
there too). The course-wide values (the time limit of a cell) are ../course.toml's, read and
checked by the grader's own settings model (`autograder/course/config.py`, `python -m autograder
settings`): an invalid value stops nbgrader with the same message as the grader.
"""

import importlib.util
import os
import sys

c = get_config()  # noqa: F821 (nbgrader's config loader provides get_config)
here = os.path.dirname(os.path.abspath(__file__))
course_root = os.path.dirname(here)
if importlib.util.find_spec("autograder") is None:  # nbgrader run by hand, in class/
    sys.path.append(course_root)
from autograder.course import config  # noqa: E402

course = config.load(course_root)

# The real class's course directory (class/ writes its own config, which says the same; the
# demo class's, a shard's and the canary's say theirs): nbgrader run by hand here still grades
# the real class.
c.CourseDirectory.root = os.path.join(here, "class")
# Per-cell time limit: nbgrader interrupts the kernel, the cell fails, the next one runs.
c.Execute.timeout = course.grade.cell_timeout
c.Execute.interrupt_on_timeout = True
# nbgrader's default turns a kernel slow to answer after that interrupt (4 s) into a failure
# of the whole notebook; wait longer, and go on rather than fail.
c.Execute.iopub_timeout = 15
c.Execute.raise_on_iopub_timeout = False
# Scores come from the judge (autograder/kernels/judge.py), never from a cell's outputs: nbgrader's
# rules on them (stderr text scores 0, a numeric result scores part) do not apply.
# Feedback and formgrader pages: no anchor ids made from a student's headings (they could clash
# with the ids the formgrade page uses).
c.HTMLExporter.exclude_anchor_links = True
