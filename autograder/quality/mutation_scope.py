"""Which names are bound before a statement of a cell: what the ``earlier`` operator reads.

The ``earlier`` mutation operator (``mutation_operators.op_earlier``) returns, or assigns to the
region's result, a name bound shortly before; :class:`Scope` knows, for each function of a
cell (or the cell itself), the names bound in it and on which line.
"""

from __future__ import annotations

import ast

EARLIER = 3  # an "earlier variable" mutant per name, for the names bound most recently


class Scope:
    """The names bound in each function (or the cell itself) and where, for ``earlier``."""

    def __init__(self, tree: ast.Module, regions: list[tuple[int, int]]):
        self.regions = regions
        self.owner: dict[int, ast.AST] = {}  # id(statement) -> its function (or the module)
        self.bindings: dict[int, list[tuple[int, str]]] = {}  # id(scope) -> (line, name)
        self._walk(tree, tree)

    def _walk(self, scope: ast.AST, node: ast.AST) -> None:
        binds = self.bindings.setdefault(id(scope), [])
        if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)) and node is scope:
            args = scope.args
            for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs]:
                if arg.arg != "self":
                    binds.append((scope.lineno, arg.arg))
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.stmt):
                self.owner[id(child)] = scope
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                binds.append((child.lineno, child.name))
                self._walk(child, child)
                continue
            if isinstance(child, ast.ClassDef):
                binds.append((child.lineno, child.name))
                self._walk(child, child)
                continue
            if isinstance(child, ast.Name) and isinstance(child.ctx, ast.Store):
                binds.append((child.end_lineno or child.lineno, child.id))
            self._walk(scope, child)

    def earlier(self, stmt: ast.stmt, exclude: set[str]) -> list[str]:
        """The ``EARLIER`` names bound most recently before ``stmt`` in its scope."""
        scope = self.owner.get(id(stmt))
        if scope is None:
            return []
        before = [(line, name) for line, name in self.bindings[id(scope)] if line < stmt.lineno]
        names: list[str] = []
        for _, name in sorted(before, reverse=True):
            if name not in names and name not in exclude and name != "_":
                names.append(name)
        return names[:EARLIER]

    def is_result(self, stmt: ast.Assign) -> bool:
        """Whether ``stmt`` is the last assignment of its name in the solution region and the
        name is read after the region (the region's result)."""
        scope = self.owner.get(id(stmt))
        if scope is None:
            return False
        name = stmt.targets[0].id
        region = next((r for r in self.regions if r[0] <= stmt.lineno <= r[1]), None)
        if region is None:
            return False
        later = [line for line, n in self.bindings[id(scope)] if n == name and line > stmt.lineno]
        if any(line <= region[1] for line in later):
            return False
        reads = [
            n
            for n in ast.walk(scope)
            if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load)
        ]
        return any(n.lineno > region[1] for n in reads)
