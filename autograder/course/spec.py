"""The notebook spec: what grading knows of a solution notebook, read without a kernel.

A graded test of ``solutions/`` has two parts (``solutions/README.md``):

- its *visible checks* (the test cell's code): students run them, grading does not; when
  grading, the test cell is reduced to its docstring (its *graded form*), so nothing of a
  test runs in the student's kernel;
- its *checks* (the code cell tagged ``judge`` after it, instructor only), one per behaviour
  with its points (:mod:`course_lib.grading.judging`), which :mod:`autograder.kernels.judge` runs in the
  process that drives the student's kernel.

This module

- reads a solution notebook into a :class:`Spec`: the tests with their points and graded
  forms, and the judge cells, in order (:func:`spec_of`); and the notebook nbgrader sees,
  without its instructor-only cells (:func:`without_instructor_cells`);
- keeps the specs of a grading directory on disk (:func:`read_specs`, one JSON each);
- holds the verdict on a test (:class:`TestVerdict`), as JSON and as the text its graded
  cell shows (:func:`annotate`).

Given code is never looked up in the student's namespace: a spec holds the definitions of the
notebook's given code cells as released (:func:`given_definitions`) and the names its answer
cells define (:func:`answer_names`); a check's ``course``
(``course_lib.grading.judging.Course``) is that code built afresh in the kernel, around the
student's answers alone.

What a cell is: its nbgrader metadata (``cell.metadata.nbgrader``)

    solution: true                         a cell the student completes (code or written answer)
    grade: true, points: n                 a graded cell: a test (code) or a written answer
    locked: true                           students may not edit it (setup cell, tests)
    grade_id: str                          the cell's name, unique in its notebook

An *autograded test* is a graded code cell that is not a solution; a *written answer* is a
graded markdown solution cell, scored by hand in formgrader. Cell tags (``cell.metadata.tags``): ``judge`` marks a judge cell; ``instructor`` marks any
other instructor-only cell (a reference answer or result): both are removed from what
nbgrader, the release and students ever see. ``skip_in_grading`` marks given code the tests
do not need (training, plots, results): a grading run (and the release checks and variants,
which run as grading does) leaves out every cell whose code is that cell's, as handed out
(:meth:`Spec.skips`; a cell the student changed runs). The release proves that nothing that
runs needs a skipped cell: the solution must still run without an error and get full marks.
"""

from __future__ import annotations

import ast
import builtins
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

import nbformat
from nbformat import NotebookNode

# --- what a cell is: nbgrader's metadata, the course's tags --------------------------------

BEGIN_SOLUTION = "BEGIN SOLUTION"
END_SOLUTION = "END SOLUTION"
BEGIN_HIDDEN = "BEGIN HIDDEN TESTS"
END_HIDDEN = "END HIDDEN TESTS"
MARKERS = (BEGIN_SOLUTION, END_SOLUTION, BEGIN_HIDDEN, END_HIDDEN)


def meta(cell: NotebookNode) -> dict:
    """The cell's nbgrader metadata (empty for a plain cell)."""
    value = cell.get("metadata", {}).get("nbgrader", {})
    return value if isinstance(value, dict) else {}


def grade_id(cell: NotebookNode) -> str | None:
    return meta(cell).get("grade_id")


def is_solution(cell: NotebookNode) -> bool:
    return bool(meta(cell).get("solution"))


def is_grade(cell: NotebookNode) -> bool:
    return bool(meta(cell).get("grade"))


def is_locked(cell: NotebookNode) -> bool:
    return bool(meta(cell).get("locked"))


def is_test(cell: NotebookNode) -> bool:
    """An autograded test: a graded code cell that is not a solution."""
    return cell.cell_type == "code" and is_grade(cell) and not is_solution(cell)


def is_protected(cell: NotebookNode) -> bool:
    """A code cell the student must not change: a test or a locked cell (e.g. setup)."""
    return cell.cell_type == "code" and (is_test(cell) or is_locked(cell))


def points(cell: NotebookNode) -> float:
    return float(meta(cell).get("points", 0) or 0)


def cells_by_id(nb: NotebookNode) -> dict[str, NotebookNode]:
    """The nbgrader cells of ``nb`` by grade id (the first one when an id repeats)."""
    found: dict[str, NotebookNode] = {}
    for cell in nb.cells:
        gid = grade_id(cell)
        if gid is not None and gid not in found:
            found[gid] = cell
    return found


def without_markers(source: str) -> str:
    """``source`` without its solution and hidden-test marker lines (the answer kept)."""
    return "\n".join(line for line in source.split("\n") if not any(m in line for m in MARKERS))


@dataclass(frozen=True)
class GradedCell:
    """One graded cell of an assignment notebook: a test (``auto``) or a written answer."""

    grade_id: str
    points: float
    auto: bool


JUDGE_TAG = "judge"
INSTRUCTOR_TAG = "instructor"
SKIP_TAG = "skip_in_grading"


def tags(cell: NotebookNode) -> list[str]:
    value = cell.get("metadata", {}).get("tags", [])
    return [t for t in value if isinstance(t, str)] if isinstance(value, list) else []


def is_judge(cell: NotebookNode) -> bool:
    return cell.cell_type == "code" and JUDGE_TAG in tags(cell)


def is_instructor_only(cell: NotebookNode) -> bool:
    """A judge cell or any cell tagged ``instructor``: never in a student's copy."""
    return is_judge(cell) or INSTRUCTOR_TAG in tags(cell)


def without_instructor_cells(nb: NotebookNode) -> NotebookNode:
    """A copy of ``nb`` without its instructor-only cells (what nbgrader gets as source)."""
    copy = nbformat.from_dict(nb)
    copy.cells = [c for c in copy.cells if not is_instructor_only(c)]
    return copy


# --- the spec of a notebook -------------------------------------------------------------------


@dataclass(frozen=True)
class Test:
    """One autograded test cell: its points and the source the grader runs in its place."""

    grade_id: str
    points: float
    graded_source: str


@dataclass(frozen=True)
class JudgeCell:
    """A judge cell: the test cell above it (None above every test) and its code."""

    test: str | None
    source: str
    cell: int  # index in the solution notebook, for messages


@dataclass(frozen=True)
class Spec:
    """What the judge needs of one notebook, read from its solution notebook."""

    name: str
    tests: dict[str, Test]
    judges: tuple[JudgeCell, ...]
    skip: tuple[str, ...] = ()  # the code of the cells tagged skip_in_grading (normalised)
    # every graded cell (tests and written answers) with its points: what the notebook is worth
    graded: tuple[GradedCell, ...] = ()
    course: str = ""  # the definitions of its given code cells (a check's ``course``)
    answers: tuple[str, ...] = ()  # the names its answer cells define

    @property
    def autograded_max(self) -> float:
        return sum(c.points for c in self.graded if c.auto)

    @property
    def manual_max(self) -> float:
        return sum(c.points for c in self.graded if not c.auto)

    @property
    def max(self) -> float:
        return self.autograded_max + self.manual_max

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1)

    @classmethod
    def from_json(cls, text: str) -> Spec:
        data = json.loads(text)
        tests = {k: Test(**v) for k, v in data["tests"].items()}
        judges = tuple(JudgeCell(**j) for j in data["judges"])
        if "graded" not in data:  # written before specs held the graded cells
            raise ValueError(
                f"the judge spec of {data['name']} was written by an older version of the "
                "grader: run make grade once (it writes every spec again)"
            )
        graded = tuple(GradedCell(**g) for g in data["graded"])
        return cls(
            data["name"],
            tests,
            judges,
            tuple(data.get("skip", ())),
            graded,
            str(data.get("course", "")),
            tuple(data.get("answers", ())),
        )

    def skips(self, cell: NotebookNode) -> bool:
        """Whether ``cell`` may be left out of a grading run: a code cell whose code is, but
        for blank lines and trailing spaces, a cell the course tagged ``skip_in_grading``."""
        return cell.get("cell_type") == "code" and normalised(cell.get("source", "")) in set(
            self.skip
        )

    def skipped_cells(self, cells: list[NotebookNode]) -> list[int]:
        """The indices of the cells a grading run of ``cells`` leaves out: those that
        :meth:`skips`, unless a cell that runs may read a name it binds (a student who uses the
        trained model of a skipped cell in their own cell gets that cell run, as on their
        machine). A name read at the top level of a cell is read when the cell runs: only
        the cells before it count (read backwards, so a skipped cell's own needs do not
        count). A name read inside a function's body is read when it is called, which may be
        after the whole notebook ran (the tests call the student's code then): a skipped cell
        anywhere that binds it runs, and so on until no more cell has to run."""
        names = {
            i: _names(str(c.get("source", "")))
            for i, c in enumerate(cells)
            if c.get("cell_type") == "code"
        }
        later: set[str] = set()  # read at call time by a cell that runs
        while True:
            skipped = self._skipped(cells, names, later)
            found = set(later).union(*(n[2] for i, n in names.items() if i not in skipped))
            if found == later:
                return skipped
            later = found

    def _skipped(self, cells: list[NotebookNode], names: dict, later: set[str]) -> list[int]:
        """One backward pass of :meth:`skipped_cells`, ``later`` read after every cell."""
        wanted: set[str] = set(later)
        skipped = []
        for index in reversed(range(len(cells))):
            if index not in names:
                continue
            bound, loaded, _ = names[index]
            needed = ANY_NAME in wanted or bool(bound & wanted) or (ANY_NAME in bound and wanted)
            if self.skips(cells[index]) and not needed:
                skipped.append(index)
                continue
            wanted |= loaded
        return sorted(skipped)


ANY_NAME = "*"  # a cell that may read any name (eval, globals...): every earlier cell runs
DYNAMIC = frozenset({"eval", "exec", "globals", "locals", "vars", "__import__", "__main__"})


def names_of(source: str) -> tuple[set[str], set[str]]:
    """The names a cell may bind, and those it may read from other cells (both
    over-estimated, which only makes more cells run): every name stored anywhere in it; every
    name it reads before its own code bound it (in a function's body: any name the cell does
    not bind). IPython syntax (magics, ``!cmd``) is translated first; a cell that still does
    not parse, or reads names dynamically (:data:`DYNAMIC`), may read any name
    (:data:`ANY_NAME`)."""
    bound, loaded, _ = _names(source)
    return bound, loaded


def _names(source: str) -> tuple[set[str], set[str], set[str]]:
    """:func:`names_of`, and of the names it reads those read in a function's body (read
    when the function is called: at any time after the cell ran)."""
    try:
        from IPython.core.inputtransformer2 import TransformerManager

        tree = ast.parse(TransformerManager().transform_cell(source))
    except Exception:  # not Python even for IPython: assume the worst
        return set(), {ANY_NAME}, set()
    first_bound: dict[str, tuple[int, int]] = {}  # name -> where the binding takes effect
    reads: list[tuple[str, tuple[int, int], bool]] = []  # name, where, inside a function
    params: set[str] = set()  # the parameters of its functions and lambdas

    def bind(name: str, at: tuple[int, int]) -> None:
        first_bound[name] = min(first_bound.get(name, at), at)

    def visit(node: ast.AST, statement: ast.AST | None, in_function: bool) -> None:
        if isinstance(node, ast.stmt):
            statement = node
        end = (getattr(statement, "end_lineno", 0) or 0, getattr(statement, "end_col_offset", 0))
        if isinstance(node, ast.Name):
            at = (node.lineno, node.col_offset)
            if isinstance(node.ctx, ast.Load):
                reads.append((node.id, at, in_function))
            elif isinstance(statement, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
                bind(node.id, end)  # bound once the whole statement has run
            else:
                bind(node.id, at)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bind(node.name, end)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                bind(ANY_NAME if alias.name == "*" else (alias.asname or alias.name).split(".")[0],
                     end)  # fmt: skip
        elif isinstance(node, ast.Global):
            for name in node.names:
                bind(name, (0, 0))
        elif isinstance(node, ast.arg):
            params.add(node.arg)
        inner = in_function or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        for child in ast.iter_child_nodes(node):
            visit(child, statement, inner)

    visit(tree, None, False)
    loaded, deferred = set(), set()
    for name, at, in_function in reads:
        if in_function and name not in first_bound and name not in params:
            deferred.add(name)
        if (name not in first_bound and not (in_function and name in params)) or (
            not in_function and name in first_bound and at <= first_bound[name]
        ):
            loaded.add(name)
    for found in (loaded, deferred):
        if found & DYNAMIC:
            found.add(ANY_NAME)
    return set(first_bound), loaded, deferred


def normalised(source: object) -> str:
    """``source`` without its leading and trailing blank lines and trailing spaces."""
    text = "".join(source) if isinstance(source, list) else str(source or "")
    return "\n".join(line.rstrip() for line in text.strip().split("\n"))


def docstring_lines(source: str) -> list[str]:
    """The lines of the docstring that opens ``source`` (none when it does not open with one)."""
    try:
        body = ast.parse(source).body
    except SyntaxError:
        return []
    first = body[0] if body else None
    if isinstance(first, ast.Expr) and isinstance(getattr(first, "value", None), ast.Constant):
        if isinstance(first.value.value, str):
            return source.split("\n")[: first.end_lineno]
    return []


def graded_source(cell: NotebookNode) -> str:
    """What the grader runs in place of a test cell: its docstring alone. The visible checks are
    for students, and the test's checks run in the grader: nothing of a test runs where the
    student's code runs."""
    return "\n".join(docstring_lines(cell.source)).strip("\n") + "\n"


def is_given_code(cell: NotebookNode) -> bool:
    """A code cell of the course's own (not an answer, a test, a judge or instructor-only cell,
    nor one that grading leaves out)."""
    return (
        cell.cell_type == "code"
        and not is_instructor_only(cell)
        and SKIP_TAG not in tags(cell)
        and not is_solution(cell)
        and not is_grade(cell)
    )


def _static(node: ast.AST) -> bool:
    """Whether an expression only reads names and constants (no call, index or lambda)."""
    allowed = (ast.Constant, ast.Name, ast.Attribute, ast.Tuple, ast.List, ast.Set, ast.Dict,
               ast.BinOp, ast.UnaryOp, ast.operator, ast.unaryop, ast.expr_context)  # fmt: skip
    return all(isinstance(n, allowed) for n in ast.walk(node))


def given_definitions(source: str, known: set[str] | None = None) -> str:
    """The definitions of a given cell, what a check's ``course`` is built from: its imports,
    functions and classes, and assignments of constants made of them (``V =
    vocab.VOCAB_SIZE``; ``known``: the names earlier given cells define, updated); nothing that
    runs anything (data loading, training, seeding, Colab installs, prints)."""
    known = set() if known is None else known
    try:
        from IPython.core.inputtransformer2 import TransformerManager

        tree = ast.parse(TransformerManager().transform_cell(source))
    except Exception:  # noqa: BLE001 - not Python: nothing of it is given code to build
        return ""
    kept, bound = [], set(dir(builtins)) | set(known)
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.ClassDef)):
            kept.append(node)
            bound |= names_of(ast.unparse(node))[0]
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            reads = {n.id for n in ast.walk(node.value) if isinstance(n, ast.Name)}
            if all(isinstance(t, ast.Name) for t in targets) and _static(node.value):
                if reads <= bound:  # a constant of what is given (not of data loaded above)
                    kept.append(node)
                    bound |= {t.id for t in targets}
    known.update(bound - set(dir(builtins)))
    return "".join(ast.unparse(node) + "\n" for node in kept)


def answer_names(source: str) -> list[str]:
    """The names an answer cell defines at its top level (classes, functions, assignments)."""
    try:
        tree = ast.parse(without_markers(source))
    except SyntaxError:
        return []
    found = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.append(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            found += [t.id for t in targets if isinstance(t, ast.Name)]
    return found


def spec_of(nb: NotebookNode, name: str) -> Spec:
    """The spec of the solution notebook ``nb`` (named ``name``)."""
    tests: dict[str, Test] = {}
    judges: list[JudgeCell] = []
    skip: list[str] = []
    given: list[str] = []
    defined: set[str] = set()  # the names the given definitions so far bind
    answers: list[str] = []
    current: str | None = None
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "code" and SKIP_TAG in tags(cell) and normalised(cell.source):
            skip.append(normalised(cell.source))
        if is_given_code(cell):
            given.append(given_definitions(cell.source, defined))
        elif cell.cell_type == "code" and is_solution(cell):
            answers += answer_names(cell.source)
        if is_test(cell):
            current = grade_id(cell)
            tests[current] = Test(current, points(cell), graded_source(cell))
        elif is_judge(cell):
            judges.append(JudgeCell(current, cell.source, i))
    graded = tuple(
        GradedCell(grade_id(c), points(c), c.cell_type == "code")
        for c in nb.cells
        if is_grade(c) and grade_id(c)
    )
    course = "".join(given)
    answers_found = tuple(dict.fromkeys(answers))
    skip_found = tuple(dict.fromkeys(skip))
    return Spec(name, tests, tuple(judges), skip_found, graded, course, answers_found)


# --- verdicts ------------------------------------------------------------------------------


@dataclass
class TestVerdict:
    """The verdict on one test cell: its checks' results and the score they add up to."""

    grade_id: str
    points: float
    checks: list[dict] = field(default_factory=list)  # Result fields, in order
    error: str | None = None  # what stopped the test cell, if anything

    @property
    def score(self) -> float:
        total = sum(c["points"] for c in self.checks if c["passed"])
        return round(min(total, self.points), 6)

    def lost(self) -> list[dict]:
        return [c for c in self.checks if not c["passed"]]


def verdicts_to_json(verdicts: dict[str, TestVerdict]) -> dict:
    return {gid: {**asdict(v), "score": v.score} for gid, v in verdicts.items()}


def verdicts_from_json(data: dict) -> dict[str, TestVerdict]:
    return {
        gid: TestVerdict(v["grade_id"], v["points"], v["checks"], v.get("error"))
        for gid, v in data.items()
    }


def verdict_text(verdict: TestVerdict) -> str:
    """What a graded test cell shows: its score, then each behaviour, passed or lost, and why."""
    lines = [f"Autograder: {verdict.score:g} / {verdict.points:g} points"]
    for item in verdict.checks:
        mark = "passed" if item["passed"] else "LOST  "
        lines.append(f"  {mark} {item['points']:g}  {item['description']}")
        if not item["passed"] and item["message"]:
            lines.append(f"           {item['message']}")
    return "\n".join(lines) + "\n"


def annotate(nb: NotebookNode, verdicts: dict[str, TestVerdict]) -> None:
    """Each test cell of the graded notebook ``nb`` shows its verdict, in place (what the
    feedback and the formgrader display)."""
    for cell in nb.cells:
        verdict = verdicts.get(grade_id(cell)) if is_test(cell) else None
        if verdict is None:
            continue
        kept = list(cell.get("outputs", []))
        text = verdict_text(verdict)
        kept.append(nbformat.v4.new_output("stream", name="stdout", text=text))
        cell.outputs = kept


# --- specs on disk ------------------------------------------------------------------------


def spec_path(specs: Path, name: str) -> Path:
    return specs / f"{name}.json"


def read_specs(specs: Path, names: list[str]) -> dict[str, Spec]:
    """The specs of ``names`` in the folder ``specs`` (a grading directory's ``judges/``,
    written by ``nbgrader_dir.prepare_source``): notebook -> its spec."""
    return {n: Spec.from_json(spec_path(specs, n).read_text()) for n in names}
