"""Publish: the student notebooks and bundle, and the checks that guard them.

``make release`` (``release``): the static checks first (``leaks``: nothing instructor-only in a
student copy), then the notebooks run in quick mode through the kernel layer (``kernels``);
``make public`` (``public``) builds the student-facing repository. Hands the released notebooks
to students, and the judge specs (``autograder/judges/``) to grading (``marking``).
"""

# Its modules:
#   release: the student notebooks and bundle, and the checks that guard them
#   releasechecks: the release's static checks: points, lint, stamp, tests well formed, no leak
#   releaseruns: the release's runs: solutions score every point, blank notebooks none
#   releasehistory: the release history: what runs again (digests), every release's cells
#   leaks: the release's leak checks: nothing instructor-only in a student notebook
#   public: the student-facing repository (make public)
