"""What a student sees first: the setup cell installs with pip's progress shown in the cell, and
nbgrader's own Validate button agrees with the course (solutions pass, student copies fail).

Colab may not forward what a child process prints to the cell, so every notebook's setup cell
defines one ``pip_install`` that reads pip's output and prints it itself: these tests run that
very function (taken from the notebooks' setup cells) on a real pip, for a requirement that
installs and for one that cannot. ``nbgrader validate`` fails a notebook whose graded cells
print anything on stderr (a warning included): a solution must pass it, its released student
copy must fail it (its stubs raise); the release holds every solution to the same rule.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

from autograder.course import notebooks, spec
from helpers import ROOT

SOLUTIONS = sorted((ROOT / "solutions" / "a3").glob("*.ipynb"))
RELEASED = sorted((ROOT / "assignments" / "a3").glob("*.ipynb"))


def _setup_source(path: Path) -> str:
    nb = notebooks.read(path)
    (cell,) = [c for c in nb.cells if spec.grade_id(c) == "setup"]
    return cell.source


def _pip_install_source(path: Path) -> str:
    source = _setup_source(path)
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef) and node.name == "pip_install":
            return ast.get_source_segment(source, node)
    raise AssertionError(f"{path.name}: the setup cell defines no pip_install")


def _pip_install():
    namespace = {"sys": sys, "subprocess": subprocess}
    exec(_pip_install_source(SOLUTIONS[0]), namespace)  # noqa: S102 - the course's own code
    return namespace["pip_install"]


def test_every_setup_cell_installs_the_same_way():
    sources = {p.name: _pip_install_source(p) for p in SOLUTIONS}
    assert len(set(sources.values())) == 1, "the setup cells' pip_install differ"
    for path in SOLUTIONS:
        assert "pip_install(" in _setup_source(path).split("def pip_install", 1)[1]


def test_pip_install_shows_pip_in_the_cell(capsys):
    """The real path: a child pip whose output this process prints (no network needed)."""
    assert _pip_install()("--no-index", "--no-deps", "tqdm") is True  # already installed
    shown = capsys.readouterr().out
    assert shown.startswith("pip install --no-index --no-deps tqdm")
    assert "pip failed" not in shown


def test_pip_install_prints_the_end_of_a_failure(capsys):
    assert _pip_install()("--no-index", "a3-no-such-package-7f3e") is False
    shown = capsys.readouterr().out
    assert "pip failed; the end of its output:" in shown
    assert "a3-no-such-package-7f3e" in shown.split("pip failed", 1)[1]  # pip's own words


def _validate(path: Path, tmp: Path) -> str:
    """nbgrader's Validate button on ``path`` (a copy in ``tmp``: it runs there), quick mode."""
    copy = tmp / path.name
    copy.write_bytes(path.read_bytes())
    env = {**os.environ, "COURSE_QUICK": "1", "MPLBACKEND": "Agg"}
    nbgrader = Path(sys.executable).parent / "nbgrader"
    proc = subprocess.run(
        [str(nbgrader), "validate", copy.name],
        cwd=tmp,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    return proc.stdout + proc.stderr


@pytest.mark.slow
def test_nbgraders_validate_passes_a_solution_and_fails_its_student_copy(tmp_path):
    """The Validate button on one notebook, solution and student copy (every solution's graded
    cells are held to what Validate needs by the release: no error, nothing on stderr,
    ``releaseruns.check_solution_run``, and every student copy's stubs by its blank run)."""
    solution = next(p for p in SOLUTIONS if p.stem == "1_gru")
    released = next(p for p in RELEASED if p.stem == "1_gru")
    (tmp_path / "solution").mkdir()
    (tmp_path / "student").mkdir()
    out = _validate(solution, tmp_path / "solution")
    assert "Success! Your notebook passes all the tests." in out, out[-3000:]
    out = _validate(released, tmp_path / "student")
    assert "VALIDATION FAILED" in out, out[-3000:]
