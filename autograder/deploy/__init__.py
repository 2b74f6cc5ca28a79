"""Deploy: grading elsewhere with the same verdicts.

Gradescope's autograder zip and its per-submission run (``gradescope``, its shell scripts in
``scripts/``), and sharded grading for clusters (``shards``: ``make grade SHARD=i/N`` then
``make merge``). Both drive ``marking`` and ``reports`` unchanged.
"""

# Its modules:
#   gradescope: the Gradescope autograder zip (its scripts from scripts/), and grading one
#       submission in its container
#   gradescope_results: Gradescope's results.json: a test per graded cell, the summary
#   shards: grading one shard of the class (cluster array jobs) and merging the shards
