"""The course's autograder: ``python -m autograder release|grade|merge|gradescope|collect|...``.

Built on nbgrader 0.9. The modules, by what they hold:

    config        course.toml and the paths derived from it
    settings      the declared settings of course.toml's tables (types, defaults, help)
    limits        a grading kernel's resource limits (course.toml's [sandbox])
    notebooks     reading/writing notebooks, nbgrader cell metadata
    nbgrader_dir  the nbgrader course directories, nbgrader commands, gradebook backups
    nbgrader_app  nbgrader's command line, started faster (every nbgrader command runs it)
    nbgrader_config  nbgrader's settings of the real class (nbgrader reads it from this folder)
    spec          a notebook's spec: tags, tests and graded forms, judge cells, verdicts
    judge         every autograded point: a spec's checks asking a live kernel, replies judged
    remote        the grader's end of a test: requests to a student's live kernel, replies as data
    release       the student notebooks and bundle, and the checks that guard them
    releasechecks  the release's static checks: points, lint, stamp, tests well formed, no leak
    releaseruns   the release's runs: solutions score every point, blank notebooks none
    releasehistory  the release history: what runs again (digests), every release's cells
    leaks         the release's leak checks: nothing instructor-only in a student notebook
    public        the student-facing repository (make public)
    execute       running one notebook in quick mode (release checks)
    variants      grading changed answers (known-wrong and other correct ones) without nbgrader
    sharedkernel  one kernel that grades many versions of a notebook (variants, mutants)
    demo          the demo class: nine kinds of students generated from the solutions
    intake        reading submissions: broken files, renamed notebooks, edited tests
    restore       a hand-in's tampered cells repaired: metadata reset, deleted cells put back
    tamper        the static scan of student code (a second line: the judge decides)
    sandbox       the isolated, limited kernel that runs a student's notebook
    isolation     what isolates kernels on this machine: the probe, the modes, the sandbox uids
    runjudge      the one run-then-judge loop: cells the tests need, then the live kernel judged
    zygote, forkkernel, forkpreload  forked kernels: one process per student imports once
    processes     ending processes: a worker with its kernels, a sandbox's leftovers
    sanitise      student markup made inert before feedback and the formgrader show it
    safehtml      safe URLs, inert TeX, student HTML cleaned (bounded before any parser)
    safemarkdown  student Markdown made inert, checked by rendering it as nbconvert will
    gradernotes   the grader's own notes in a graded notebook, which no student output can forge
    gradeexec     nbgrader's Execute as grading runs it: limits on time and output, then the tests
    worker        grading one student's notebooks in one child process, then the judge
    launcher      starting that child (the fork server), killing it, reading its result
    grading       the grading run: intake, the canary, parallel workers, records, reports
    records       one record per student run: what grading found besides the gradebook's scores
    canary        the solutions graded as a student first: a broken set-up stops grading
    ownrun        the student's own outputs of tagged cells, framed as theirs (skipped or run again)
    shards        grading one shard of the class (cluster array jobs) and merging the shards
    gradescope    the Gradescope autograder zip (its scripts from scripts/), and grading one
                  submission in its container
    gradescope_results  Gradescope's results.json: a test per graded cell, the summary
    gradebook     reading scores from the gradebook, writing the judge's verdicts into it
    report        grades.csv, canvas.csv (LMS), the summary table and histogram, index pages
    pages         the HTML pages, from the Jinja2 templates in templates/ (autoescaped)
    feedback      the students' feedback pages: tests explained, never shown; written answers
    classreport   the class report: score distributions, pass rates, failures, flags, seconds
    collect       importing an LMS download zip, per student and per member
    formgrade_server  JupyterLab for make formgrade, nbgrader's pages escaped
    bench         seconds per student, serial and parallel, against plain nbgrader
    mutants       wrong variants of the solutions, made by AST operators (make audit)
    mutation_operators  the AST operators: the small changes a mutant makes
    mutation_scope  the names bound before a statement (the operator 'earlier')
    audit         make audit: grading the mutants, the kill rate of every graded test
    similarity    make similarity: which answers were shared (instructor only, no grade)
    similarity_match  how two answers are compared: fingerprints, common code, the pairs scored
"""

import sys

# Importing nbformat imports jsonschema, which compiles the `rfc3987_syntax` grammar (an
# optional checker of the "iri" string format that no notebook schema uses): ~4.6 s of every
# nbgrader command's start-up on this machine. Without the module jsonschema skips that
# format, so each grading process starts that much faster.
sys.modules.setdefault("rfc3987_syntax", None)
