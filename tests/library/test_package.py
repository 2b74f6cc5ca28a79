"""The shape of course_lib: its index names every module, its modules import each other
without a cycle (imports inside functions and type-only imports count too), the teaching
modules and the grading sub-package stay apart, and an install ships the sub-package."""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

from helpers import ROOT

LIB = ROOT / "course_lib"


def module_names(lib: Path = LIB) -> dict[str, Path]:
    """Every module of the package at ``lib``, by dotted name (a package by its own name)."""
    found = {}
    for path in sorted(lib.rglob("*.py")):
        parts = path.relative_to(lib.parent).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def imports_of(name: str, path: Path, modules: set[str]) -> set[str]:
    """The modules of ``modules`` that module ``name`` imports anywhere in its source (at the
    top, inside functions, under ``if TYPE_CHECKING``); ``from x import y`` names ``x.y``
    when that is a module, else ``x``."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package
            for _ in range(node.level - 1):
                base = base.rpartition(".")[0]
            if node.level:
                base = f"{base}.{node.module}" if node.module else base
            else:
                base = node.module or ""
            targets = [f"{base}.{alias.name}" for alias in node.names]
            targets = [t if t in modules else base for t in targets]
        else:
            continue
        found |= {t for t in targets if t in modules and t != name}
    return found


def import_graph(lib: Path = LIB) -> dict[str, set[str]]:
    modules = module_names(lib)
    return {n: imports_of(n, p, set(modules)) for n, p in modules.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle through each module that lies on one (a depth-first search's back edges)."""
    found, state = [], {}

    def visit(node: str, path: list[str]) -> None:
        state[node] = "open"
        for nxt in sorted(graph[node]):
            if state.get(nxt) == "open":
                found.append(path[path.index(nxt) :] + [nxt])
            elif nxt not in state:
                visit(nxt, [*path, nxt])
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    return found


def test_no_import_cycle_in_course_lib():
    graph = import_graph()
    assert "course_lib.viz" in graph["course_lib.callbacks"]  # the edges are read
    assert cycles(graph) == []


def test_a_cycle_is_found():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c", "a"]]


def test_teaching_modules_and_grading_stay_apart():
    """No teaching module imports ``course_lib.grading``, and it imports no teaching module
    (its dispatcher builds the course's given code from course_lib's files, by path)."""
    graph = import_graph()
    grading = {n for n in graph if n.startswith("course_lib.grading")}
    for name, targets in graph.items():
        if name in grading:
            assert targets <= grading, name
        else:
            assert not targets & grading, name


def test_the_index_names_every_module():
    """``course_lib/__init__.py`` lists every teaching module and the grading sub-package;
    ``course_lib/grading/__init__.py`` lists its own modules."""
    import course_lib
    import course_lib.grading

    modules = set(module_names()) - {"course_lib"}
    top = {n for n in modules if n.count(".") == 1}
    named = set(re.findall(r":mod:`(course_lib\.[a-z_]+)`", course_lib.__doc__))
    assert named == top, (sorted(top - named), sorted(named - top))
    inner = {n for n in modules if n.startswith("course_lib.grading.")}
    named = set(re.findall(r":mod:`(course_lib\.grading\.[a-z_]+)`", course_lib.grading.__doc__))
    assert named == inner, (sorted(inner - named), sorted(named - inner))


def test_an_install_ships_the_grading_package():
    """The packages setuptools finds with pyproject.toml's rule (``make public``, Gradescope's
    package/ and the grading venv install with it) include the sub-package."""
    from setuptools import find_packages

    rule = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    packages = find_packages(str(ROOT), include=rule["packages"]["find"]["include"])
    assert {"course_lib", "course_lib.grading"} <= set(packages)


def test_every_public_function_and_class_has_a_user_besides_the_tests():
    """A public function or class of course_lib is named outside its own definition by
    course_lib, the grader, the benchmarks or a solution notebook (its code or its text, which
    may point students to it); one that only the tests use is dead weight in the library."""
    import nbformat

    texts = [
        p.read_text()
        for folder in ("course_lib", "autograder", "bench")
        for p in sorted((ROOT / folder).rglob("*.py"))
    ]
    for path in sorted((ROOT / "solutions").rglob("*.ipynb")):
        texts += [cell.source for cell in nbformat.read(path, as_version=4).cells]
    text = "\n".join(texts)
    unused = []
    for name, path in module_names().items():
        for node in ast.parse(path.read_text()).body:
            if not isinstance(node, (ast.FunctionDef, ast.ClassDef)) or node.name[0] == "_":
                continue
            word = re.escape(node.name)
            uses = len(re.findall(rf"\b{word}\b", text))
            definitions = len(re.findall(rf"\b(?:def|class) {word}\b", text))
            if uses <= definitions:
                unused.append(f"{name}.{node.name}")
    assert unused == []
