"""The Makefile's own recipes, run on a scratch folder: ``make format`` formats what it can even
when ruff reports an error it cannot fix, and still fails then."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from helpers import ENV, ROOT

BADLY_LAID_OUT = "x = [1,\n  2]\ny = {'a':1}\n"
UNFIXABLE = "def f():\n    return undefined_name\n"  # F821: ruff cannot fix it


def scratch(tmp: Path) -> Path:
    """``tmp`` with this repository's Makefile and pyproject.toml (ruff's settings; older than
    the venv's setup stamp, so ``make`` does not set up again)."""
    for name in ("Makefile", "pyproject.toml"):
        shutil.copy2(ROOT / name, tmp / name)
    stamp = Path(sys.prefix) / ".setup-done"
    os.utime(tmp / "pyproject.toml", (stamp.stat().st_mtime - 1,) * 2)
    return tmp


def make_format(folder: Path) -> subprocess.CompletedProcess:
    env = {**ENV, "VENV": sys.prefix}
    cmd = ["make", "--no-print-directory", "format"]
    return subprocess.run(cmd, cwd=folder, env=env, capture_output=True, text=True, timeout=120)


def test_format_formats_even_when_ruff_check_finds_an_unfixable_error(tmp_path):
    folder = scratch(tmp_path)
    (folder / "laid_out.py").write_text(BADLY_LAID_OUT)
    (folder / "broken.py").write_text("import os\n" + UNFIXABLE.replace("():", "( ):"))
    proc = make_format(folder)
    assert proc.returncode != 0, proc.stdout + proc.stderr  # the error is still reported
    assert "F821" in proc.stdout + proc.stderr
    assert (folder / "laid_out.py").read_text() == 'x = [1, 2]\ny = {"a": 1}\n'
    assert (folder / "broken.py").read_text() == UNFIXABLE  # unused import fixed, then formatted


def test_format_succeeds_when_everything_is_fixed(tmp_path):
    folder = scratch(tmp_path)
    (folder / "laid_out.py").write_text("import os\n" + BADLY_LAID_OUT)
    proc = make_format(folder)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (folder / "laid_out.py").read_text() == 'x = [1, 2]\ny = {"a": 1}\n'


LONG_AND_SHORT = """import pytest


def test_short():
    assert True


@pytest.mark.long
def test_long():
    raise AssertionError("the long test ran")
"""


def test_make_test_leaves_the_long_tests_to_make_test_long(tmp_path):
    """``make test`` runs every test but those marked ``long``; ``make test-long`` runs those;
    CI runs both (a scratch suite whose only long test fails)."""
    folder = scratch(tmp_path)
    (folder / "tests").mkdir()
    (folder / "tests" / "test_both.py").write_text(LONG_AND_SHORT)
    env = {**ENV, "VENV": sys.prefix, "TEST_JOBS": "1"}
    run = {"cwd": folder, "env": env, "capture_output": True, "text": True, "timeout": 300}
    short = subprocess.run(["make", "--no-print-directory", "test"], **run)
    assert short.returncode == 0, short.stdout + short.stderr
    assert "1 passed" in short.stdout  # the short one; the long one would have failed
    long = subprocess.run(["make", "--no-print-directory", "test-long"], **run)
    assert long.returncode != 0 and "the long test ran" in long.stdout, long.stdout
    ci = (ROOT / ".ci" / "run").read_text().split()
    assert ci.index("test") < ci.index("test-long")  # make test, then make test-long
