"""The grader's shape, read from its source: a static walk of the call graph from one entry.

    python bench/walk.py                       # from marking.grading.grade, rooms = modules
    python bench/walk.py --rooms stage         # rooms = the stage sub-packages
    python bench/walk.py --extra               # every call into a room the walk had left
    python bench/walk.py --trace               # the walk itself, one function a line
    python bench/walk.py --root /path/to/another/checkout --entry grading.grade

Issue 40 measures how often following ``make grade`` through the code has a reader come back
to a file they had left. This script is the measure used in its closing notes (the issue's
own tool is not in this workplace; on d242065, where the issue reads 97 returns, this one
reads 94). Nothing is imported: every module of ``autograder/`` is parsed with ``ast``.

- The call graph: calls through a module alias (``judge.x()``), an imported name (``from .x
  import f``), a name of the same module, ``self.m()`` in a class, ``Class.m()`` and
  ``Class()`` (its ``__init__``), and a function handed over as a value in a call's arguments
  (a process's ``target=``, a pool's task): so the walk crosses from the grader into the
  worker it starts (``launcher._forked`` -> ``worker.main``). Calls on other objects
  (``gdir.student_dir()``) are not resolved.
- The walk: depth first from the entry, callees in the order ``ast.walk`` meets them, each
  function entered once; entering a callee moves to its module, finishing it moves back to
  the caller's (an Euler tour).
- rooms: the modules entered; stays: the runs of the walk in one room; returns: the stays in a
  room the walk had left before (stays - rooms); climbs: moves to a room on a higher floor.
- floors: the longest import path down to a module that imports none (import cycles taken as
  one); arrows: import edges between modules; cycles: the groups of modules that import each
  other (every import counts, lazy and type-only ones included).
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections import Counter
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
Key = tuple[str, str]  # (module, qualified name)


@dataclass
class Code:
    """The parsed modules of one package: imports, functions and the import graph."""

    modules: dict[str, ast.Module]
    aliases: dict[str, dict[str, tuple]] = field(default_factory=dict)
    arrows: dict[str, set[str]] = field(default_factory=dict)
    functions: dict[Key, tuple[ast.AST, str | None]] = field(default_factory=dict)


def read(root: Path, package: str = "autograder") -> Code:
    """Every module of ``root/package`` (recursively), parsed."""
    modules = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = ast.parse(path.read_text())
    code = Code(modules)
    for name, tree in modules.items():
        code.aliases[name], code.arrows[name] = _imports(code, root, name, tree)
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                code.functions[(name, node.name)] = (node, None)
            elif isinstance(node, ast.ClassDef):
                for sub in node.body:
                    if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        code.functions[(name, f"{node.name}.{sub.name}")] = (sub, node.name)
                code.functions.setdefault((name, node.name), (node, node.name))
    return code


def _imports(code: Code, root: Path, name: str, tree: ast.Module) -> tuple[dict, set[str]]:
    """The names a module's imports bind ("mod" or "fn") and the modules it imports."""
    aliases: dict[str, tuple] = {}
    arrows: set[str] = set()
    is_package = (root / Path(*name.split(".")) / "__init__.py").exists()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = name.split(".") if is_package else name.split(".")[:-1]
                parts = parts[: len(parts) - (node.level - 1)]
                base = ".".join(parts + ([node.module] if node.module else []))
            for alias in node.names:
                full = f"{base}.{alias.name}" if base else alias.name
                if full in code.modules:
                    aliases[alias.asname or alias.name] = ("mod", full)
                    arrows.add(full)
                elif base in code.modules:
                    aliases[alias.asname or alias.name] = ("fn", base, alias.name)
                    arrows.add(base)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in code.modules:
                    if alias.asname:
                        aliases[alias.asname] = ("mod", alias.name)
                    arrows.add(alias.name)
    arrows.discard(name)
    return aliases, arrows


def _target(code: Code, module: str, name: str) -> Key | None:
    key = (module, name)
    if key not in code.functions:
        return None
    return (module, f"{name}.__init__") if (module, f"{name}.__init__") in code.functions else key


def _resolve(code: Code, module: str, cls: str | None, expr: ast.AST) -> Key | None:
    """The function an expression names (a callee, or a function handed over), if known."""
    aliases = code.aliases[module]
    if isinstance(expr, ast.Name):
        found = _target(code, module, expr.id)
        if found is None and aliases.get(expr.id, ("",))[0] == "fn":
            _, other, name = aliases[expr.id]
            found = _target(code, other, name)
        return found
    if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name):
        owner = expr.value.id
        if owner == "self" and cls:
            return _target(code, module, f"{cls}.{expr.attr}")
        if aliases.get(owner, ("",))[0] == "mod":
            return _target(code, aliases[owner][1], expr.attr)
        if (module, owner) in code.functions:
            return _target(code, module, f"{owner}.{expr.attr}")
    return None


def callees(code: Code, key: Key) -> list[Key]:
    """What the function ``key`` calls or hands over, in the order ``ast.walk`` meets it."""
    module, _ = key
    node, cls = code.functions[key]
    found = []
    for call in ast.walk(node):
        if not isinstance(call, ast.Call):
            continue
        handed = [*call.args, *(k.value for k in call.keywords)]
        for expr in [call.func, *(a for a in handed if isinstance(a, (ast.Name, ast.Attribute)))]:
            target = _resolve(code, module, cls, expr)
            if target and target != key:
                found.append(target)
    return found


def walk(code: Code, entry: Key) -> list[tuple[int, Key]]:
    """The functions in the order the walk enters them, with their depth."""
    seen: set[Key] = set()
    order: list[tuple[int, Key]] = []
    stack: list[tuple[int, Key]] = [(0, entry)]
    while stack:  # depth first, each function entered once (iterative: deep call chains)
        depth, key = stack.pop()
        if key in seen:
            continue
        seen.add(key)
        order.append((depth, key))
        stack += [(depth + 1, k) for k in reversed(callees(code, key)) if k not in seen]
    return order


def tour(order: list[tuple[int, Key]], room) -> list[str]:
    """The rooms of the Euler tour of the walk: a callee's room, then its caller's again."""
    rooms: list[str] = []
    path: list[str] = []
    for depth, key in order:
        while len(path) > depth:
            path.pop()
            if path:
                rooms.append(path[-1])
        rooms.append(room(key))
        path.append(room(key))
    while len(path) > 1:
        path.pop()
        rooms.append(path[-1])
    return rooms


def floors(code: Code) -> tuple[dict[str, int], list[list[str]]]:
    """Each module's floor (imports collapsed into their cycles) and the cycles."""
    sys.setrecursionlimit(10_000)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups: list[list[str]] = []

    def strong(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in code.arrows[v]:
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                group.append(w)
                if w == v:
                    break
            groups.append(group)

    for module in code.modules:
        if module not in index:
            strong(module)
    group_of = {m: i for i, g in enumerate(groups) for m in g}
    height: dict[int, int] = {}
    for i, group in enumerate(groups):  # Tarjan emits a group after every group it imports
        below = [height[group_of[w]] + 1 for v in group for w in code.arrows[v] if group_of[w] != i]
        height[i] = max(below, default=0)
    return {m: height[group_of[m]] for m in code.modules}, [g for g in groups if len(g) > 1]


@dataclass(frozen=True)
class Shape:
    """The figures of one walk."""

    functions: int
    rooms: int
    stays: int
    returns: int
    climbs: int
    returned_to: list[tuple[str, int]]
    extra: list[tuple[Key, Key]]  # calls that enter a room the walk was in before


def measure(code: Code, entry: Key, by_stage: bool = False) -> Shape:
    """Walk from ``entry`` and count (rooms: modules, or stage sub-packages)."""

    def room(key: Key) -> str:
        return ".".join(key[0].split(".")[:2]) if by_stage else key[0]

    order = walk(code, entry)
    rooms = tour(order, room)
    stays = [r for i, r in enumerate(rooms) if i == 0 or rooms[i - 1] != r]
    level, _ = floors(code)
    left: set[str] = set()
    returned: Counter[str] = Counter()
    climbs = 0
    for before, now in pairwise(stays):
        left.add(before)
        returned[now] += now in left
        climbs += not by_stage and level[now] > level[before]
    entered: set[str] = set()
    extra = []
    path: list[Key] = []
    for depth, key in order:
        del path[depth:]
        if path and room(path[-1]) != room(key) and room(key) in entered:
            extra.append((path[-1], key))
        entered.add(room(key))
        path.append(key)
    return Shape(
        functions=len(order),
        rooms=len(set(stays)),
        stays=len(stays),
        returns=len(stays) - len(set(stays)),
        climbs=climbs,
        returned_to=returned.most_common(8),
        extra=extra,
    )


def find(code: Code, entry: str) -> Key:
    """``module.function`` (the module by its last name) as a key of ``code``."""
    short, _, name = entry.partition(".")
    for module, qualname in code.functions:
        if module.split(".")[-1] == short and qualname == name:
            return (module, qualname)
    raise SystemExit(f"no function {entry} in the package")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout to read")
    parser.add_argument("--entry", default="grading.grade", help="module.function to walk from")
    parser.add_argument("--rooms", choices=["module", "stage"], default="module")
    parser.add_argument("--extra", action="store_true", help="list the calls into rooms left")
    parser.add_argument("--trace", action="store_true", help="print the walk")
    args = parser.parse_args(argv)
    code = read(args.root)
    entry = find(code, args.entry)
    shape = measure(code, entry, by_stage=args.rooms == "stage")
    level, cycles = floors(code)
    arrows = sum(len(a) for a in code.arrows.values())
    print(f"walk from {entry[0]}.{entry[1]}: {shape.functions} functions, {shape.rooms} rooms, "
          f"{shape.stays} stays, {shape.returns} returns, {shape.climbs} climbs")  # fmt: skip
    print(f"modules {len(code.modules)}, floors {1 + max(level.values())}, arrows {arrows}, "
          f"cycles {len(cycles)} {cycles if cycles else ''}".rstrip())  # fmt: skip
    print("most returned to: " + ", ".join(f"{r} {n}" for r, n in shape.returned_to))
    if args.extra:
        for caller, callee in shape.extra:
            print(f"  {caller[0]}.{caller[1]} -> {callee[0]}.{callee[1]}")
    if args.trace:
        for depth, (module, name) in walk(code, entry):
            print("  " * depth + f"{module.split('.')[-1]}.{name}")


if __name__ == "__main__":
    sys.exit(main())
