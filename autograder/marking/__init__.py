"""Marking: the grading run, one student per worker, the judge's points in the gradebook.

``grading`` runs ``make grade``: the intake (``handin``), the canary (``canary``: the solutions
graded first), one worker process per student (``launcher`` starts it from a fork server that
imported once, ``forkpreload``; ``worker`` is the child), nbgrader's Execute as grading runs it
(``gradeexec``, through the kernel layer's loop), and one record per student run (``records``).
Hands the scores to ``reports``.
"""

# Its modules:
#   grading: the grading run: intake, the canary, parallel workers, records, reports
#   launcher: starting that child (the fork server), killing it, reading its result
#   worker: grading one student's notebooks in one child process, then the judge
#   canary: the solutions graded as a student first: a broken set-up stops grading
#   records: one record per student run: what grading found besides the gradebook's scores
#   forkpreload: what the grading run's fork server imports once (launcher's list)
#   gradeexec: nbgrader's Execute as grading runs it: limits on time and output, then the tests
