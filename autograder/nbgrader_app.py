"""``python -m autograder.nbgrader_app ARGS``: nbgrader's command line, started faster (running
a module of this package first runs ``autograder/__init__.py``, which skips a slow import)."""

import sys

from nbgrader.apps.nbgraderapp import main

if __name__ == "__main__":
    sys.exit(main())
