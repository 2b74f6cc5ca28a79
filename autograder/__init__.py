"""The course's autograder: ``python -m autograder release|grade|collect|demo|formgrade|bench``.

Built on nbgrader 0.9. The modules, by what they hold:

    config        course.toml and the paths derived from it
    notebooks     reading/writing notebooks, nbgrader cell metadata
    nbgrader_dir  the nbgrader course directories, nbgrader commands, gradebook backups
    release       the student notebooks and bundle, and the checks that guard them
    execute       running one notebook in quick mode (release checks)
    demo          the demo class: nine kinds of students generated from the solutions
    intake        reading submissions: broken files, renamed notebooks, edited tests
    worker        grading one student's notebooks in one child process
    grading       the grading run: intake, parallel workers, gradebook, state
    gradebook     reading scores from (and zeroing failed notebooks in) the gradebook
    report        grades.csv, the summary table and histogram, per-student HTML pages
    collect       importing an LMS download zip
    bench         seconds per student, serial and parallel, against plain nbgrader
"""

import sys

# Importing nbformat imports jsonschema, which compiles the `rfc3987_syntax` grammar (an
# optional checker of the "iri" string format that no notebook schema uses): ~4.6 s of every
# nbgrader command's start-up on this machine. Without the module jsonschema skips that
# format, so each grading process starts that much faster.
sys.modules.setdefault("rfc3987_syntax", None)
