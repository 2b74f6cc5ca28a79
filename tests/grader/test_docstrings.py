"""Every ``module.Name`` a docstring of the grader or the course library names exists.

A docstring that points at a module's name is how a reader finds their way from one room to
the next (``runjudge.run_then_judge``, ``spec.Spec.skipped_cells``); a name that moved or
was renamed leaves a pointer to nowhere, and so does a name asked of a module that only
imports it. Written forms read: ``module.Name`` (a module of the docstring's own package,
``autograder`` or ``course_lib``, by its own name, wherever in the package it sits) and the
full dotted path (``course_lib.grading.judging.Course``); file names (``worker.py``) are not
names. Issue 40, step 6.
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path
from types import FunctionType, ModuleType

import pytest

from helpers import ROOT

PACKAGES = ("autograder", "course_lib")
FILE_SUFFIXES = {"py", "html", "j2", "md", "json", "txt", "csv", "toml", "ipynb", "db", "sh", "zip"}
NOT_IMPORTED = {"autograder.nbgrader_config"}  # nbgrader's config file, run by nbgrader alone
REFERENCE = re.compile(r"``([a-z_][a-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+)``")


def _modules(package: str) -> dict[str, str]:
    """Each module of ``package``: its own name -> its dotted name (names found twice are
    left out: a short form would not say which)."""
    found: dict[str, list[str]] = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        dotted = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        if dotted not in NOT_IMPORTED and "templates" not in parts:
            found.setdefault(dotted.rsplit(".", 1)[-1], []).append(dotted)
    return {short: names[0] for short, names in found.items() if len(names) == 1}


def _references(path: Path) -> list[str]:
    """The ``a.b`` references in the docstrings of ``path``."""
    tree = ast.parse(path.read_text())
    kinds = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    docs = [
        ast.get_docstring(node, clean=False) for node in ast.walk(tree) if isinstance(node, kinds)
    ]
    return [m.group(1) for doc in docs if doc for m in REFERENCE.finditer(doc)]


def _resolves(reference: str, modules: dict[str, str]) -> bool | None:
    """Whether ``reference`` names something that exists (None: not a reference to a module of
    ours, such as a file name or another library's). ``modules``: the short names that count
    (those of the package the docstring is in)."""
    first, *rest = reference.split(".")
    if rest[-1] in FILE_SUFFIXES:
        return None
    if first in PACKAGES:  # a full dotted path: the longest prefix that imports, then attributes
        for cut in range(len(rest), -1, -1):
            try:
                module = importlib.import_module(".".join([first, *rest[:cut]]))
            except ImportError:
                continue
            return _defines(module, rest[cut:])
        return False
    if first not in modules:
        return None
    return _defines(importlib.import_module(modules[first]), rest)


def _defines(module: ModuleType, attributes: list[str]) -> bool:
    """Whether ``module`` has ``attributes`` (a path), the first its own: a class or function
    it only imports from another module is that module's to name."""
    obj: object = module
    for name in attributes:
        if not hasattr(obj, name):
            return False
        obj = getattr(obj, name)
        if obj is not None and name == attributes[0] and isinstance(obj, type | FunctionType):
            if obj.__module__ != module.__name__:
                return False
    return True


def _sources() -> list[Path]:
    paths = [p for package in PACKAGES for p in sorted((ROOT / package).rglob("*.py"))]
    return [p for p in paths if "templates" not in p.parts and p.name != "nbgrader_config.py"]


@pytest.mark.parametrize("path", _sources(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_name_a_docstring_points_at_exists(path):
    modules = _modules(path.relative_to(ROOT).parts[0])
    missing = [r for r in _references(path) if _resolves(r, modules) is False]
    assert not missing, f"{path.relative_to(ROOT)} names what does not exist: {missing}"


def test_a_stale_pointer_is_caught():
    """The check itself: a name asked of a module it moved away from (``sandbox.Zygote``, now
    ``zygote.Zygote``; ``judge.Spec``, which judge.py only imports from spec.py) is found; a
    file name, another package's module and a real name are not."""
    modules = _modules("autograder")
    assert _resolves("sandbox.Zygote", modules) is False
    assert _resolves("judge.Spec", modules) is False
    assert _resolves("course_lib.judging.Course", modules) is False
    assert _resolves("zygote.Zygote.reset", modules) is True
    assert _resolves("spec.Spec.skipped_cells", modules) is True
    assert _resolves("course_lib.grading.judging.Course", modules) is True
    assert _resolves("worker.py", modules) is None
    assert _resolves("vocab.VOCAB_SIZE", modules) is None  # course_lib's, not the grader's
