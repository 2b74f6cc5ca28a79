"""The shape of the code (issue 40), read from the source files alone: nothing here imports
``autograder`` or ``course_lib``, so a broken module cannot hide a broken shape.

The modules checked are those of the two packages, ``autograder`` and ``course_lib``: every
``.py`` file reached through folders that hold an ``__init__.py`` (so the runtime folders,
``autograder/class`` and the like, are not modules). The rules:

- no import cycle, every import statement counted wherever it sits (in functions, under
  ``if TYPE_CHECKING:``): a lazy or type-only import is still a dependency;
- no module over 600 lines, no function over 60 (def line to last line, docstring included),
  the command-line table excepted;
- every ``module.Name`` named in a docstring or comment exists;
- every folder of Python files is a package whose ``__init__`` says in a few lines what it does.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Set
from functools import cache
from itertools import pairwise
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]  # the repository
PACKAGES = ("autograder", "course_lib")
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 60
MAX_INIT_DOC_LINES = 15
# Functions allowed over MAX_FUNCTION_LINES, by "module:qualified name", with the reason.
LONG_FUNCTIONS = {
    "autograder.__main__:main": "the command-line table: one flat add_argument list per command",
}
# Folders under the packages that hold .py files without being packages, with the reason.
NOT_PACKAGES = {
    "autograder/class": "the real class's nbgrader folder (its nbgrader_config.py), not code",
    "autograder/demo": "the demo class made by `make demo`, a course folder",
    "autograder/out": "grading's output folder",
}


@cache
def modules() -> dict[str, Path]:
    """Every module of PACKAGES by dotted name (a package by its ``__init__.py``)."""
    found: dict[str, Path] = {}

    def walk(folder: Path, dotted: str) -> None:
        for path in sorted(folder.iterdir()):
            if path.is_dir() and (path / "__init__.py").is_file():
                walk(path, f"{dotted}.{path.name}")
            elif path.suffix == ".py":
                found[dotted if path.stem == "__init__" else f"{dotted}.{path.stem}"] = path

    for package in PACKAGES:
        walk(ROOT / package, package)
    return found


@cache
def tree(name: str) -> ast.Module:
    """Module ``name``'s syntax tree."""
    return ast.parse(modules()[name].read_text(), filename=str(modules()[name]))


def rel(name: str) -> str:
    """Module ``name``'s file, relative to the repository (for messages)."""
    return modules()[name].relative_to(ROOT).as_posix()


# --- 1. import cycles -------------------------------------------------------------------------


def imported(name: str, node: ast.Import | ast.ImportFrom) -> set[str]:
    """The modules of PACKAGES that one import statement of module ``name`` depends on.

    ``import a.b`` names ``a.b``; ``from a import x`` names ``a.x`` when that is a module, else
    ``a`` (x is a name of its ``__init__``); relative imports are resolved from ``name``'s
    package. Imports of other packages name nothing here."""
    known = modules()
    if isinstance(node, ast.Import):
        return {alias.name for alias in node.names if alias.name in known}
    base = node.module or ""
    if node.level:
        package = name if modules()[name].name == "__init__.py" else name.rpartition(".")[0]
        parts = package.split(".")[: len(package.split(".")) - (node.level - 1)]
        base = ".".join(parts + ([base] if base else []))
    targets = set()
    for alias in node.names:
        target = f"{base}.{alias.name}"
        targets.add(target if target in known else base)
    return {t for t in targets if t in known and t != name}


@cache
def import_graph() -> dict[str, dict[str, int]]:
    """Module -> {module it imports: line of the first such import}, every import statement
    of the file counted."""
    graph: dict[str, dict[str, int]] = {name: {} for name in modules()}
    for name, edges in graph.items():
        for node in ast.walk(tree(name)):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for target in imported(name, node):
                    edges[target] = min(edges.get(target, node.lineno), node.lineno)
    return graph


def reachable(graph: dict[str, dict[str, int]], start: str) -> dict[str, str]:
    """Each module reachable from ``start`` -> the module it was first reached from (breadth
    first, so following the links back gives a shortest path)."""
    came_from: dict[str, str] = {}
    queue = [start]
    for node in queue:
        for nxt in sorted(graph[node]):
            if nxt not in came_from:
                came_from[nxt] = node
                queue.append(nxt)
    return came_from


def cycles(graph: dict[str, dict[str, int]]) -> list[str]:
    """One shortest cycle per group of modules that import each other (strongly connected
    component), written ``a -(12)-> b -(3)-> a`` with the line of each import."""
    found, seen = [], set()
    for start in sorted(graph):
        came_from = reachable(graph, start)
        if start in seen or start not in came_from:
            continue
        seen |= {n for n in came_from if start in reachable(graph, n)}
        path = [start]
        while path[0] != start or len(path) == 1:
            path.insert(0, came_from[path[0]])
        found.append(start + "".join(f" -({graph[a][b]})-> {b}" for a, b in pairwise(path)))
    return found


def test_no_import_cycle() -> None:
    """No module depends on itself through its imports. Every import statement is an edge:
    at the top, inside a function (a lazy import is still a dependency: the module cannot be
    understood or moved without the other) and under ``if TYPE_CHECKING:`` (a type-only one
    too); ``from pkg import x`` is an edge to ``pkg.x`` when that is a module, else to
    ``pkg``'s ``__init__``, whose own imports are edges like any module's."""
    graph = import_graph()
    assert set(PACKAGES) <= set(graph), f"not all of {PACKAGES} found under {ROOT}"
    found = cycles(graph)
    assert not found, "import cycles (line numbers of the imports):\n" + "\n".join(found)


# --- 2, 3. sizes ------------------------------------------------------------------------------


def test_no_module_over_600_lines() -> None:
    long = {
        rel(n): lines
        for n, p in modules().items()
        if (lines := len(p.read_text().splitlines())) > MAX_MODULE_LINES
    }
    assert not long, f"modules over {MAX_MODULE_LINES} lines: {long}"


def functions(name: str) -> dict[str, int]:
    """Qualified name -> lines (def line to last line) of every function of module ``name``."""
    found: dict[str, int] = {}

    def walk(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                qual = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef):
                    found[qual] = (child.end_lineno or child.lineno) - child.lineno + 1
                walk(child, f"{qual}.")
            else:
                walk(child, prefix)

    walk(tree(name), "")
    return found


def test_no_function_over_60_lines() -> None:
    """Allowed long functions must exist and still be long (else the entry is stale)."""
    sizes = {f"{n}:{q}": lines for n in modules() for q, lines in functions(n).items()}
    long = {k: v for k, v in sizes.items() if v > MAX_FUNCTION_LINES and k not in LONG_FUNCTIONS}
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines: {long}"
    stale = [k for k in LONG_FUNCTIONS if sizes.get(k, 0) <= MAX_FUNCTION_LINES]
    assert not stale, f"LONG_FUNCTIONS entries no longer needed: {stale}"


# --- 4. references in docstrings and comments -------------------------------------------------

QUOTED = re.compile(r"``([^`\s]+?)(?:\(\))?``")
ROLE = re.compile(r":(?:class|func|meth|mod|data|attr):`~?([^`\s]+?)(?:\(\))?`")
DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")
NAME = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")
FILE_SUFFIXES = {"py", "toml", "json", "csv", "ipynb", "html", "j2", "txt", "sh", "md", "cfg"}


def texts(name: str) -> list[tuple[int, str]]:
    """(line, text) of the docstrings and comments of module ``name``."""
    found = [
        (node.body[0].lineno, doc)
        for node in ast.walk(tree(name))
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and (doc := ast.get_docstring(node, clean=False))
    ]
    source = io.StringIO(modules()[name].read_text()).readline
    found += [
        (t.start[0], t.string)
        for t in tokenize.generate_tokens(source)
        if t.type == tokenize.COMMENT
    ]
    return found


@cache
def defined(name: str, with_imports: bool = False) -> dict[str, Set[str]]:
    """Module ``name``'s module-level names -> their attributes (a class's members, and the
    ``self.x`` its methods assign; empty for other names). Names bound under ``if``/``try``
    at module level count."""
    names: dict[str, Set[str]] = {}
    imported: set[str] = set()  # a name a module imports is not its own: ``judge.Spec`` fails

    def bind(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, ast.ClassDef):
                names[node.name] = frozenset(members(node))  # frozenset: a class
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                names[node.name] = set()
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                imported.update((a.asname or a.name).split(".")[0] for a in node.names)
            elif isinstance(node, (ast.If, ast.Try, ast.With, ast.For)):
                names.update({t: set() for t in stores(getattr(node, "target", None))})
                names.update({t: set() for w in getattr(node, "items", []) for t in stores(w)})
                for block in ("body", "orelse", "finalbody"):
                    bind(getattr(node, block, []))
                for handler in getattr(node, "handlers", []):
                    bind(handler.body)
            else:
                names.update({t: set() for t in stores(node)})

    bind(tree(name).body)
    exported = _all_of(name) if "__all__" in names else set()
    return names | {n: set() for n in imported if with_imports or n in exported}


def _all_of(name: str) -> set[str]:
    """The names module ``name``'s ``__all__`` lists (its re-exports, said on purpose)."""
    for node in tree(name).body:
        if isinstance(node, ast.Assign) and stores(node) == {"__all__"}:
            return {e.value for e in ast.walk(node.value) if isinstance(e, ast.Constant)}
    return set()


def stores(node: ast.AST | None) -> set[str]:
    """The names that ``node`` binds (assignment targets, anywhere inside it)."""
    if node is None:
        return set()
    return {
        n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    }


def members(cls: ast.ClassDef) -> set[str]:
    """What ``cls`` defines: methods, nested classes, class attributes (dataclass fields
    included) and the ``self.x`` that its methods assign."""
    scopes = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    found = {n.name for n in cls.body if isinstance(n, scopes)}
    found |= set().union(*(stores(n) for n in cls.body if not isinstance(n, scopes)))
    return found | {
        n.attr
        for n in ast.walk(cls)
        if isinstance(n, ast.Attribute)
        and isinstance(n.ctx, ast.Store)
        and isinstance(n.value, ast.Name)
        and n.value.id == "self"
    }


def matching_modules(prefix: str) -> list[str]:
    """The modules whose dotted name is ``prefix`` or ends with ``.prefix``."""
    return [m for m in modules() if m == prefix or m.endswith(f".{prefix}")]


def local_names(name: str, line: int) -> set[str]:
    """The parameters and local variables of the functions of module ``name`` around
    ``line`` (``config`` in ``config.lr`` may be one, not the module)."""
    return set().union(
        set(),
        *(
            {a.arg for a in ast.walk(node.args) if isinstance(a, ast.arg)} | stores(node)
            for node in ast.walk(tree(name))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and node.lineno <= line <= (node.end_lineno or node.lineno)
        ),
    )


def unresolved(ref: str, here: str, line: int, role: bool) -> str | None:
    """Why reference ``ref`` (at ``line`` of module ``here``) does not resolve, or None when it
    resolves or is not a reference (the rule: ``test_docstring_references_resolve``)."""
    parts, bare = ref.split("."), False
    for cut in range(len(parts), 0, -1):
        found = matching_modules(".".join(parts[:cut]))
        if parts[0] not in PACKAGES:  # a short name: a module of the writer's own package
            found = [m for m in found if m.split(".")[0] == here.split(".")[0]]
        if len(found) > 1:
            return f"ambiguous module {'.'.join(parts[:cut])!r}: {found}"
        if found and parts[0] not in PACKAGES and parts[0] in local_names(here, line):
            return None  # a variable named like a module
        if found:
            module, rest = found[0], parts[cut:]
            break
    else:
        owners = [m for m in modules() if isinstance(defined(m).get(parts[0]), frozenset)]
        if role and (len(parts) == 1 or parts[0] in defined(here)):
            module, rest, bare = here, parts, True
        elif len(parts) == 2 and len(owners) == 1:
            module, rest = owners[0], parts  # ``Class.member``, the class defined once
        else:
            return None  # not a reference to our modules
    names = defined(module, with_imports=bare)  # a bare role's name: any name usable here
    if bare and len(rest) == 1 and any(rest[0] in m for m in names.values()):
        return None  # a role's bare name: a member of a class of this module
    if rest and rest[0] not in names:
        return f"{module} has no {rest[0]!r}"
    if len(rest) >= 2 and names[rest[0]] and rest[1] not in names[rest[0]]:
        return f"{module}.{rest[0]} has no {rest[1]!r}"
    return None


def references(name: str) -> list[tuple[int, str, bool]]:
    """(line, reference, written with a role) of module ``name``'s docstrings and comments:
    ``a.b`` chains of identifiers in double backquotes (a trailing ``()`` dropped) whose last
    part is not a file suffix (``course.toml``), and the targets of Sphinx roles."""
    found = []
    for start, text in texts(name):
        for pattern, role in ((QUOTED, False), (ROLE, True)):
            for match in pattern.finditer(text):
                ref = match.group(1)
                if (NAME if role else DOTTED).fullmatch(ref) and (
                    role or ref.rpartition(".")[2] not in FILE_SUFFIXES
                ):
                    found.append((start + text.count("\n", 0, match.start()), ref, role))
    return found


def test_docstring_references_resolve() -> None:
    """Every ``module.Name`` (``module.Name.attr``, ``pkg.module.Name``) named in double
    backquotes, and every :class:/:func:/:meth:/:mod:/:data:/:attr: target, in the docstrings
    and comments of the packages names something that exists. Precisely:

    - Read: a double-backquoted text that is a dotted chain of identifiers (``a.b``, a trailing
      ``()`` allowed) whose last part is not a file suffix (``worker.py``, ``course.toml``);
      a role's target, dotted or not. Anything else (shell text, paths, ``x=1``) is not read.
    - The module: the longest dotted prefix that names a module of the packages, by its full
      name (``autograder.kernels.judge``) or its last parts (``judge``, ``kernels.sandbox``).
      Several matches are ambiguous, and fail, unless exactly one is in the writer's own package
      (``grading`` in ``autograder`` is ``autograder.marking.grading``, not ``course_lib.grading``).
    - Not references, so not checked: a chain whose first part no module is named by
      (third-party ``torch.cat``, variables ``gdir.submitted``), unless it is ``Class.member``
      with ``Class`` defined by exactly one module of the packages; a chain whose first part
      is a short module name that is also a parameter or local variable of a function around
      it (``config.lr`` in ``course_lib.train``).
    - A role's target that names no module is looked up in the writer's module, a bare name
      also among its classes' members (Sphinx's current module and class).
    - Then the next part must be bound at the module's top level (def, class, assignment,
      import, also under ``if``/``try``/``with``/``for``), the part after a class must be one
      of its members (method, class attribute or field, nested class, ``self.x`` assigned in a
      method); parts beyond, and the members of imported names, are not checked."""
    bad = [
        f"{rel(name)}:{line}: {ref}: {why}"
        for name in modules()
        for line, ref, role in references(name)
        if (why := unresolved(ref, name, line, role))
    ]
    assert not bad, f"{len(bad)} references that do not resolve:\n" + "\n".join(bad)


# --- 5. the packages' __init__ ----------------------------------------------------------------


def test_every_package_says_what_it_does() -> None:
    """Every folder holding Python files under the packages is a package, and its
    ``__init__.py`` opens with a docstring of at most MAX_INIT_DOC_LINES lines (a stage says
    what it does and which stage it hands to; the two top packages' docstrings are their
    indexes, as long as they need: ``tests/course/test_packaging.py`` checks them)."""
    folders = {
        p.parent
        for package in PACKAGES
        for p in (ROOT / package).rglob("*.py")
        if "__pycache__" not in p.parts
        and not any(p.relative_to(ROOT).as_posix().startswith(f"{n}/") for n in NOT_PACKAGES)
    }
    problems = []
    for folder in sorted(folders):
        init = folder / "__init__.py"
        doc = ast.get_docstring(ast.parse(init.read_text())) if init.is_file() else None
        where = folder.relative_to(ROOT).as_posix()
        if not init.is_file():
            problems.append(
                f"{where}: Python files but no __init__.py (or list it in NOT_PACKAGES)"
            )
        elif doc is None:
            problems.append(f"{where}: __init__.py without a docstring")
        elif len(doc.splitlines()) > MAX_INIT_DOC_LINES and where not in PACKAGES:
            problems.append(f"{where}: __init__ docstring of {len(doc.splitlines())} lines")
    assert not problems, "\n".join(problems)
