"""Test the tests: every known-wrong implementation loses points, and loses them where it is
wrong; every other correct implementation keeps full marks. Each variant of a solution is
graded as the grader grades a student who handed it in (``autograder/quality/variants.py``: graded
forms, the cells grading runs, quick mode, the judge asking the kernel). A set is graded in one
kernel (``variants.grade_variants_shared``); any variant that would fail a test here is graded
again in a fresh kernel of its own, so a failure is always the exact pipeline's verdict.

The variants of each notebook are in ``tests/variant_sets/``; run with ``-s`` to see, per
notebook, the table of points and behaviours lost per variant.
"""

from __future__ import annotations

import importlib

import pytest

from autograder.course import notebooks
from autograder.course.spec import spec_of
from autograder.quality import variants
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
    spec = spec_of(solution, module.NOTEBOOK)
    maximum = sum(t.points for t in spec.tests.values())
    scores = variants.grade_variants_shared(
        solution, module.NOTEBOOK, [variants.Variant("solution", correct=True), *module.VARIANTS]
    )
    print(f"\n{module.NOTEBOOK}:\n{variants.table(scores, maximum)}")
    return module.NOTEBOOK, maximum, scores


@pytest.mark.slow
@pytest.mark.long
def test_correct_variants_keep_full_marks(graded):
    name, maximum, scores = graded
    for s in scores:
        if s.variant.correct:
            assert not s.error, f"{name} {s.variant.name}: {s.error}"
            assert s.score == pytest.approx(maximum), (name, s.variant.name, s.lost())


@pytest.mark.slow
@pytest.mark.long
def test_every_mutant_loses_points_but_not_all(graded):
    name, maximum, scores = graded
    for s in scores:
        if not s.variant.correct:
            assert not s.error, f"{name} {s.variant.name}: {s.error}"
            assert s.score < maximum - 1e-9, f"{name}: {s.variant.name} keeps full marks"
            assert s.lost(), (name, s.variant.name)


@pytest.mark.slow
@pytest.mark.long
def test_variants_with_known_points_get_exactly_them(graded):
    """A do-nothing answer keeps only what its set says (at most 10 % of the notebook), and a
    stub whose notebook rebinds the given names the judges use gets what the stub alone gets."""
    name, maximum, scores = graded
    for s in scores:
        if s.variant.points is not None:
            assert s.score == pytest.approx(s.variant.points, abs=1e-6), (
                name,
                s.variant.name,
                s.score,
                s.lost(),
            )


@pytest.mark.parametrize("module", SETS)
def test_a_do_nothing_answer_is_worth_at_most_a_tenth(module):
    """Every set has a do-nothing answer, whose known points are at most 10 % of the
    notebook's autograded points."""
    found = _set(module)
    spec = spec_of(
        notebooks.read(ROOT / "solutions" / "a3" / f"{found.NOTEBOOK}.ipynb"), found.NOTEBOOK
    )
    stubs = [v for v in found.VARIANTS if v.do_nothing]
    assert stubs, f"{found.NOTEBOOK}: no do-nothing answer in its variant set"
    for v in stubs:
        assert v.points is not None and v.points <= 0.1 * spec.autograded_max + 1e-9, v.name


def test_every_notebook_of_the_course_has_its_variant_set():
    from autograder.course import config

    sets = sorted(_set(name).NOTEBOOK for name in SETS)
    assert sets == sorted(config.load(ROOT).notebooks())
