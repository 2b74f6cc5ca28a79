"""Kernels: where student code runs, isolated, limited, and asked questions.

The sandbox (``sandbox``; ``isolation``: what this machine allows, the uids) wraps every kernel
in bubblewrap with the course's limits; forked kernels (``zygote``, ``forkkernel``) start them
fast; ``runjudge`` is the one loop that runs a notebook's cells, then the judge (``judge``) asks
the live kernel (``remote``) and decides every point outside it; release checks run a notebook
through it (``execute``), the variant sets and mutants many versions in one kernel
(``sharedkernel``); ``processes`` ends what is left. Serves ``marking``, ``publish`` and
``quality``; hands to none.
"""

# Its modules:
#   sandbox: the isolated, limited kernel that runs a student's notebook
#   isolation: what isolates kernels on this machine: the probe, the modes, the sandbox uids
#   processes: ending processes: a worker with its kernels, a sandbox's leftovers
#   remote: the grader's end of a test: requests to a student's live kernel, replies as data
#   runjudge: the one run-then-judge loop: cells the tests need, then the live kernel judged
#   execute: running one notebook in quick mode (release checks)
#   sharedkernel: one kernel that grades many versions of a notebook (variants, mutants)
#   zygote, forkkernel: forked kernels: one process per student imports once
#   judge: every autograded point: a spec's checks asking a live kernel, replies judged
