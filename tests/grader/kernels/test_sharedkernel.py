"""One kernel grading many versions of a notebook (``autograder/kernels/sharedkernel.py``), and the
variant sets' use of it (``variants.grade_variants_shared``), on the tiny course's ``1_sums``:
the shared kernel gives the verdicts fresh kernels give; a version that changes what the
snapshot does not cover (a builtin) can spoil the next one there, and that surprise is graded
again in a fresh kernel, so what a variant set reports is the exact pipeline's verdict.
"""

from __future__ import annotations

import pytest

from autograder.course import notebooks
from autograder.course.spec import spec_of, verdicts_from_json
from autograder.kernels import sharedkernel
from autograder.quality import variants
from helpers import ROOT

SOLUTION = ROOT / "tests" / "fixtures" / "course" / "solutions" / "a3" / "1_sums.ipynb"
ADD, MUL = "return a + b", "product = a * b"
POISON = "import builtins\n    builtins.sum = lambda *args: 0\n    return a - b"
VARIANTS = [
    variants.Variant("solution", correct=True),
    variants.Variant("add subtracts", (("add", ADD, "return a - b"),)),
    variants.Variant("mul adds", (("mul", MUL, "product = a + b"),)),
    variants.Variant("both wrong", (("add", ADD, "return b"), ("mul", MUL, "product = a"))),
    variants.Variant("add through sum", (("add", ADD, "return sum([a, b])"),), correct=True),
]


@pytest.fixture(scope="module")
def solution():
    return notebooks.read(SOLUTION)


def _points(scores: list[variants.VariantScore]) -> dict[str, dict[str, float]]:
    return {s.variant.name: {g: v.score for g, v in s.verdicts.items()} for s in scores}


def test_shared_kernel_gives_the_fresh_kernels_verdicts(solution):
    shared = variants.grade_variants_shared(solution, "1_sums", VARIANTS, timeout=60)
    fresh = variants.grade_variants(solution, "1_sums", VARIANTS, jobs=1, timeout=60)
    assert [s.error for s in shared + fresh] == [""] * 2 * len(VARIANTS)
    assert _points(shared) == _points(fresh)
    assert [s.variant.name for s in shared if s.score == 2] == ["solution", "add through sum"]
    lost = {s.variant.name: s.lost() for s in shared}
    assert lost["mul adds"] == [
        "test_mul: mul(2, 3) is 6",
        "test_mul: mul works for negative numbers",
    ]
    assert all(line.startswith("test_add") for line in lost["add subtracts"])


def test_a_version_that_spoils_the_kernel_is_caught_and_the_surprise_graded_fresh(solution):
    poisoned = variants.Variant("add poisons sum", (("add", ADD, POISON),))
    later = VARIANTS[-1]  # correct, and relies on the builtin sum
    job = variants.shared_job(solution, "1_sums", [poisoned, later], timeout=60)
    assert [v["start"] for v in job["versions"]] == [3, 3]  # from the first changed cell
    result = sharedkernel.run_job(job)
    in_shared = verdicts_from_json(result["results"][1]["verdicts"])
    assert in_shared["test_add"].score == 0  # the builtin stayed spoilt in the shared kernel
    scores = variants.grade_variants_shared(solution, "1_sums", [poisoned, later], timeout=60)
    assert [s.score for s in scores] == [1, 2]  # the surprise, graded again in a fresh kernel


def test_each_version_starts_from_the_snapshot_before_its_first_change(solution):
    spec = spec_of(solution, "1_sums")
    base = variants.student_notebook(solution, spec, variants.Variant("solution"))
    versions = [
        {"id": "mul", "sources": {7: "def mul(a, b):\n    return a + b"}},
        {"id": "add", "sources": {3: "def add(a, b):\n    return a * b"}},
        {"id": "same", "sources": {}},
    ]
    job = sharedkernel.job(spec, base, versions, timeout=60)
    assert [v["start"] for v in job["versions"]] == [7, 3, len(base.cells)]
    result = sharedkernel.run_job(job)
    scores = [
        {g: v["score"] for g, v in r["verdicts"].items()}
        for r in [*result["baseline"], *result["results"]]
    ]
    full, add_lost, mul_lost = (
        {"test_add": 1, "test_mul": 1},
        {"test_add": 0, "test_mul": 1},
        {"test_add": 1, "test_mul": 0},
    )
    assert scores == [full, full, mul_lost, add_lost, full]
