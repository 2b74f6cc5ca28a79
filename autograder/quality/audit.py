"""``make audit``: how strong are the graded tests? Mutation testing of the solutions.

For every answer cell of ``solutions/<a>/*.ipynb`` that graded tests follow, ``mutants.py``
makes wrong variants (mutants: operands swapped, a term dropped, a dimension moved, a
transpose, an activation swapped, a scaling left out, a mask shifted, an earlier variable
returned). Each mutant is graded as the grader grades a student who handed it in: the tests in
their graded form (the docstring), plain cells skipped (``variants.py``), quick mode, a kernel
of its own process, then the judge. The audit reports, per answer cell and per graded test
cell, how many mutants were tried and the share that lose points (*killed*), and lists the
mutants that lose none (*survivors*) as diffs: each is a wrong answer that would get full
marks, or a program equivalent to the solution (``dim=-1`` for ``dim=1`` on a 2-D tensor):
read them. A survivor read and found harmless is accepted in ``autograder/audit-accepted.toml``
(:data:`ACCEPTED_FILE`: notebook, answer cell, the mutant's id or changed line, and the reason):
it then counts as killed by review, is listed apart with its reason, and an entry that matches
no surviving mutant any more is reported as stale. ``[audit] min_killed`` in ``course.toml``
makes the command fail when the tests of an answer cell (and the review) catch a smaller share;
the output ends with one line, ``audit: PASS (...)`` or ``audit: FAIL (...)``.

    python -m autograder audit [--cell GRADE_ID] [--jobs N] [--fresh] [--no-confirm]

The runner (the 15-minute target on 2 cores): each job is one kernel for a batch of mutants
of one answer cell (``sharedkernel.py``): the cells above the answer run once, and each mutant
is graded from a snapshot of that kernel, then the judge asks the kernel for its objects. A
mutant that kills the kernel or runs past ``[audit] cell_timeout`` is scored as the grader
would score it (0 for the tests that did not finish) and the kernel is restarted. State the
snapshot does not cover could leak from one mutant to the next; two guards: the solution runs
first and last in every kernel and must keep full marks, and every survivor is graded again in
a fresh kernel (``variants.grade_variants``, the exact pipeline) before it is reported
(``--no-confirm`` skips that; ``--fresh`` grades every mutant that way: exact, ten times
slower).

Output: the table on stdout, ``autograder/out/audit.md`` (the table and every survivor's diff)
and ``audit.json`` (every mutant and the tests it lost points at).
"""

from __future__ import annotations

import json
import math
import time
import tomllib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from nbformat import NotebookNode

from autograder.course import notebooks
from autograder.course.config import Course
from autograder.course.spec import (
    Spec,
    TestVerdict,
    grade_id,
    spec_of,
    verdicts_from_json,
    without_markers,
)
from autograder.kernels import sharedkernel
from autograder.quality import mutants, variants

BATCH = 30  # mutants per kernel at most
ACCEPTED_FILE = "audit-accepted.toml"  # in autograder/: mutants accepted as harmless
ACCEPTED_KEYS = ("notebook", "cell", "mutant", "reason")
# --- grading mutants in a shared kernel (sharedkernel.py) --------------------------------------


def _base_notebook(solution: NotebookNode, spec: Spec) -> NotebookNode:
    """What the grader runs for the solution (graded forms, plain cells skipped)."""
    return variants.student_notebook(solution, spec, variants.Variant("solution"), True)


def _scored(spec: Spec, graded: dict) -> dict:
    """A shared-kernel result (``{"verdicts", "error"}``) as the audit keeps it: per test, its
    score and the checks lost."""
    verdicts = verdicts_from_json(graded["verdicts"])
    scores, lost = {}, {}
    for gid, test in spec.tests.items():
        verdict = verdicts.get(gid, TestVerdict(gid, test.points))
        scores[gid] = min(verdict.score, test.points)
        lost[gid] = [c["description"] for c in verdict.lost()]
    return {"scores": scores, "lost": lost, "error": graded["error"]}


# --- mutants accepted as harmless -------------------------------------------------------------


@dataclass(frozen=True)
class Accepted:
    """A mutant a TA read and accepted as harmless: one ``[[accepted]]`` entry of
    ``autograder/audit-accepted.toml``."""

    notebook: str
    cell: str  # grade id of the answer cell
    mutant: str  # its id as the audit prints it (``4_bert:bert_mlp:12``), or its changed line
    reason: str

    def matches(self, mutant: mutants.Mutant) -> bool:
        return (self.notebook, self.cell) == (mutant.notebook, mutant.cell) and (
            self.mutant.strip() in (mutant.id, *changed_lines(mutant))
        )

    def __str__(self) -> str:
        return f"{self.notebook}/{self.cell} {self.mutant!r}"


def changed_lines(mutant: mutants.Mutant) -> list[str]:
    """The mutant's new lines, stripped: the ``+`` lines of its diff."""
    diff = mutant.diff(context=0).split("\n")[2:]  # after the --- and +++ header
    return [line[1:].strip() for line in diff if line.startswith("+")]


def load_accepted(path: Path) -> list[Accepted]:
    """The entries of ``path`` (none when there is no file); ValueError names a bad one."""
    if not path.exists():
        return []
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as err:
        raise ValueError(f"{path} is not valid TOML: {err}") from err
    entries = data.pop("accepted", [])
    if data or not isinstance(entries, list):
        raise ValueError(f"{path}: only [[accepted]] entries belong there")
    found = []
    for number, entry in enumerate(entries, start=1):
        if (
            not isinstance(entry, dict)
            or sorted(entry) != sorted(ACCEPTED_KEYS)
            or not all(isinstance(v, str) and v.strip() for v in entry.values())
        ):
            raise ValueError(
                f"{path}: [[accepted]] entry {number} needs exactly {', '.join(ACCEPTED_KEYS)} "
                f"(non-empty strings), got {entry!r}"
            )
        found.append(Accepted(**entry))
    return found


def stale_accepted(
    accepted: list[Accepted], audits: list[AnswerAudit], everything: bool
) -> list[str]:
    """The entries of ``accepted`` that accept nothing now, and why: for an audited answer
    cell, no mutant matches, or its tests catch every mutant that does; when ``everything``
    was audited, also an entry naming no answer cell."""
    audited = {(a.answer.notebook, a.answer.cell): a for a in audits}
    stale = []
    for entry in accepted:
        found = audited.get((entry.notebook, entry.cell))
        if found is None:
            if everything:
                stale.append(f"{entry}: no answer cell {entry.cell} with tests in {entry.notebook}")
            continue
        matched = [o for o in found.graded if entry.matches(o.mutant)]
        if not matched:
            stale.append(f"{entry}: matches no mutant any more")
        elif all(found.killed_by_own(o) for o in matched):
            stale.append(f"{entry}: the tests catch it now")
    return stale


# --- the audit --------------------------------------------------------------------------------


@dataclass
class Outcome:
    """What one mutant scored: per test, its score and the checks it lost."""

    mutant: mutants.Mutant
    scores: dict[str, float] = field(default_factory=dict)
    lost: dict[str, list[str]] = field(default_factory=dict)
    error: str = ""  # how its run ended early, if it did (scored as the grader scores that)
    confirmed: bool | None = None  # a survivor graded again in a fresh kernel: still full marks
    ungraded: str = ""  # the audit itself failed to grade it (counts neither way)

    def killed_at(self, test: str, points: float) -> bool:
        return self.scores.get(test, 0.0) < points - 1e-9

    def to_dict(self, points: dict[str, float]) -> dict:
        return {
            **self.mutant.to_dict(),
            "killed_at": [t for t in self.scores if self.killed_at(t, points[t])],
            "lost": {t: d for t, d in self.lost.items() if d},
            "error": self.error,
            "confirmed": self.confirmed,
            "ungraded": self.ungraded,
        }


@dataclass
class AnswerAudit:
    """The audit of one answer cell: its mutants' outcomes, judged by its tests."""

    answer: mutants.Answer
    points: dict[str, float]  # every test of the notebook -> its points
    outcomes: list[Outcome] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # the runner's own failures
    accepted: dict[str, Accepted] = field(default_factory=dict)  # mutant id -> its entry

    @property
    def graded(self) -> list[Outcome]:
        return [o for o in self.outcomes if not o.ungraded]

    @property
    def reviewed(self) -> list[Outcome]:
        """Mutants its own tests miss that a TA accepted as harmless (killed by review)."""
        return [
            o for o in self.graded if o.mutant.id in self.accepted and not self.killed_by_own(o)
        ]

    def killed(self, test: str) -> int:
        return sum(o.killed_at(test, self.points[test]) for o in self.graded)

    def killed_by_own(self, outcome: Outcome) -> bool:
        return any(outcome.killed_at(t, self.points[t]) for t in self.answer.tests)

    def killed_anywhere(self, outcome: Outcome) -> bool:
        return any(outcome.killed_at(t, p) for t, p in self.points.items())

    @property
    def rate(self) -> float:
        """The share of mutants that lose points at the answer's own tests, or were accepted
        as harmless (killed by review)."""
        graded = self.graded
        killed = sum(self.killed_by_own(o) for o in graded) + len(self.reviewed)
        return killed / len(graded) if graded else 1.0

    @property
    def survivors(self) -> list[Outcome]:
        """Full marks everywhere, and not accepted."""
        return [
            o
            for o in self.graded
            if not self.killed_anywhere(o) and o.mutant.id not in self.accepted
        ]

    @property
    def caught_later(self) -> list[Outcome]:
        """Mutants its own tests miss but a later test catches (and not accepted)."""
        return [
            o
            for o in self.graded
            if not self.killed_by_own(o)
            and self.killed_anywhere(o)
            and o.mutant.id not in self.accepted
        ]


@dataclass
class AuditReport:
    """Everything one ``make audit`` found."""

    answers: list[AnswerAudit]
    seconds: float
    workers: int
    min_killed: float
    cell: str | None = None
    fresh: bool = False
    stale: list[str] = field(default_factory=list)  # accepted entries that accept nothing now

    @property
    def mutants(self) -> int:
        return sum(len(a.outcomes) for a in self.answers)

    @property
    def weak(self) -> list[AnswerAudit]:
        """Answer cells whose tests catch less than ``min_killed`` of their mutants."""
        return [a for a in self.answers if a.rate < self.min_killed - 1e-9]

    @property
    def problems(self) -> list[str]:
        return [p for a in self.answers for p in a.problems]

    @property
    def passed(self) -> bool:
        return not self.weak and not self.problems

    def verdict(self) -> str:
        """The last line: ``audit: PASS (...)`` or ``audit: FAIL (...)``."""
        word = "PASS" if self.passed else "FAIL"
        if not self.answers:
            return f"audit: {word} (no answer cell with graded tests)"
        low = min(self.answers, key=lambda a: a.rate)
        sign = ">=" if low not in self.weak else "<"
        why = (
            f"lowest killed share {low.rate:.2f} in {low.answer.notebook}/{low.answer.cell} "
            f"{sign} {self.min_killed:.2f}"
        )
        if self.problems:
            why += f"; {len(self.problems)} problem(s) above"
        return f"audit: {word} ({why})"


def _batches(items: list, workers: int) -> list[list]:
    """``items`` cut into batches of at most ``BATCH``, at least ``workers`` when there are."""
    if not items:
        return []
    count = max(math.ceil(len(items) / BATCH), min(workers, len(items)))
    size = math.ceil(len(items) / count)
    return [items[i : i + size] for i in range(0, len(items), size)]


def _select(course: Course, cell: str | None) -> list[tuple[NotebookNode, Spec, mutants.Answer]]:
    """The answer cells to audit: every one that tests follow, or the one ``cell`` names (an
    answer cell, or a test cell: the answer it follows)."""
    from autograder.course.nbgrader_dir import stamped_solution

    chosen = []
    for name in course.notebooks():
        solution = stamped_solution(course, name)
        spec = spec_of(solution, name)
        for answer in mutants.answers(solution, name):
            if cell is None or cell == answer.cell or cell in answer.tests:
                chosen.append((solution, spec, answer))
    if cell is not None and not chosen:
        raise ValueError(f"no answer cell or graded test cell {cell!r} in {course.solutions_dir}")
    return chosen


def _plan(
    course: Course, cell: str | None, workers: int, fresh: bool, accepted: list[Accepted]
) -> tuple[list[AnswerAudit], list[tuple[AnswerAudit, dict]]]:
    """The audit of each answer cell chosen (its mutants, those accepted), and the shared-kernel
    jobs that grade them: batches of one answer cell's mutants (none when ``fresh``)."""
    audits: list[AnswerAudit] = []
    work: list[tuple[AnswerAudit, dict]] = []
    for solution, spec, answer in _select(course, cell):
        found = mutants.mutants_of_cell(answer.source, answer.notebook, answer.cell)
        points = {gid: t.points for gid, t in spec.tests.items()}
        entry = AnswerAudit(answer, points, [Outcome(m) for m in found])
        for m in found:
            match = next((a for a in accepted if a.matches(m)), None)
            if match is not None:
                entry.accepted[m.id] = match
        audits.append(entry)
        if fresh or not found:
            continue
        base = _base_notebook(solution, spec)
        at = next(i for i, c in enumerate(base.cells) if grade_id(c) == answer.cell)
        for batch in _batches(entry.outcomes, workers):
            versions = [
                {"id": o.mutant.id, "sources": {at: without_markers(o.mutant.source)}}
                for o in batch
            ]
            job = sharedkernel.job(spec, base, versions, course.audit.cell_timeout)
            work.append((entry, job))
    return audits, work


def _check_baseline(entry: AnswerAudit, spec: Spec, baseline: list[dict]) -> None:
    """A problem for each time the solution, graded before and after the mutants in the shared
    kernel, lost points."""
    for moment, graded in zip(("before", "after"), baseline, strict=True):
        base = _scored(spec, graded)
        short = [t for t, s in base["scores"].items() if s < entry.points[t] - 1e-9]
        if short or base["error"]:
            entry.problems.append(
                f"{entry.answer.notebook} {entry.answer.cell}: the solution lost points "
                f"at {', '.join(short) or base['error']} {moment} the mutants (shared kernel)"
            )


def _grade_batch(entry: AnswerAudit, job: dict, timeout: float) -> None:
    """Grade one job's mutants in a shared kernel (a child process), into their outcomes."""
    wall = 120 + len(job["versions"]) * 10 * timeout
    spec = Spec.from_json(job["spec"])
    result = sharedkernel.run_in_child(job, wall)
    by_id = {o.mutant.id: o for o in entry.outcomes}
    if "failed" in result:
        entry.problems.append(f"{entry.answer.notebook} {entry.answer.cell}: {result['failed']}")
        for m in job["versions"]:
            by_id[m["id"]].ungraded = result["failed"][:200]
        return
    _check_baseline(entry, spec, result["baseline"])
    for graded in result["results"]:
        item_result = _scored(spec, graded)
        outcome = by_id[graded["id"]]
        outcome.scores, outcome.lost = item_result["scores"], item_result["lost"]
        outcome.error = item_result["error"]


def _in_fresh_kernels(
    course: Course, audits: list[AnswerAudit], workers: int, fresh: bool, confirm: bool
) -> None:
    """Every mutant graded in a fresh kernel (``fresh``), or (``confirm``) every survivor graded
    again there, and marked confirmed when it still has full marks."""
    for entry in audits:
        if fresh:
            _grade_fresh(course, entry, entry.outcomes, workers)
            continue
        survivors = entry.survivors if confirm else []
        if survivors:
            _grade_fresh(course, entry, survivors, workers)
            for outcome in survivors:
                outcome.confirmed = not entry.killed_anywhere(outcome)


def audit(
    course: Course,
    cell: str | None = None,
    jobs: int | None = None,
    fresh: bool = False,
    confirm: bool = True,
    log=print,
) -> AuditReport:
    """Grade the mutants of every answer cell (or of ``cell``), ``jobs`` kernels at a time."""
    start = time.perf_counter()
    workers = course.grade.workers(jobs)
    accepted = load_accepted(course.grader_dir / ACCEPTED_FILE)
    audits, work = _plan(course, cell, workers, fresh, accepted)
    log(
        f"audit: {sum(len(a.outcomes) for a in audits)} mutants of {len(audits)} answer "
        f"cell(s), {workers} worker(s)" + (" (fresh kernels)" if fresh else "")
    )
    timeout = course.audit.cell_timeout
    with ThreadPoolExecutor(max_workers=workers) as pool:
        list(pool.map(lambda item: _grade_batch(*item, timeout), work))
    _in_fresh_kernels(course, audits, workers, fresh, confirm)
    seconds = round(time.perf_counter() - start, 1)
    stale = stale_accepted(accepted, audits, everything=cell is None)
    return AuditReport(audits, seconds, workers, course.audit.min_killed, cell, fresh, stale)


def _grade_fresh(course: Course, entry: AnswerAudit, outcomes: list[Outcome], workers: int) -> None:
    """Grade ``outcomes``' mutants each in a fresh kernel (``variants.grade_variants``)."""
    from autograder.course.nbgrader_dir import stamped_solution

    solution = stamped_solution(course, entry.answer.notebook)
    found = [
        variants.Variant(o.mutant.id, ((o.mutant.cell, o.mutant.original, o.mutant.source),))
        for o in outcomes
    ]
    scores = variants.grade_variants(
        solution, entry.answer.notebook, found, jobs=workers, timeout=course.audit.cell_timeout
    )
    for outcome, score in zip(outcomes, scores, strict=True):
        if score.error:
            outcome.ungraded = score.error[:200]
            continue
        outcome.scores = {gid: v.score for gid, v in score.verdicts.items()}
        outcome.lost = {
            gid: [c["description"] for c in v.lost()] for gid, v in score.verdicts.items()
        }


# --- the report -------------------------------------------------------------------------------


def _pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.0f}%" if whole else "-"


def table(report: AuditReport) -> str:
    """Per answer cell and per graded test cell: mutants tried and the share killed."""
    width = max([len(t) + 4 for a in report.answers for t in a.answer.tests] + [34])
    lines = [
        f"{'notebook / answer cell / graded test':{width}} {'mutants':>8} {'killed':>7}"
        f" {'review':>7} {'later':>6} {'survive':>8}"
    ]
    for entry in report.answers:
        n = len(entry.graded)
        killed = sum(entry.killed_by_own(o) for o in entry.graded) + len(entry.reviewed)
        flag = "  < min_killed" if entry in report.weak else ""
        head = f"{entry.answer.notebook} {entry.answer.cell}"
        lines.append(
            f"{head:{width}} {n:>8} {_pct(killed, n):>7} {len(entry.reviewed):>7} "
            f"{len(entry.caught_later):>6} {len(entry.survivors):>8}{flag}"
        )
        for test in entry.answer.tests:
            lines.append(f"{'    ' + test:{width}} {'':>8} {_pct(entry.killed(test), n):>7}")
    return "\n".join(lines)


def summary(report: AuditReport, show: int) -> str:
    """The table, then up to ``show`` survivors per answer cell as diffs, the accepted mutants
    and stale entries, then the verdict (the last line)."""
    parts = [
        f"Mutation audit: {report.mutants} mutants, {report.seconds:.0f} s, {report.workers} "
        f"worker(s){' (fresh kernels)' if report.fresh else ''}"
        + (f", cell {report.cell}" if report.cell else ""),
        table(report),
        "killed: the share of the answer's mutants that lose points at its own tests (per test: "
        "at that test) or that were accepted as harmless; review: how many were accepted "
        f"(autograder/{ACCEPTED_FILE}); later: caught only by a later answer's tests; survive: "
        "full marks everywhere (wrong answers the tests miss, or programs equal to the "
        "solution).",
    ]
    for entry in report.answers:
        survivors = entry.survivors
        if not survivors or not show:
            continue
        parts.append(f"survivors of {entry.answer.notebook} {entry.answer.cell} "
                     f"({len(survivors)}, the first {min(show, len(survivors))}):")  # fmt: skip
        for outcome in survivors[:show]:
            parts.append(f"# {outcome.mutant.id}: {outcome.mutant.description}\n"
                         f"{outcome.mutant.diff()}")  # fmt: skip
    reviewed = [(o, a.accepted[o.mutant.id]) for a in report.answers for o in a.reviewed]
    if reviewed:
        parts.append(
            f"accepted as harmless (autograder/{ACCEPTED_FILE}):\n"
            + "\n".join(f"  {o.mutant.id}: {entry.reason}" for o, entry in reviewed)
        )
    parts += [f"STALE accepted mutant ({ACCEPTED_FILE}): {s}" for s in report.stale]
    parts += [f"PROBLEM: {p}" for p in report.problems]
    if report.weak:
        parts.append(
            "AUDIT FAILED: the tests of "
            + ", ".join(f"{a.answer.cell} ({a.rate:.0%})" for a in report.weak)
            + f" catch less than [audit] min_killed = {report.min_killed:.0%} of their mutants"
        )
    parts.append(report.verdict())
    return "\n\n".join(parts)


def markdown(report: AuditReport) -> str:
    """``audit.md``: the table and every survivor's diff."""
    parts = [
        "# Mutation audit of the graded tests",
        f"{report.mutants} mutants, graded in {report.seconds:.0f} s with {report.workers} "
        f"worker(s){' in fresh kernels' if report.fresh else ''}. Made by `make audit` "
        "(`autograder/quality/audit.py`).",
        "```\n" + table(report) + "\n```",
    ]
    for entry in report.answers:
        parts.append(f"## {entry.answer.notebook} {entry.answer.cell}")
        later = entry.caught_later
        if later:
            parts.append(
                "Caught only by a later answer's tests: "
                + "; ".join(o.mutant.description for o in later)
            )
        survivors = entry.survivors
        if not survivors:
            parts.append("No survivor: every mutant loses points or was accepted.")
        for outcome in survivors:
            checked = "" if outcome.confirmed is None else " (confirmed in a fresh kernel)"
            diff = outcome.mutant.diff()
            parts.append(f"### {outcome.mutant.id}: {outcome.mutant.description}{checked}\n\n"
                         f"```diff\n{diff}\n```")  # fmt: skip
        if entry.reviewed:
            parts.append(f"Accepted as harmless (`autograder/{ACCEPTED_FILE}`), killed by review:")
        for outcome in entry.reviewed:
            reason = entry.accepted[outcome.mutant.id].reason
            parts.append(f"### {outcome.mutant.id}: {outcome.mutant.description} (accepted)\n\n"
                         f"Reason: {reason}\n\n```diff\n{outcome.mutant.diff()}\n```")  # fmt: skip
    if report.stale:
        parts.append(
            f"## Stale entries of `autograder/{ACCEPTED_FILE}`\n\n"
            + "\n".join(f"- {s}" for s in report.stale)
        )
    if report.problems:
        parts.append("## Problems\n\n" + "\n".join(f"- {p}" for p in report.problems))
    parts.append(f"`{report.verdict()}`")
    return "\n\n".join(parts) + "\n"


def to_json(report: AuditReport) -> dict:
    return {
        "seconds": report.seconds,
        "workers": report.workers,
        "min_killed": report.min_killed,
        "cell": report.cell,
        "fresh": report.fresh,
        "passed": report.passed,
        "verdict": report.verdict(),
        "stale": report.stale,
        "answers": [
            {
                "notebook": a.answer.notebook,
                "cell": a.answer.cell,
                "tests": {t: {"killed": a.killed(t)} for t in a.answer.tests},
                "mutants": len(a.graded),
                "killed": sum(a.killed_by_own(o) for o in a.graded),
                "rate": round(a.rate, 4),
                "survivors": [o.mutant.id for o in a.survivors],
                "reviewed": {o.mutant.id: a.accepted[o.mutant.id].reason for o in a.reviewed},
                "outcomes": [o.to_dict(a.points) for o in a.outcomes],
                "problems": a.problems,
            }
            for a in report.answers
        ],
    }


def write(report: AuditReport, out: Path) -> None:
    """``out/audit.md`` and ``out/audit.json``."""
    notebooks.write_bytes(out / "audit.md", markdown(report).encode())
    notebooks.write_bytes(out / "audit.json", json.dumps(to_json(report), indent=1).encode())
