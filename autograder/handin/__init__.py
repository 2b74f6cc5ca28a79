"""Hand-in: a class's submissions read, before anything of theirs runs.

``make collect`` imports an LMS download (``collect``); the intake (``intake``) decides which
file of each student is graded and bounds it, ``restore`` puts back edited given cells; the
advisory scan (``tamper``) notes code that reaches for the grading machinery. Everything here
treats the hand-in as untrusted data and runs no student code. Hands to ``marking``.
"""

# Its modules:
#   collect: importing an LMS download zip, per student and per member
#   intake: reading submissions: broken files, renamed notebooks; each student's deadline
#   restore: a hand-in repaired: tampered cells put back, metadata reset, the scan run
#   tamper: the static scan of student code (a second line: the judge decides)
