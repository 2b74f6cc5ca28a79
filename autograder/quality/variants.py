"""Grading variants of a solution: how many points a changed answer gets, and for which behaviours.

A *variant* is a solution notebook with some answers changed: a known-wrong implementation (a
mutant: the scaling left out, the softmax over the wrong axis) or another correct one (einsum
instead of ``bmm``). :func:`grade_variants` grades each as the grader grades a student who
handed it in, without nbgrader or a gradebook: the answers are put into the notebook, its
tests take their graded form (the docstring), it runs in quick mode in a fresh kernel
(a child process, like the release checks), and the judge decides every check, asking that
kernel for the student's objects before it stops. The tests of
the course (``tests/grader/quality/test_variants.py``) use it to show that correct variants keep
full marks and every mutant loses points, behaviour by behaviour.

Cells run exactly as grading runs them: the cells tagged ``skip_in_grading`` are left out
when no later cell reads what they bind (``spec.Spec.skipped_cells``, in ``runjudge.py``), so
the variant sets also prove that leaving them out changes no verdict. ``skip_plain=True``
leaves out every plain code cell as well (quicker, for experiments only).

:func:`grade_variants_shared` grades a whole set in one kernel (``sharedkernel.py``: the cells
above the first changed answer run once, each variant from a snapshot), about ten times
quicker, and grades again in a fresh kernel, as above, every variant whose result would be a
surprise (a correct one short of full marks, a wrong one at full marks, a run that failed) and
every one when the solution itself loses points in the shared kernel: what it reports as a
failure is always the exact pipeline's result.
"""

from __future__ import annotations

import os
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from nbformat import NotebookNode

from autograder.course import notebooks
from autograder.course.spec import (
    Spec,
    TestVerdict,
    grade_id,
    is_solution,
    is_test,
    meta,
    spec_of,
    verdicts_from_json,
    without_instructor_cells,
    without_markers,
)
from autograder.kernels import sharedkernel
from autograder.kernels.execute import execute_in_child, read_verdicts


@dataclass(frozen=True)
class Variant:
    """Answers changed by text: ``(answer grade id, old text, new text)`` each. An empty
    ``edits`` is the solution itself."""

    name: str
    edits: tuple[tuple[str, str, str], ...] = ()
    correct: bool = False  # another right answer: it must keep full marks
    points: float | None = None  # the exact points it must get, where the set says (a do-nothing
    # answer's: at most 10 % of the notebook's autograded points)
    do_nothing: bool = False  # none of the asked-for computation (a stub of the right shape)


@dataclass
class VariantScore:
    """What a variant scored: per test, the judge's verdict."""

    variant: Variant
    verdicts: dict[str, TestVerdict] = field(default_factory=dict)
    error: str = ""  # why it could not be graded (the run failed)

    @property
    def score(self) -> float:
        return round(sum(v.score for v in self.verdicts.values()), 6)

    def lost(self) -> list[str]:
        """``test: behaviour`` of every check the variant failed."""
        return [
            f"{v.grade_id}: {c['description']}" for v in self.verdicts.values() for c in v.lost()
        ]


def student_notebook(
    solution: NotebookNode, spec: Spec, variant: Variant, skip_plain: bool = False
) -> NotebookNode:
    """What the grader runs for a student who handed in ``solution`` with ``variant``'s
    edits: answers without their markers, tests in their graded form, no instructor cells."""
    nb = without_instructor_cells(solution)
    pending = list(variant.edits)
    for cell in nb.cells:
        gid = grade_id(cell)
        for edit in [e for e in pending if e[0] == gid]:
            if edit[1] not in cell.source:
                raise ValueError(f"variant {variant.name}: {edit[1]!r} is not in answer {gid}")
            cell.source = cell.source.replace(edit[1], edit[2])
            pending.remove(edit)
        if is_solution(cell):
            cell.source = without_markers(cell.source)
        elif is_test(cell):
            cell.source = spec.tests[gid].graded_source
    if pending:
        raise ValueError(f"variant {variant.name}: no answer cell {pending[0][0]}")
    if skip_plain:
        nb.cells = [c for c in nb.cells if c.cell_type != "code" or meta(c)]
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    return nb


def grade_variants(
    solution: NotebookNode,
    name: str,
    variants: list[Variant],
    jobs: int = 2,
    timeout: int = 300,
    skip_plain: bool = False,
) -> list[VariantScore]:
    """Grade every variant of the solution notebook ``solution`` (named ``name``), ``jobs`` at
    a time; return their scores in order."""
    spec = spec_of(solution, name)
    threads = max(1, (os.cpu_count() or 1) // max(jobs, 1))
    with tempfile.TemporaryDirectory(prefix="variants-") as tmp:
        spec_file = Path(tmp) / "spec.json"
        spec_file.write_text(spec.to_json())
        runs = []
        for i, variant in enumerate(variants):
            src, dst = Path(tmp) / f"{i}.ipynb", Path(tmp) / f"{i}.out.ipynb"
            notebooks.write(student_notebook(solution, spec, variant, skip_plain), src)
            runs.append((variant, src, dst))

        def run(item: tuple[Variant, Path, Path]) -> VariantScore:
            variant, src, dst = item
            error = execute_in_child(src, dst, timeout, threads, spec_file)
            if error:
                return VariantScore(variant, error=error)
            return VariantScore(variant, read_verdicts(dst))

        with ThreadPoolExecutor(max_workers=max(jobs, 1)) as pool:
            return list(pool.map(run, runs))


def surprising(score: VariantScore, maximum: float) -> bool:
    """A correct variant short of full marks, a wrong one at full marks, or no result."""
    if score.error:
        return True
    full = score.score >= maximum - 1e-9
    return not full if score.variant.correct else full or not score.lost()


def shared_job(
    solution: NotebookNode, name: str, variants: list[Variant], timeout: int = 300
) -> dict:
    """The job (``sharedkernel.job``) that grades ``variants`` of ``solution`` in one kernel:
    the solution as a student hands it in, and each variant as the cells it changes."""
    spec = spec_of(solution, name)
    base = student_notebook(solution, spec, Variant("solution"))
    versions = []
    for i, variant in enumerate(variants):
        changed = student_notebook(solution, spec, variant)
        sources = {
            j: c.source
            for j, (c, b) in enumerate(zip(changed.cells, base.cells, strict=True))
            if c.source != b.source
        }
        versions.append({"id": str(i), "sources": sources})
    return sharedkernel.job(spec, base, versions, timeout)


def grade_variants_shared(
    solution: NotebookNode, name: str, variants: list[Variant], timeout: int = 300
) -> list[VariantScore]:
    """Grade every variant of ``solution`` in one kernel (``sharedkernel.py``), then grade
    again in fresh kernels (:func:`grade_variants`) the :func:`surprising` ones, those whose
    grading runs other cells above the first changed answer, and every one if the solution
    itself lost points in the shared kernel; return their scores in order."""
    spec = spec_of(solution, name)
    maximum = sum(t.points for t in spec.tests.values())
    job = shared_job(solution, name, variants, timeout)
    result = sharedkernel.run_in_child(job, wall=300 + 10 * timeout * (len(variants) + 2))
    if "failed" in result:
        return grade_variants(solution, name, variants, jobs=1, timeout=timeout)
    baseline = [verdicts_from_json(b["verdicts"]) for b in result["baseline"]]
    clean = all(
        not b["error"] and sum(v.score for v in found.values()) >= maximum - 1e-9
        for b, found in zip(result["baseline"], baseline, strict=True)
    )
    scores = []
    for variant, version, graded in zip(variants, job["versions"], result["results"], strict=True):
        score = VariantScore(variant, verdicts_from_json(graded["verdicts"]), graded["error"])
        exact = not clean or not sharedkernel.same_prefix(job, version)
        scores.append((score, exact or surprising(score, maximum)))
    again = [s.variant for s, redo in scores if redo]
    fresh = iter(grade_variants(solution, name, again, jobs=1, timeout=timeout) if again else [])
    return [next(fresh) if redo else s for s, redo in scores]


def table(scores: list[VariantScore], maximum: float) -> str:
    """A Markdown table: variant, points, behaviours lost."""
    lines = ["| variant | points | behaviours lost |", "|---|---|---|"]
    for s in scores:
        lost = "; ".join(s.lost()) or ("could not run: " + s.error[:80] if s.error else "none")
        lines.append(f"| {s.variant.name} | {s.score:g} / {maximum:g} | {lost} |")
    return "\n".join(lines)
