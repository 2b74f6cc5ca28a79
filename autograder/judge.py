"""The judge: every autograded point is decided here, outside the student's kernel.

A graded test of ``solutions/`` has three parts (``solutions/README.md``):

- its *visible checks* (the test cell's public code): students run them, grading does not;
- its *probe* (the test cell's hidden part): the only part of the test that runs when grading,
  in the student's kernel, handing back plain data (:mod:`course_lib.probe`);
- its *judge* (the code cell tagged ``judge`` after it, instructor only): checks, one per
  behaviour with its points (:mod:`course_lib.judging`), run by this module in a process that
  never ran student code, on the probe's data only.

This module

- reads a solution notebook into a :class:`Spec`: the tests with their points and *graded
  form* (the docstring and the probe, what the grader runs in place of the test cell), and
  the judge cells, in order (:func:`spec_of`); and the notebook nbgrader sees, without its
  instructor-only cells (:func:`without_instructor_cells`);
- reads the probes' records out of an executed notebook (:func:`records_of`);
- runs the judge cells and their checks (:func:`judge_notebook`): on those records, and on
  the student's objects in the notebook's kernel while it still runs (:func:`judge_live`,
  through ``remote.KernelSession``), in the process that drives the kernel and never runs
  student code (``gradeexec.GradeExecute`` when grading, ``execute.py`` for the release
  checks and variants), within :data:`JUDGE_SECONDS`.

Cell tags (``cell.metadata.tags``): ``judge`` marks a judge cell; ``instructor`` marks any
other instructor-only cell (a reference answer or result): both are removed from what
nbgrader, the release and students ever see.
"""

from __future__ import annotations

import ast
import builtins
import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from nbformat import NotebookNode

from . import notebooks

if TYPE_CHECKING:  # course_lib imports torch: only the judging process needs it
    from course_lib.judging import Record

PROBE_MIME = "application/vnd.a3.probe+json"  # course_lib.probe.MIME (a test keeps them equal)
JUDGE_TAG = "judge"
INSTRUCTOR_TAG = "instructor"
TIMEOUT_ENAME = "CellTimeoutError"
JUDGE_SECONDS = 300  # every request of one notebook's tests together


class JudgeError(RuntimeError):
    """A judge cell itself failed (a bug of the course, not of the student)."""


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
    copy = notebooks.nbformat.from_dict(nb)
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

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1)

    @classmethod
    def from_json(cls, text: str) -> Spec:
        data = json.loads(text)
        tests = {k: Test(**v) for k, v in data["tests"].items()}
        return cls(data["name"], tests, tuple(JudgeCell(**j) for j in data["judges"]))


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
    """What the grader runs in place of a test cell: its docstring, then its probe (the hidden
    part). The visible checks are for students: they never decide nor block a grade."""
    hidden = notebooks.regions(cell).hidden
    return "\n".join([*docstring_lines(cell.source), *hidden]).strip("\n") + "\n"


def spec_of(nb: NotebookNode, name: str) -> Spec:
    """The spec of the solution notebook ``nb`` (named ``name``)."""
    tests: dict[str, Test] = {}
    judges: list[JudgeCell] = []
    current: str | None = None
    for i, cell in enumerate(nb.cells):
        if notebooks.is_test(cell):
            current = notebooks.grade_id(cell)
            tests[current] = Test(current, notebooks.points(cell), graded_source(cell))
        elif is_judge(cell):
            judges.append(JudgeCell(current, cell.source, i))
    return Spec(name, tests, tuple(judges))


def probe_problems(cell: NotebookNode) -> list[str]:
    """Names a test cell's probe reads but only its visible checks define: the grader does not
    run the visible checks, so such a probe would fail for everyone."""
    parts = notebooks.regions(cell)
    try:
        visible = ast.parse("\n".join(parts.public))
        hidden = ast.parse("\n".join(parts.hidden))
    except SyntaxError as err:
        return [f"does not parse: {err}"]

    def names(tree: ast.AST, ctx: type) -> set[str]:
        found = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ctx)}
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom)):
                if ctx is ast.Store:
                    found |= _bound(node)
        return found

    leaked = names(hidden, ast.Load) & names(visible, ast.Store) - names(hidden, ast.Store)
    return [f"its probe uses {n!r}, which only its visible checks define" for n in sorted(leaked)]


def _bound(node: ast.AST) -> set[str]:
    if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
        return {node.name}
    return {(a.asname or a.name).split(".")[0] for a in node.names}


# --- records of an executed notebook ----------------------------------------------------------


def records_of(nb: NotebookNode) -> dict[str, Record]:
    """The record of every test cell of an executed notebook, by grade id."""
    from course_lib import judging, probe

    records: dict[str, judging.Record] = {}
    for cell in nb.cells:
        if not notebooks.is_test(cell):
            continue
        gid = notebooks.grade_id(cell)
        encoded: dict = {}
        duplicates: set[str] = set()
        error = None
        status = "ran" if cell.get("execution_count") is not None or cell.outputs else "not run"
        for output in cell.get("outputs", []):
            kind = output.get("output_type")
            if kind in ("display_data", "execute_result") and probe.MIME in output.get("data", {}):
                payload = output["data"][probe.MIME]
                key = payload.get("key") if isinstance(payload, dict) else None
                if not isinstance(key, str):
                    continue
                if key in encoded:
                    duplicates.add(key)
                encoded[key] = payload.get("value")
            elif kind == "error":
                ename, evalue = str(output.get("ename", "")), str(output.get("evalue", ""))
                status = "timeout" if ename == TIMEOUT_ENAME else status
                error = f"{ename}: {evalue}"[:500]
        record = judging.record_from(encoded, error)
        record.status, record.duplicates = status, frozenset(duplicates)
        records[gid] = record
    return records


# --- judging ----------------------------------------------------------------------------------


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


def collect_checks(spec: Spec) -> dict[str, list]:
    """Run ``spec``'s judge cells, in order, in one fresh namespace; return the checks they
    register, by test. Raises :class:`JudgeError` when a judge cell fails."""
    from course_lib import judging

    namespace: dict = {"__name__": f"judge_{spec.name}", "__builtins__": builtins}
    collector = judging.Collector()
    with judging.collect(collector):
        for judge in spec.judges:
            collector.test = judge.test
            where = f"<judge cell {judge.cell} of {spec.name}>"
            try:
                exec(compile(judge.source, where, "exec"), namespace)  # noqa: S102 (course code)
            except Exception as err:
                raise JudgeError(f"{where} failed: {type(err).__name__}: {err}") from err
    checks: dict[str, list] = {}
    for item in collector.checks:
        checks.setdefault(item.test, []).append(item)
    return checks


def judge_notebook(
    spec: Spec, nb: NotebookNode, student=None, salt: str = "", checks: dict | None = None
) -> dict[str, TestVerdict]:
    """The verdict on every test of ``spec`` from the executed notebook ``nb`` and, for the
    checks that ask the student's objects, ``student`` (a ``course_lib.judging.Student`` on
    the notebook's live kernel; None: those checks fail as not graded). ``checks``: what
    :func:`collect_checks` made of ``spec`` (made again when None)."""
    from course_lib import judging

    checks = collect_checks(spec) if checks is None else checks
    records = records_of(nb)
    own_words = "\n".join(j.source for j in spec.judges)
    verdicts = {}
    for gid, test in spec.tests.items():
        record = records[gid] if gid in records else judging.Record(status="not run")
        results = judging.evaluate(checks.get(gid, []), record, student, salt, own_words)
        verdicts[gid] = TestVerdict(
            gid, test.points, [asdict(r) for r in results], record.cell_error
        )
    return verdicts


def judge_live(
    spec: Spec,
    nb: NotebookNode,
    info: dict,
    salt: str = "",
    checks: dict | None = None,
    request_seconds: float = 60.0,
) -> tuple[dict, dict]:
    """Judge the executed notebook ``nb`` while its kernel (connection ``info``) still runs:
    the checks ask the kernel through ``remote.KernelSession``, each request within
    ``request_seconds`` (grading: the cell time limit) and all of them within
    :data:`JUDGE_SECONDS`. Returns the verdicts as JSON and what the session saw
    (``requests``, ``answered``, ``broken``, ``seconds``)."""
    from course_lib import judging

    from .remote import KernelSession

    start = time.perf_counter()
    with KernelSession(info, request_seconds, deadline_seconds=JUDGE_SECONDS) as session:
        session.start()
        student = judging.Student(session)
        verdicts = verdicts_to_json(judge_notebook(spec, nb, student, salt, checks))
        session.forget()
        stats = {
            "requests": session.requests,
            "answered": session.answered,
            "broken": session.broken or "",
            "seconds": round(time.perf_counter() - start, 2),
        }
    return verdicts, stats


def spec_problems(spec: Spec, nb: NotebookNode) -> list[str]:
    """Authoring problems of a solution notebook's tests: a test without checks, checks whose
    points do not add up to the test's, a probe that depends on its visible checks."""
    problems = []
    try:
        checks = collect_checks(spec)
    except JudgeError as err:
        return [f"{spec.name}: {err}"]
    for gid, test in spec.tests.items():
        mine = checks.get(gid, [])
        total = round(sum(c.points for c in mine), 6)
        if not mine:
            problems.append(f"{spec.name} {gid}: no judge cell with checks follows this test")
        elif abs(total - test.points) > 1e-6:
            problems.append(
                f"{spec.name} {gid}: its checks are worth {total:g} points, "
                f"the test cell {test.points:g}"
            )
    cells = {notebooks.grade_id(c): c for c in nb.cells if notebooks.is_test(c)}
    for gid, cell in cells.items():
        problems += [f"{spec.name} {gid}: {p}" for p in probe_problems(cell)]
    problems += [f"{spec.name} {p}" for p in probe_clobbers(nb)]
    return problems


def probe_clobbers(nb: NotebookNode) -> list[str]:
    """Names a probe rebinds that a later cell reads as the notebook defined them: when
    grading, the probe runs where the visible checks ran for the student, and the later cell
    (training, a given helper) would read the probe's value instead."""
    problems = []
    owner: dict[str, str | None] = {}  # name -> the test whose probe last bound it (None: not)
    defined: set[str] = set()  # names the notebook's own cells bound
    for cell in nb.cells:
        if cell.cell_type != "code" or is_instructor_only(cell):
            continue
        test = notebooks.grade_id(cell) if notebooks.is_test(cell) else None
        source = "\n".join(notebooks.regions(cell).hidden) if test else cell.source
        try:
            tree = ast.parse(notebooks.without_markers(source))
        except SyntaxError:
            continue
        stores = _top_level_stores(tree)
        if test is None:  # a name the cell binds itself (even locally) is bound before it is read
            names = [n for n in ast.walk(tree) if isinstance(n, ast.Name)]
            local = {n.id for n in names if not isinstance(n.ctx, ast.Load)}
            local |= {a.arg for a in ast.walk(tree) if isinstance(a, ast.arg)}
            loaded = {n.id for n in names} - stores - local
            for name in sorted(loaded):
                if owner.get(name) is not None and name in defined:
                    problems.append(
                        f"{owner[name]}: its probe rebinds {name!r}, which a later cell reads "
                        "(use another name in the probe)"
                    )
                    owner[name] = None
        imported = {n for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))
                    for n in _bound(node)}  # fmt: skip
        for name in stores - (imported if test else set()):  # re-importing a module is harmless
            owner[name] = test
            if test is None:
                defined.add(name)
    return problems


def _top_level_stores(tree: ast.Module) -> set[str]:
    """Names bound at module level (not inside functions or classes)."""
    found: set[str] = set()
    stack: list[ast.AST] = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.add(node.name)
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found |= _bound(node)
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            found.add(node.id)
        if not isinstance(node, ast.Lambda):
            stack.extend(ast.iter_child_nodes(node))
    return found


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


def annotate(path: Path, verdicts: dict[str, TestVerdict]) -> None:
    """Rewrite the graded notebook at ``path``: each test cell loses the probes' raw data and
    shows its verdict instead (what the feedback and the formgrader display)."""
    nb = notebooks.read(path)
    for cell in nb.cells:
        verdict = verdicts.get(notebooks.grade_id(cell)) if notebooks.is_test(cell) else None
        if verdict is None:
            continue
        kept = [o for o in cell.get("outputs", []) if PROBE_MIME not in o.get("data", {})]
        text = verdict_text(verdict)
        kept.append(notebooks.nbformat.v4.new_output("stream", name="stdout", text=text))
        cell.outputs = kept
    notebooks.write(nb, path)


# --- specs on disk ------------------------------------------------------------------------


def spec_path(specs: Path, name: str) -> Path:
    return specs / f"{name}.json"
