"""Tools around grading: the benchmark and answer similarity, for the instructor.

``bench`` times grading against plain nbgrader (``make bench``); ``similarity`` lists answers
that look alike (``make similarity``: no grade, no flag), compared by ``similarity_match``. They
drive ``marking``; none is a stage of grading itself.
"""

# Its modules:
#   similarity: make similarity: which answers were shared (instructor only, no grade)
#   similarity_match: how two answers are compared: fingerprints, common code, the pairs scored
#   bench: seconds per student, serial and parallel, against plain nbgrader
