"""Test the tests: every known-wrong implementation loses points, and loses them where it is
wrong; every other correct implementation keeps full marks. Each variant of a solution is
graded as the grader grades a student who handed it in (``autograder/variants.py``: graded
forms, the cells grading runs, quick mode, the judge asking the kernel). A set is graded in one
kernel (``variants.grade_variants_shared``); any variant that would fail a test here is graded
again in a fresh kernel of its own, so a failure is always the exact pipeline's verdict.

The variants of each notebook are in ``tests/variant_sets/``; run with ``-s`` to see, per
notebook, the table of points and behaviours lost per variant.
"""

from __future__ import annotations

import importlib

import pytest

from autograder import judge, notebooks, variants
from helpers import ROOT

SETS = sorted(
    p.stem for p in (ROOT / "tests" / "variant_sets").glob("*.py") if p.stem != "__init__"
)


def _set(module: str):
    return importlib.import_module(f"variant_sets.{module}")


@pytest.fixture(scope="module", params=SETS)
def graded(request):
    """Every variant of one notebook, and the solution itself, graded."""
    module = _set(request.param)
    solution = notebooks.read(ROOT / "solutions" / "a3" / f"{module.NOTEBOOK}.ipynb")
    spec = judge.spec_of(solution, module.NOTEBOOK)
    maximum = sum(t.points for t in spec.tests.values())
    scores = variants.grade_variants_shared(
        solution, module.NOTEBOOK, [variants.Variant("solution", correct=True), *module.VARIANTS]
    )
    print(f"\n{module.NOTEBOOK}:\n{variants.table(scores, maximum)}")
    return module.NOTEBOOK, maximum, scores


@pytest.mark.slow
def test_correct_variants_keep_full_marks(graded):
    name, maximum, scores = graded
    for s in scores:
        if s.variant.correct:
            assert not s.error, f"{name} {s.variant.name}: {s.error}"
            assert s.score == pytest.approx(maximum), (name, s.variant.name, s.lost())


@pytest.mark.slow
def test_every_mutant_loses_points_but_not_all(graded):
    name, maximum, scores = graded
    for s in scores:
        if not s.variant.correct:
            assert not s.error, f"{name} {s.variant.name}: {s.error}"
            assert s.score < maximum - 1e-9, f"{name}: {s.variant.name} keeps full marks"
            assert s.lost(), (name, s.variant.name)


def test_every_notebook_of_the_course_has_its_variant_set():
    from autograder import config

    sets = sorted(_set(name).NOTEBOOK for name in SETS)
    assert sets == sorted(config.load(ROOT).notebooks())
