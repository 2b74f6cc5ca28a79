"""``python -m autograder.course.nbgrader_app ARGS``: nbgrader's command line, started faster.

- Running a module of this package first runs ``autograder/__init__.py``, which skips a slow
  import.
- A new gradebook is stamped with the newest revision of nbgrader's schema. nbgrader asks a
  separate ``alembic heads`` process for it, and that process imports nbgrader again the slow
  way: ~3 s, paid by every new course directory (the class's, the canary's, each shard's).
  :func:`alembic_head` reads the same revision in this process.
"""

import sys


def alembic_head() -> str:
    """The newest revision of nbgrader's gradebook schema (what ``alembic heads`` prints)."""
    from alembic.script import ScriptDirectory
    from nbgrader.dbutil import ALEMBIC_DIR

    return ScriptDirectory(ALEMBIC_DIR).get_current_head()


def main() -> int:
    from nbgrader import api
    from nbgrader.apps.nbgraderapp import main as nbgrader_main

    api.get_alembic_version = alembic_head
    return nbgrader_main()


if __name__ == "__main__":
    sys.exit(main())
