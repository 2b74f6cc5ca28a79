"""Wrong variants of a solution, made automatically: the mutants ``make audit`` grades.

A *mutant* is a solution cell with one small change inside one of its solution regions
(``### BEGIN SOLUTION`` ... ``### END SOLUTION``), of the kind students make, made by one of
the operators of ``mutation_operators.py`` (swap, drop, dim, transpose, activation, scale,
mask, earlier), each applied wherever it fits, one change per mutant.

Every mutant is a valid program (it parses) that differs from the solution: mutants are
deduplicated by their unparsed source (``ast.unparse``), and one equal to the solution is
dropped. The change is spliced into the cell's own text (comments and layout kept), so a
mutant reads as a one-line diff. A mutant can still be *equivalent* (``dim=1`` and ``dim=-1``
of a 2-D tensor): no test can catch it, and ``make audit`` lists it among the survivors.
"""

from __future__ import annotations

import ast
import difflib
from collections.abc import Iterator
from dataclasses import dataclass

from nbformat import NotebookNode

from autograder.course import spec
from autograder.quality.mutation_operators import OPERATOR_FUNCTIONS, OPERATORS
from autograder.quality.mutation_scope import Scope


@dataclass(frozen=True)
class Mutant:
    """One wrong variant of an answer cell of a solution notebook."""

    notebook: str
    cell: str  # grade id of the answer cell
    index: int  # its number among the cell's mutants (stable for a given solution)
    operators: tuple[str, ...]  # the operators that made this very program
    description: str  # what changed, in words
    line: int  # the line of the cell that changed (1-based)
    original: str  # the cell's source (markers included)
    source: str  # the mutated source (markers included)

    @property
    def id(self) -> str:
        return f"{self.notebook}:{self.cell}:{self.index}"

    def diff(self, context: int = 1) -> str:
        """The change as a unified diff of the cell."""
        lines = difflib.unified_diff(
            self.original.splitlines(),
            self.source.splitlines(),
            f"{self.cell} (solution)",
            f"{self.cell} (mutant {self.index}: {self.operators[0]})",
            n=context,
            lineterm="",
        )
        return "\n".join(lines)

    def to_dict(self) -> dict:
        return {
            "id": self.id,
            "notebook": self.notebook,
            "cell": self.cell,
            "index": self.index,
            "operators": list(self.operators),
            "description": self.description,
            "line": self.line,
            "diff": self.diff(),
        }


# --- where the solution regions are -----------------------------------------------------------


def region_lines(source: str) -> list[tuple[int, int]]:
    """The solution regions of a cell: (first, last) line numbers (1-based) of their code."""
    found, start = [], None
    for number, line in enumerate(source.split("\n"), start=1):
        if spec.BEGIN_SOLUTION in line:
            start = number + 1
        elif spec.END_SOLUTION in line and start is not None:
            if number - 1 >= start:
                found.append((start, number - 1))
            start = None
    return found


def _inside(node: ast.AST, regions: list[tuple[int, int]]) -> bool:
    first, last = getattr(node, "lineno", None), getattr(node, "end_lineno", None)
    if first is None or last is None:
        return False
    return any(lo <= first and last <= hi for lo, hi in regions)


# --- making the mutants of a cell -------------------------------------------------------------


def _offsets(source: str) -> list[int]:
    """The offset of the start of each line (1-based index: ``[0]`` is unused)."""
    starts, total = [0, 0], 0
    for line in source.splitlines(keepends=True):
        total += len(line)
        starts.append(total)
    return starts


def _char(source_lines: list[str], starts: list[int], line: int, col: int) -> int:
    """The character offset of (line, col), col in UTF-8 bytes as ``ast`` gives it."""
    text = source_lines[line - 1]
    return starts[line] + len(text.encode()[:col].decode(errors="ignore"))


def _splice(source: str, node: ast.AST, text: str) -> str:
    lines = source.splitlines(keepends=True)
    starts = _offsets(source)
    begin = _char(lines, starts, node.lineno, node.col_offset)
    end = _char(lines, starts, node.end_lineno, node.end_col_offset)
    return source[:begin] + text + source[end:]


def _key(node: ast.AST) -> tuple:
    return (
        type(node).__name__,
        node.lineno,
        node.col_offset,
        node.end_lineno,
        node.end_col_offset,
    )


def _intended(source: str, target: ast.AST, new: ast.AST) -> str:
    """``ast.dump`` of ``source`` with ``target`` (found by position) replaced by ``new``."""
    tree = ast.parse(source)
    wanted = _key(target)

    class Put(ast.NodeTransformer):
        def visit(self, node: ast.AST) -> ast.AST:
            if hasattr(node, "end_col_offset") and _key(node) == wanted:
                return new
            return self.generic_visit(node)

    return ast.dump(Put().visit(tree))


def _apply(source: str, target: ast.AST, new: ast.AST) -> str | None:
    """``source`` with ``target`` replaced by ``new`` in its text, or None when no splice gives
    exactly that program (e.g. an operator precedence the replacement would change)."""
    ast.fix_missing_locations(new)
    wanted = _intended(source, target, new)
    text = ast.unparse(new)
    for attempt in (text, f"({text})"):
        changed = _splice(source, target, attempt)
        try:
            if ast.dump(ast.parse(changed)) == wanted:
                return changed
        except SyntaxError:
            continue
    return None


def _changes(
    source: str, cell: str, operators: tuple[str, ...]
) -> Iterator[tuple[str, str, int, str, str]]:
    """Every valid change of the solution regions of ``source``, in order of position: (operator,
    description, line, the changed source, its unparsed form)."""
    regions = region_lines(source)
    tree = ast.parse(source)
    scope = Scope(tree, regions)
    nodes = [n for n in ast.walk(tree) if _inside(n, regions)]
    nodes.sort(key=lambda n: (n.lineno, n.col_offset))
    for node in nodes:
        for name, operator in OPERATOR_FUNCTIONS.items():
            if name not in operators:
                continue
            for op, description, new in operator(node, scope):
                changed = _apply(source, node, new)
                if changed is None:
                    continue
                try:
                    key = ast.unparse(ast.parse(changed))
                    compile(changed, f"<mutant of {cell}>", "exec")
                except (SyntaxError, ValueError):
                    continue
                yield op, description, node.lineno, changed, key


def mutants_of_cell(
    source: str, notebook: str, cell: str, operators: tuple[str, ...] = OPERATORS
) -> list[Mutant]:
    """Every mutant of the solution regions of one cell (``source``, markers included), one
    change each, deduplicated, in order of position."""
    try:
        original = ast.unparse(ast.parse(source))
    except SyntaxError:
        return []
    seen: dict[str, int] = {}  # unparsed source -> its index in found
    found: list[dict] = []
    for op, description, line, changed, key in _changes(source, cell, operators):
        if key == original:
            continue
        if key in seen:
            entry = found[seen[key]]
            if op not in entry["operators"]:
                entry["operators"].append(op)
            continue
        seen[key] = len(found)
        found.append({"operators": [op], "description": description, "line": line,
                      "source": changed})  # fmt: skip
    return [
        Mutant(
            notebook,
            cell,
            i,
            tuple(m["operators"]),
            m["description"],
            m["line"],
            source,
            m["source"],
        )  # fmt: skip
        for i, m in enumerate(found, start=1)
    ]


@dataclass(frozen=True)
class Answer:
    """An answer cell of a solution notebook and the graded tests that follow it (up to the
    next answer cell): the tests meant to catch its mistakes."""

    notebook: str
    cell: str
    source: str
    tests: tuple[str, ...]


def answers(nb: NotebookNode, name: str) -> list[Answer]:
    """The code answer cells of a solution notebook that tests follow, in order. An answer no
    test follows (an experiment for a written answer) is left out: no test grades it."""
    found: list[Answer] = []
    current: dict | None = None
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        if spec.is_solution(cell) and region_lines(cell.source):
            current = {"cell": spec.grade_id(cell), "source": cell.source, "tests": []}
            found.append(current)
        elif spec.is_test(cell) and current is not None:
            current["tests"].append(spec.grade_id(cell))
    return [Answer(name, a["cell"], a["source"], tuple(a["tests"])) for a in found if a["tests"]]
