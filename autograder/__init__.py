"""The course's autograder: ``python -m autograder release|grade|merge|gradescope|collect|...``.

Built on nbgrader 0.9, as a house of stages, one sub-package each, in the order a term meets
them (each ``__init__`` says what its stage does, which stage it hands to, and its modules):

    course    course.toml, notebooks and their specs, nbgrader's course directories
    publish   make release: the student notebooks and the checks that guard them; make public
    handin    make collect and the intake: submissions read as data, repaired, scanned
    kernels   the sandboxed kernels where student code runs, and the one run-then-judge loop
    marking   make grade: the canary, one worker per student, the judge, gradebook, records
    reports   grades.csv, the LMS, feedback pages, the class report, student content inert
    quality   the course's tests tested: variant sets and make audit's mutants
    deploy    Gradescope's zip and run, sharded grading on clusters and make merge
    tools     the demo class, make bench, make similarity

``nbgrader_config.py`` stays here: nbgrader's settings of the course, read from this folder.
"""

import sys

# Importing nbformat imports jsonschema, which compiles the `rfc3987_syntax` grammar (an
# optional checker of the "iri" string format that no notebook schema uses): ~4.6 s of every
# nbgrader command's start-up on this machine. Without the module jsonschema skips that
# format, so each grading process starts that much faster.
sys.modules.setdefault("rfc3987_syntax", None)
