"""course_lib.grading: the kernel's end of the grading protocol, and the checks' helpers.

No notebook a student works in imports it: the grader does, and the judge cells (instructor
only, stripped from the student copies) do. The grader's end of the protocol is
``autograder/kernels/remote.py``; this package holds the other end and what both ends share:

- :mod:`course_lib.grading.dispatch` the kernel's dispatcher: it answers the grader's
  requests in the student's kernel (and in a TA's own, through ``LocalTransport``);
- :mod:`course_lib.grading.wire`     plain data between the grader and the kernel (JSON);
- :mod:`course_lib.grading.judging`  the checks that decide a graded test, run outside that
  kernel (``check``, ``Student``, ``Course``, ``Inputs``, ``evaluate``).

It imports no teaching module of ``course_lib``; the kernel's dispatcher builds the course's
given code afresh from ``course_lib``'s files (``dispatch.course``).
"""
