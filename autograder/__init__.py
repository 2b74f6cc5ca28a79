"""The course's autograder: ``python -m autograder release|grade|merge|gradescope|collect|...``.

Built on nbgrader 0.9. The modules, by what they hold:

    config        course.toml and the paths derived from it
    notebooks     reading/writing notebooks, nbgrader cell metadata
    nbgrader_dir  the nbgrader course directories, nbgrader commands, gradebook backups
    judge         the tests' specs (graded forms, judge cells), judging live kernels, verdicts
    release       the student notebooks and bundle, and the checks that guard them
    execute       running one notebook in quick mode (release checks)
    variants      grading changed answers (known-wrong and other correct ones) without nbgrader
    demo          the demo class: nine kinds of students generated from the solutions
    intake        reading submissions: broken files, renamed notebooks, edited tests
    tamper        the static scan of student code (a second line: the judge decides)
    sandbox       the isolated, limited kernel that runs a student's notebook
    sanitise      student markup made inert before feedback and the formgrader show it
    worker        grading one student's notebooks in one child process, then the judge; starting it
    grading       the grading run: intake, the canary, parallel workers, gradebook, state
    canary        the solutions graded as a student first: a broken set-up stops grading
    ownrun        the student's own outputs where grading leaves a cell out
    shards        grading one shard of the class (cluster array jobs) and merging the shards
    gradescope    the Gradescope autograder zip, and grading one submission in its container
    gradebook     reading scores from the gradebook, writing the judge's verdicts into it
    report        grades.csv, canvas.csv (LMS), the summary table and histogram, index pages
    feedback      the students' feedback pages: tests explained, never shown; written answers
    classreport   the class report: score distributions, pass rates, failures, flags, seconds
    collect       importing an LMS download zip, per student and per member
    formgrade_server  JupyterLab for make formgrade, nbgrader's pages escaped
    bench         seconds per student, serial and parallel, against plain nbgrader
    mutants       wrong variants of the solutions, made by AST operators (make audit)
    audit         make audit: grading the mutants, the kill rate of every graded test
    similarity    make similarity: which answers were shared (instructor only, no grade)
"""

import sys

# Importing nbformat imports jsonschema, which compiles the `rfc3987_syntax` grammar (an
# optional checker of the "iri" string format that no notebook schema uses): ~4.6 s of every
# nbgrader command's start-up on this machine. Without the module jsonschema skips that
# format, so each grading process starts that much faster.
sys.modules.setdefault("rfc3987_syntax", None)
